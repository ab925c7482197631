package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProbeAsksAsTheKubeletDoes: the helm test probe passes when every URL answers 2xx, over
// TLS too, with the kubelet's User-Agent (to which the webhook answers), and names a URL that
// does not.
func TestProbeAsksAsTheKubeletDoes(t *testing.T) {
	kubeletOnly := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.UserAgent(), "kube-probe/") {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer kubeletOnly.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	if err := probe(context.Background(), kubeletOnly.URL+"/", time.Second); err != nil {
		t.Errorf("probe of a webhook-like server: %v", err)
	}
	err := probe(context.Background(), kubeletOnly.URL+"/,"+down.URL+"/metrics", time.Second)
	if err == nil || !strings.Contains(err.Error(), down.URL) || strings.Contains(err.Error(), kubeletOnly.URL) {
		t.Errorf("probe = %v, want an error naming only %s", err, down.URL)
	}
}
