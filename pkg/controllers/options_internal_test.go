package controllers

import (
	"testing"
	"time"
)

// The Prometheus budget flags reach the client.
func TestPrometheusOptionsCarryTheBudget(t *testing.T) {
	got := prometheusOptions(Options{PrometheusURI: "http://p", PrometheusTimeout: 7 * time.Second, PrometheusMaxResponseBytes: 4096})
	if got.URI != "http://p" || got.Timeout != 7*time.Second || got.MaxResponseBytes != 4096 {
		t.Errorf("client options = %+v, want the URI, a 7s timeout and a 4096-byte cap", got)
	}
}
