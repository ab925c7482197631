package clients

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// sigV4Service is the signing name of Amazon Managed Service for Prometheus.
const sigV4Service = "aps"

// sigV4RoundTripper signs each request with AWS Signature Version 4.
type sigV4RoundTripper struct {
	region      string
	credentials aws.CredentialsProvider
	signer      *v4.Signer
	now         func() time.Time
	next        http.RoundTripper
}

func newSigV4RoundTripper(ctx context.Context, options SigV4Options, next http.RoundTripper) (*sigV4RoundTripper, error) {
	region, credentials := options.Region, options.Credentials
	if region == "" || credentials == nil {
		var opts []func(*awsconfig.LoadOptions) error
		if region != "" {
			opts = append(opts, awsconfig.WithRegion(region))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("loading the AWS configuration for SigV4, %w", err)
		}
		if region == "" {
			region = cfg.Region
		}
		if credentials == nil {
			credentials = cfg.Credentials
		}
	}
	if region == "" {
		return nil, fmt.Errorf("SigV4 signing needs a region: set it in the options or AWS_REGION")
	}
	if credentials == nil {
		return nil, fmt.Errorf("SigV4 signing found no AWS credentials")
	}
	return &sigV4RoundTripper{region: region, credentials: credentials, signer: v4.NewSigner(), now: time.Now, next: next}, nil
}

func (s *sigV4RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	credentials, err := s.credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieving AWS credentials for SigV4, %w", err)
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body to sign it, %w", err)
		}
	}
	signed := req.Clone(ctx)
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.ContentLength = int64(len(body))
	// A header present with no value is signed but never sent, which would break the
	// signature: the Prometheus client marks requests idempotent that way.
	for name, values := range signed.Header {
		if len(values) == 0 {
			delete(signed.Header, name)
		}
	}
	hash := sha256.Sum256(body)
	if err := s.signer.SignHTTP(ctx, credentials, signed, hex.EncodeToString(hash[:]), sigV4Service, s.region, s.now()); err != nil {
		return nil, fmt.Errorf("signing the request with SigV4, %w", err)
	}
	return s.next.RoundTrip(signed)
}
