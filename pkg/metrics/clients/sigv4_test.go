package clients

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

const (
	testAccessKey = "AKIDEXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testToken     = "session-token"
	testRegion    = "eu-west-1"
)

// verifyingServer plays Amazon Managed Service for Prometheus: it recomputes each request's
// SigV4 signature from what arrived on the wire, with the expected credentials, service and
// region, and rejects the request unless the signatures match.
func verifyingServer(t *testing.T, rejections chan<- string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := verifySignature(r); msg != "" {
			rejections <- msg
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"status":"error","errorType":"forbidden","error":"`+msg+`"}`)
			return
		}
		answer(200, success("scalar", `[1,"11"]`))(w, r)
	}))
}

func verifySignature(r *http.Request) string {
	authorization := r.Header.Get("Authorization")
	if !strings.HasPrefix(authorization, "AWS4-HMAC-SHA256 ") {
		return "missing SigV4 Authorization header"
	}
	if !strings.Contains(authorization, "/"+testRegion+"/aps/aws4_request") {
		return "wrong credential scope: " + authorization
	}
	if r.Header.Get("X-Amz-Security-Token") != testToken {
		return "missing session token"
	}
	signingTime, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "bad X-Amz-Date"
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "unreadable body"
	}
	// Rebuild the request as the client must have signed it: only the signed headers.
	signedHeaders := ""
	for _, part := range strings.Split(strings.TrimPrefix(authorization, "AWS4-HMAC-SHA256 "), ", ") {
		if v, ok := strings.CutPrefix(part, "SignedHeaders="); ok {
			signedHeaders = v
		}
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	replay, err := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	for _, name := range strings.Split(signedHeaders, ";") {
		switch name {
		case "host", "content-length", "x-amz-date", "x-amz-security-token":
		default:
			replay.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	replay.ContentLength = int64(len(body))
	hash := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: testToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, replay, hex.EncodeToString(hash[:]), "aps", testRegion, signingTime); err != nil {
		return err.Error()
	}
	if got, want := authorization, replay.Header.Get("Authorization"); got != want {
		return "signature mismatch: got " + got + " want " + want
	}
	return ""
}

func TestSigV4SignsQueries(t *testing.T) {
	rejections := make(chan string, 10)
	server := verifyingServer(t, rejections)
	defer server.Close()
	p := newClient(t, PrometheusOptions{URI: server.URL + "/workspaces/ws-1234", SigV4: &SigV4Options{
		Region:      testRegion,
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, testToken),
	}})
	// A query with characters that need escaping exercises the canonical body.
	got, err := p.Query(context.Background(), `sum(rate(http_requests_total{job="api", path=~"/a b"}[5m]))`)
	if err != nil {
		t.Fatalf("signed query failed, %v; the server said %q", err, drain(rejections))
	}
	if got != 11 {
		t.Errorf("Query = %v, want 11", got)
	}
}

func TestSigV4WrongSecretIsRejected(t *testing.T) {
	rejections := make(chan string, 10)
	server := verifyingServer(t, rejections)
	defer server.Close()
	p := newClient(t, PrometheusOptions{URI: server.URL, SigV4: &SigV4Options{
		Region:      testRegion,
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, "not-the-secret", testToken),
	}})
	if _, err := p.Query(context.Background(), "up"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("error = %v, want the server's 403", err)
	}
	if msg := <-rejections; !strings.Contains(msg, "signature mismatch") {
		t.Errorf("the server rejected the request for %q, want a signature mismatch", msg)
	}
}

func TestSigV4UsesTheDefaultChain(t *testing.T) {
	rejections := make(chan string, 10)
	server := verifyingServer(t, rejections)
	defer server.Close()
	// The SDK's default chain reads the environment first.
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	t.Setenv("AWS_SESSION_TOKEN", testToken)
	t.Setenv("AWS_REGION", testRegion)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	p := newClient(t, PrometheusOptions{URI: server.URL, SigV4: &SigV4Options{}})
	if got, err := p.Query(context.Background(), "up"); err != nil || got != 11 {
		t.Fatalf("Query = %v, %v; the server said %q", got, err, drain(rejections))
	}
}

func drain(c chan string) []string {
	var out []string
	for {
		select {
		case s := <-c:
			out = append(out, s)
		default:
			return out
		}
	}
}
