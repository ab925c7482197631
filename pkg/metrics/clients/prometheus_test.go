package clients

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// answer serves a fixed Prometheus API response to every query.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/api/v1/query") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	}
}

func success(resultType, result string) string {
	return fmt.Sprintf(`{"status":"success","data":{"resultType":%q,"result":%s}}`, resultType, result)
}

func newClient(t *testing.T, options PrometheusOptions) *Prometheus {
	t.Helper()
	p, err := NewPrometheus(context.Background(), options)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestQueryResultShapes(t *testing.T) {
	// released lets a handler that never answers return before its server closes.
	released := make(chan struct{})
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		want      float64
		wantError string
	}{
		{name: "scalar", handler: answer(200, success("scalar", `[1700000000.1,"42.5"]`)), want: 42.5},
		{name: "one sample", handler: answer(200, success("vector", `[{"metric":{"job":"a"},"value":[1700000000,"7"]}]`)), want: 7},
		{name: "zero is a value", handler: answer(200, success("vector", `[{"metric":{},"value":[1700000000,"0"]}]`)), want: 0},
		{name: "negative is a value", handler: answer(200, success("scalar", `[1700000000,"-3"]`)), want: -3},
		{name: "empty vector", handler: answer(200, success("vector", `[]`)), wantError: "no samples"},
		{name: "several series", handler: answer(200, success("vector",
			`[{"metric":{"job":"a"},"value":[1700000000,"1"]},{"metric":{"job":"b"},"value":[1700000000,"2"]}]`)),
			wantError: `2 series ({job="a"}, {job="b"}), want exactly one`},
		{name: "many series", handler: answer(200, success("vector",
			`[{"metric":{"job":"a"},"value":[1,"1"]},{"metric":{"job":"b"},"value":[1,"2"]},{"metric":{"job":"c"},"value":[1,"3"]},`+
				`{"metric":{"job":"d"},"value":[1,"4"]},{"metric":{"job":"e"},"value":[1,"5"]}]`)),
			wantError: `5 series ({job="a"}, {job="b"}, {job="c"}, and 2 more), want exactly one`},
		{name: "series with long labels", handler: answer(200, success("vector",
			`[{"metric":{"l":"`+strings.Repeat("é", 300)+`"},"value":[1,"1"]},{"metric":{"job":"b"},"value":[1,"2"]}]`)),
			wantError: `2 series ({l="` + strings.Repeat("é", 98) + `…, {job="b"}), want exactly one`},
		{name: "NaN sample", handler: answer(200, success("vector", `[{"metric":{},"value":[1700000000,"NaN"]}]`)), wantError: "NaN"},
		{name: "NaN scalar", handler: answer(200, success("scalar", `[1700000000,"NaN"]`)), wantError: "NaN"},
		{name: "+Inf", handler: answer(200, success("vector", `[{"metric":{},"value":[1700000000,"+Inf"]}]`)), wantError: "+Inf"},
		{name: "-Inf", handler: answer(200, success("scalar", `[1700000000,"-Inf"]`)), wantError: "-Inf"},
		{name: "range vector", handler: answer(200, success("matrix", `[{"metric":{},"values":[[1700000000,"1"]]}]`)), wantError: "matrix"},
		{name: "string", handler: answer(200, success("string", `[1700000000,"hello"]`)), wantError: "string"},
		{name: "bad query", handler: answer(400, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`), wantError: "parse error"},
		{name: "server error", handler: answer(503, `{"status":"error","errorType":"unavailable","error":"too many queries"}`), wantError: "server error: 503"},
		{name: "not a Prometheus", handler: answer(200, `<html>hello</html>`), wantError: "query failed"},
		{name: "timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-released:
			}
		}, wantError: "timed out after 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := httptest.NewServer(tc.handler)
			defer server.Close()
			defer func() {
				if tc.name == "timeout" {
					close(released)
				}
			}()
			// Only the timeout case needs a short timeout; the others must not hit it on a busy machine.
			timeout := 10 * time.Second
			if tc.name == "timeout" {
				timeout = 200 * time.Millisecond
			}
			got, err := newClient(t, PrometheusOptions{URI: server.URL, Timeout: timeout}).Query(context.Background(), "up")
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error = %v, want one containing %q (value %v)", err, tc.wantError, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Query = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestQueryUnreachable(t *testing.T) {
	server := httptest.NewServer(answer(200, success("scalar", `[1,"1"]`)))
	uri := server.URL
	server.Close()
	if _, err := newClient(t, PrometheusOptions{URI: uri, Timeout: time.Second}).Query(context.Background(), "up"); err == nil ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error = %v, want connection refused", err)
	}
}

func TestQuerySendsTheQuery(t *testing.T) {
	var got string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = r.Form.Get("query")
		answer(200, success("scalar", `[1,"1"]`))(w, r)
	}))
	defer server.Close()
	query := `sum(rate(http_requests_total{job="api"}[1m]))`
	if _, err := newClient(t, PrometheusOptions{URI: server.URL}).Query(context.Background(), query); err != nil {
		t.Fatal(err)
	}
	if got != query {
		t.Errorf("server got query %q, want %q", got, query)
	}
}

func TestBearerTokenFileIsReadOnEveryRequest(t *testing.T) {
	auth := &authorizations{}
	server := httptest.NewServer(auth.record(answer(200, success("scalar", `[1,"1"]`))))
	defer server.Close()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, PrometheusOptions{URI: server.URL, BearerTokenFile: file})
	if _, err := p.Query(context.Background(), "up"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query(context.Background(), "up"); err != nil {
		t.Fatal(err)
	}
	if seen := auth.headers(); len(seen) != 2 || seen[0] != "Bearer first" || seen[1] != "Bearer rotated" {
		t.Errorf("Authorization headers = %q, want the first then the rotated token", seen)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query(context.Background(), "up"); err == nil || !strings.Contains(err.Error(), "bearer token file") {
		t.Errorf("error = %v, want one about the missing token file", err)
	}
}

func TestTLS(t *testing.T) {
	server := httptest.NewTLSServer(answer(200, success("scalar", `[1,"3"]`)))
	defer server.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	if _, err := newClient(t, PrometheusOptions{URI: server.URL}).Query(context.Background(), "up"); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("with the system roots, error = %v, want a certificate error", err)
	}
	if v, err := newClient(t, PrometheusOptions{URI: server.URL, CAFile: caFile}).Query(context.Background(), "up"); err != nil || v != 3 {
		t.Errorf("with the CA file, Query = %v, %v", v, err)
	}
	if v, err := newClient(t, PrometheusOptions{URI: server.URL, InsecureSkipVerify: true}).Query(context.Background(), "up"); err != nil || v != 3 {
		t.Errorf("with insecure-skip-verify, Query = %v, %v", v, err)
	}
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		options PrometheusOptions
		want    string
	}{
		{name: "no URI", options: PrometheusOptions{}, want: "URI is empty"},
		{name: "missing CA file", options: PrometheusOptions{URI: "http://x", CAFile: filepath.Join(dir, "missing")}, want: "reading the Prometheus CA file"},
		{name: "CA file without PEM", options: PrometheusOptions{URI: "http://x", CAFile: notPEM}, want: "no PEM certificate"},
		{name: "negative response cap", options: PrometheusOptions{URI: "http://x", MaxResponseBytes: -1}, want: "must be positive"},
		{name: "token and SigV4", options: PrometheusOptions{URI: "http://x", BearerTokenFile: "t", SigV4: &SigV4Options{Region: "us-west-2"}}, want: "choose one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewPrometheus(context.Background(), tc.options); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRedirectsStayWithTheConfiguredServer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sigV4 := &SigV4Options{Region: testRegion, Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, testToken)}
	for _, tc := range []struct {
		name    string
		options PrometheusOptions
	}{
		{name: "bearer token", options: PrometheusOptions{BearerTokenFile: file}},
		{name: "SigV4", options: PrometheusOptions{SigV4: sigV4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elsewhereAuth := &authorizations{}
			other := httptest.NewServer(elsewhereAuth.record(answer(200, success("scalar", `[1,"1"]`))))
			defer other.Close()
			configuredAuth := &authorizations{}
			configured := httptest.NewServer(configuredAuth.record(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/api/v1/query": // moved within the server: followed, with credentials
					http.Redirect(w, r, "/moved/api/v1/query", http.StatusTemporaryRedirect)
				case "/moved/api/v1/query": // moved to another host: refused
					http.Redirect(w, r, other.URL+"/api/v1/query", http.StatusTemporaryRedirect)
				default:
					http.NotFound(w, r)
				}
			}))
			defer configured.Close()

			options := tc.options
			options.URI = configured.URL
			_, err := newClient(t, options).Query(context.Background(), "up")
			if err == nil || !strings.Contains(err.Error(), "refusing a redirect") || !strings.Contains(err.Error(), other.Listener.Addr().String()) {
				t.Errorf("Query error = %v, want a refused redirect naming %s", err, other.Listener.Addr())
			}
			elsewhere, authorized := elsewhereAuth.headers(), configuredAuth.headers()
			if len(elsewhere) != 0 {
				t.Errorf("the other host received %d requests (Authorization %q), want none", len(elsewhere), elsewhere)
			}
			if len(authorized) != 2 || authorized[0] == "" || authorized[1] == "" {
				t.Errorf("the configured server saw Authorization %q, want it on the request and its same-host redirect", authorized)
			}
		})
	}
}

// authorizations records the Authorization header of every request a test server receives.
type authorizations struct {
	mu   sync.Mutex
	seen []string
}

// record is next, recording each request's Authorization header first.
func (a *authorizations) record(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Header.Get("Authorization"))
		a.mu.Unlock()
		next(w, r)
	}
}

// headers are the headers recorded so far, in the order the requests came.
func (a *authorizations) headers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// endlessBody streams a valid-looking vector answer of total bytes and counts what it wrote.
type endlessBody struct {
	total   int64
	written atomic.Int64
}

func (e *endlessBody) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	prefix := `{"status":"success","data":{"resultType":"vector","result":[`
	series := []byte(`{"metric":{"job":"a-rather-long-job-name-to-fill-the-body"},"value":[1,"1"]},`)
	n, _ := fmt.Fprint(w, prefix)
	e.written.Add(int64(n))
	for e.written.Load() < e.total {
		n, err := w.Write(series)
		e.written.Add(int64(n))
		if err != nil {
			return // the client hung up
		}
	}
}

func TestResponseLargerThanTheCapIsRefusedWithoutReadingIt(t *testing.T) {
	const hundredMB = 100 << 20
	for _, tc := range []struct {
		name          string
		contentLength bool
	}{
		{name: "streamed without a length"},
		{name: "announced by Content-Length", contentLength: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &endlessBody{total: hundredMB}
			handler := http.Handler(body)
			if tc.contentLength {
				handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", fmt.Sprint(hundredMB))
					body.ServeHTTP(w, r)
				})
			}
			server := httptest.NewServer(handler)
			defer server.Close()
			_, err := newClient(t, PrometheusOptions{URI: server.URL, Timeout: time.Minute}).Query(context.Background(), "up")
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", DefaultMaxResponseBytes)) {
				t.Fatalf("error = %v, want the response refused as larger than the cap", err)
			}
			server.CloseClientConnections()
			// The server stops at its first failed write once the client has hung up; what it
			// managed to write is the cap plus what the socket buffers held, far from 100 MB.
			if written := body.written.Load(); written >= hundredMB {
				t.Errorf("the server wrote its whole %d-byte body: the client read it all", written)
			}
		})
	}
}

func TestResponseOfExactlyTheCapIsRead(t *testing.T) {
	answerBody := success("scalar", `[1,"4"]`)
	server := httptest.NewServer(answer(200, answerBody))
	defer server.Close()
	p := newClient(t, PrometheusOptions{URI: server.URL, MaxResponseBytes: int64(len(answerBody))})
	if v, err := p.Query(context.Background(), "up"); err != nil || v != 4 {
		t.Fatalf("Query = %v, %v; want 4", v, err)
	}
	p = newClient(t, PrometheusOptions{URI: server.URL, MaxResponseBytes: int64(len(answerBody)) - 1})
	if _, err := p.Query(context.Background(), "up"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error = %v, want the response one byte over the cap refused", err)
	}
}
