// Package clients reads metrics from the systems HorizontalAutoscalers query.
package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultQueryTimeout bounds one instant query when PrometheusOptions.Timeout is zero.
const DefaultQueryTimeout = 5 * time.Second

// PrometheusOptions say how to reach and authenticate to a Prometheus HTTP API.
type PrometheusOptions struct {
	// URI is the base URL of the API, e.g. http://prometheus:9090 or, for Amazon Managed
	// Service for Prometheus, https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>.
	URI string
	// BearerTokenFile is sent as "Authorization: Bearer <contents>"; the file is read for each
	// request so that a rotated token (e.g. a projected service account token) is picked up.
	BearerTokenFile string
	// CAFile is a PEM bundle that verifies the server instead of the system roots.
	CAFile string
	// InsecureSkipVerify disables verification of the server's certificate.
	InsecureSkipVerify bool
	// SigV4 signs every request for Amazon Managed Service for Prometheus when set.
	SigV4 *SigV4Options
	// Timeout bounds each query; DefaultQueryTimeout when zero.
	Timeout time.Duration
}

// SigV4Options configure AWS Signature Version 4 signing with the "aps" service name.
type SigV4Options struct {
	// Region of the workspace. Empty takes the region of the default AWS configuration.
	Region string
	// Credentials override the SDK's default credential chain (environment, shared config,
	// IRSA web identity, instance metadata); mainly for tests.
	Credentials aws.CredentialsProvider
}

// Prometheus runs instant queries against one Prometheus HTTP API.
type Prometheus struct {
	api     promv1.API
	timeout time.Duration
}

// NewPrometheus builds a client; it reads the CA bundle and, for SigV4, the AWS configuration
// now, so that a bad setting fails at start-up rather than on every query.
func NewPrometheus(ctx context.Context, options PrometheusOptions) (*Prometheus, error) {
	if options.URI == "" {
		return nil, errors.New("the Prometheus URI is empty")
	}
	if options.SigV4 != nil && options.BearerTokenFile != "" {
		return nil, errors.New("a bearer token file and SigV4 signing both set the Authorization header: choose one")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: options.InsecureSkipVerify} //nolint:gosec // opt-in, documented
	if options.CAFile != "" {
		pem, err := os.ReadFile(options.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the Prometheus CA file, %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Prometheus CA file %s holds no PEM certificate", options.CAFile)
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	var roundTripper http.RoundTripper = transport
	if options.SigV4 != nil {
		signer, err := newSigV4RoundTripper(ctx, *options.SigV4, roundTripper)
		if err != nil {
			return nil, err
		}
		roundTripper = signer
	}
	if options.BearerTokenFile != "" {
		roundTripper = &bearerTokenRoundTripper{file: options.BearerTokenFile, next: roundTripper}
	}
	origin, err := url.Parse(options.URI)
	if err != nil {
		return nil, fmt.Errorf("parsing the Prometheus URI %s, %w", options.URI, err)
	}
	httpClient := &http.Client{Transport: roundTripper, CheckRedirect: sameOriginRedirects(origin)}
	client, err := api.NewClient(api.Config{Address: options.URI, Client: httpClient})
	if err != nil {
		return nil, fmt.Errorf("creating the Prometheus client for %s, %w", options.URI, err)
	}
	timeout := options.Timeout
	if timeout == 0 {
		timeout = DefaultQueryTimeout
	}
	return &Prometheus{api: promv1.NewAPI(client), timeout: timeout}, nil
}

// Query evaluates an instant query at the server's current time. It returns a value only when
// the result is a scalar or a vector of exactly one sample, and that value is finite; any other
// outcome is an error that explains, in a sentence fit for a status condition, why the metric
// is unavailable.
func (p *Prometheus) Query(ctx context.Context, query string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	result, _, err := p.api.Query(ctx, query, time.Time{}, promv1.WithTimeout(p.timeout))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, fmt.Errorf("query timed out after %s", p.timeout)
		}
		return 0, fmt.Errorf("query failed, %w", err)
	}
	var value model.SampleValue
	switch r := result.(type) {
	case *model.Scalar:
		value = r.Value
	case model.Vector:
		switch len(r) {
		case 0:
			return 0, errors.New("query returned no samples")
		case 1:
			value = r[0].Value
		default:
			return 0, fmt.Errorf("query returned %d series (%s), want exactly one", len(r), seriesNames(r))
		}
	default:
		return 0, fmt.Errorf("query returned a %s, want a scalar or an instant vector", result.Type())
	}
	v := float64(value)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("query returned %v, want a finite number", v)
	}
	return v, nil
}

// seriesNames lists a few series of a vector to help the user narrow the query.
func seriesNames(v model.Vector) string {
	const shown = 3
	var names []string
	for i, s := range v {
		if i == shown {
			names = append(names, "…")
			break
		}
		names = append(names, s.Metric.String())
	}
	return strings.Join(names, ", ")
}

// maxRedirects is net/http's default limit, which a custom CheckRedirect must enforce itself.
const maxRedirects = 10

// sameOriginRedirects follows redirects only within the configured scheme and host. The bearer
// token and the SigV4 signature are added by round trippers to every request, redirected ones
// included, so a redirect elsewhere would hand them to another server.
func sameOriginRedirects(origin *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if req.URL.Scheme != origin.Scheme || req.URL.Host != origin.Host {
			return fmt.Errorf("refusing a redirect from %s://%s to %s://%s: credentials go only to the configured Prometheus; configure the address redirected to",
				origin.Scheme, origin.Host, req.URL.Scheme, req.URL.Host)
		}
		return nil
	}
}

// bearerTokenRoundTripper adds the token in a file to each request.
type bearerTokenRoundTripper struct {
	file string
	next http.RoundTripper
}

func (b *bearerTokenRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := os.ReadFile(b.file)
	if err != nil {
		return nil, fmt.Errorf("reading the bearer token file, %w", err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return b.next.RoundTrip(req)
}
