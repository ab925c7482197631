package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// probeUserAgent is the kubelet's: the webhook answers its probes on the TLS port.
const probeUserAgent = "kube-probe/karpenter"

// probe GETs each URL, as `helm test` asks (charts/karpenter/templates/tests), and fails unless
// every one answers 2xx within the timeout. The webhook's certificate is its own CA's, which the
// probe does not hold: it checks that the webhook answers, not whom.
func probe(ctx context.Context, urls string, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // G402: a liveness check of the webhook, whose CA the probe does not hold.
	}}
	var errs []error
	for _, url := range strings.Split(urls, ",") {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSpace(url), nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("probing %s, %w", url, err))
			continue
		}
		request.Header.Set("User-Agent", probeUserAgent)
		response, err := client.Do(request)
		if err != nil {
			errs = append(errs, fmt.Errorf("probing %s, %w", url, err))
			continue
		}
		_ = response.Body.Close()
		if response.StatusCode/100 != 2 {
			errs = append(errs, fmt.Errorf("probing %s: %s", url, response.Status))
			continue
		}
		fmt.Printf("%s answers %s\n", url, response.Status)
	}
	return errors.Join(errs...)
}
