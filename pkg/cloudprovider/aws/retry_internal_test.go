package aws

import (
	"context"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Retries are adaptive unless the SDK's settings name a mode. The mode shows in no
// request the emulator can count, so this looks at the retryer itself.
func TestRetryModeFromTheSDKSettings(t *testing.T) {
	tests := []struct {
		name, retryMode string // AWS_RETRY_MODE
		wantAdaptive    bool
	}{
		{name: "unset is adaptive", wantAdaptive: true},
		{name: "standard", retryMode: "standard"},
		{name: "adaptive", retryMode: "adaptive", wantAdaptive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
			t.Setenv("AWS_MAX_ATTEMPTS", "")
			t.Setenv("AWS_RETRY_MODE", tt.retryMode)
			p, err := New(context.Background(), Options{Region: "us-west-2"},
				config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
			if err != nil {
				t.Fatal(err)
			}
			retryer := p.cfg.Retryer()
			if _, adaptive := retryer.(*retry.AdaptiveMode); adaptive != tt.wantAdaptive {
				t.Errorf("retryer %T, want adaptive %v", retryer, tt.wantAdaptive)
			}
			if got := retryer.MaxAttempts(); got != retry.DefaultMaxAttempts {
				t.Errorf("MaxAttempts() = %d, want the SDK's default %d", got, retry.DefaultMaxAttempts)
			}
		})
	}
	t.Run("a retryer passed to New is kept", func(t *testing.T) {
		t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
		t.Setenv("AWS_RETRY_MODE", "")
		p, err := New(context.Background(), Options{Region: "us-west-2", MaxAttempts: 7},
			config.WithRetryer(func() sdkaws.Retryer { return sdkaws.NopRetryer{} }),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
		if err != nil {
			t.Fatal(err)
		}
		if _, nop := p.cfg.Retryer().(sdkaws.NopRetryer); !nop {
			t.Errorf("retryer %T, want the caller's", p.cfg.Retryer())
		}
	})
}
