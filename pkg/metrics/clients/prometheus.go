// Package clients reads metrics from the systems HorizontalAutoscalers query.
package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
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

// DefaultMaxResponseBytes caps one query's response body when PrometheusOptions.MaxResponseBytes
// is zero: far above the few hundred bytes of the one-sample answer a HorizontalAutoscaler
// needs, far below what a query selecting every series of a large Prometheus returns.
const DefaultMaxResponseBytes = 1 << 20

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
	// MaxResponseBytes caps the body of each response; DefaultMaxResponseBytes when zero. A
	// larger response fails the query after that many bytes, without reading the rest.
	MaxResponseBytes int64
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
	maxResponseBytes := options.MaxResponseBytes
	if maxResponseBytes == 0 {
		maxResponseBytes = DefaultMaxResponseBytes
	}
	if maxResponseBytes < 0 {
		return nil, fmt.Errorf("the maximum Prometheus response size must be positive, not %d", maxResponseBytes)
	}
	roundTripper = &limitedBodyRoundTripper{limit: maxResponseBytes, next: roundTripper}
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

// Query evaluates an instant query at the server's current time; see QueryAt.
func (p *Prometheus) Query(ctx context.Context, query string) (float64, error) {
	return p.QueryAt(ctx, query, time.Time{})
}

// QueryAt evaluates an instant query at a time, the server's current time when zero. It returns a value only when
// the result is a scalar or a vector of exactly one sample, and that value is finite; any other
// outcome is an error that explains, in a sentence fit for a status condition, why the metric
// is unavailable.
func (p *Prometheus) QueryAt(ctx context.Context, query string, at time.Time) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	result, _, err := p.api.Query(ctx, query, at, promv1.WithTimeout(p.timeout))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, fmt.Errorf("query timed out after %s", p.timeout)
		}
		var tooLarge *responseTooLargeError
		if errors.As(err, &tooLarge) {
			return 0, tooLarge
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

// shownSeries is how many series an error quotes, and shownSeriesBytes how much of each:
// enough to help narrow the query, little enough that a query matching thousands of series,
// or series with long labels, keeps the condition message short.
const (
	shownSeries      = 3
	shownSeriesBytes = 200
)

// seriesNames lists a few series of a vector to help the user narrow the query.
func seriesNames(v model.Vector) string {
	var names []string
	for _, s := range v[:min(len(v), shownSeries)] {
		name := s.Metric.String()
		if len(name) > shownSeriesBytes {
			// A cut inside a multi-byte character would leave invalid UTF-8 in the status.
			name = strings.ToValidUTF8(name[:shownSeriesBytes], "") + "…"
		}
		names = append(names, name)
	}
	if more := len(v) - shownSeries; more > 0 {
		names = append(names, fmt.Sprintf("and %d more", more))
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

// responseTooLargeError is a response body longer than the configured cap.
type responseTooLargeError struct{ limit int64 }

func (e *responseTooLargeError) Error() string {
	return fmt.Sprintf("the response is larger than %d bytes; narrow the query to one series", e.limit)
}

// limitedBodyRoundTripper fails reading a response body past limit bytes, so a query that
// selects too much costs at most limit bytes of memory and transfer, not the whole answer.
type limitedBodyRoundTripper struct {
	limit int64
	next  http.RoundTripper
}

func (l *limitedBodyRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > l.limit {
		_ = resp.Body.Close()
		return nil, &responseTooLargeError{limit: l.limit}
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, remaining: l.limit, limit: l.limit}
	return resp, nil
}

// limitedBody reads at most limit bytes of its body and then fails instead of truncating,
// since a truncated JSON answer could still parse.
type limitedBody struct {
	io.ReadCloser
	remaining int64
	limit     int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.remaining <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var probe [1]byte
		n, err := b.ReadCloser.Read(probe[:])
		if n > 0 {
			return 0, &responseTooLargeError{limit: b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.ReadCloser.Read(p)
	b.remaining -= int64(n)
	return n, err
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
