package aws_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// These tests drive the real SDK clients over HTTP against the project's AWS
// emulator; nothing below the provider is mocked.

const (
	pendingDelay     = 30 * time.Second
	terminatingDelay = 20 * time.Second
	eksUpdateDelay   = 10 * time.Second
	maxAttempts      = 3
)

const seedYAML = `
autoScalingGroups:
- name: workers
  minSize: 1
  maxSize: 5
  desiredCapacity: 1
  instanceType: m5.large
  availabilityZones: [us-west-2a, us-west-2b]
eksNodeGroups:
- clusterName: sandbox
  nodegroupName: general
  minSize: 0
  maxSize: 10
  desiredSize: 2
  instanceType: c5.xlarge
sqsQueues:
- name: jobs
  messages: 3
`

type env struct {
	emulator *awsemulator.Emulator
	server   *httptest.Server
	clock    *clocktesting.FakeClock
	provider *aws.Provider
	factory  *cloudprovider.Registry
}

// isolateFromHost keeps the developer's AWS configuration out of the test.
func isolateFromHost(t *testing.T) {
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_AUTO_SCALING", "AWS_ENDPOINT_URL_EKS", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func startEmulator(t *testing.T) (*awsemulator.Emulator, *httptest.Server, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e, srv := awstest.Serve(t, awsemulator.Options{Clock: clk, PendingDelay: pendingDelay, TerminatingDelay: terminatingDelay, EKSUpdateDelay: eksUpdateDelay}, seedYAML)
	return e, srv, clk
}

// newEnv starts an emulator and a provider pointed at it through the SDK's
// base endpoint, with static test credentials.
func newEnv(t *testing.T) *env {
	t.Helper()
	isolateFromHost(t)
	return newEnvIsolated(t)
}

// newEnvIsolated is newEnv for a test whose parent already isolated the
// environment (so that it may run in parallel).
func newEnvIsolated(t *testing.T) *env {
	t.Helper()
	return newEnvWithCallTimeout(t, 0)
}

// newEnvWithCallTimeout is newEnvIsolated with the provider's CallTimeout set; 0 keeps its
// default.
func newEnvWithCallTimeout(t *testing.T, callTimeout time.Duration) *env {
	t.Helper()
	e, srv, clk := startEmulator(t)
	p, err := aws.New(context.Background(),
		aws.Options{Region: "us-west-2", MaxAttempts: maxAttempts, MaxBackoff: 5 * time.Millisecond, Clock: clk, CallTimeout: callTimeout},
		config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	r := cloudprovider.NewRegistry()
	p.Register(r)
	return &env{emulator: e, server: srv, clock: clk, provider: p, factory: r}
}

func (e *env) nodeGroup(t *testing.T, typ, id string) cloudprovider.NodeGroup {
	t.Helper()
	g, err := e.factory.NodeGroupFor(typ, id)
	if err != nil {
		t.Fatalf("NodeGroupFor(%s, %s) = %v", typ, id, err)
	}
	return g
}

func (e *env) queue(t *testing.T, id string) cloudprovider.Queue {
	t.Helper()
	q, err := e.factory.QueueFor(string(v1alpha1.AWSSQSQueueType), id)
	if err != nil {
		t.Fatalf("QueueFor(%s) = %v", id, err)
	}
	return q
}

func TestThrottlingIsRecoveredByRetries(t *testing.T) {
	tests := []struct {
		service, action string
		call            func(*testing.T, *env) error
	}{
		{"autoscaling", "DescribeAutoScalingGroups", func(t *testing.T, e *env) error {
			_, err := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
			return err
		}},
		{"autoscaling", "SetDesiredCapacity", func(t *testing.T, e *env) error {
			return e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").SetDesiredReplicas(context.Background(), 2)
		}},
		{"eks", "DescribeNodegroup", func(t *testing.T, e *env) error {
			_, err := e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").Status(context.Background())
			return err
		}},
		{"eks", "UpdateNodegroupConfig", func(t *testing.T, e *env) error {
			return e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").SetDesiredReplicas(context.Background(), 3)
		}},
		{"sqs", "GetQueueAttributes", func(t *testing.T, e *env) error {
			_, err := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:jobs").Length(context.Background())
			return err
		}},
		{"monitoring", "GetMetricData", func(t *testing.T, e *env) error {
			_, err := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:jobs").OldestMessageAge(context.Background())
			return err
		}},
	}
	// After a throttle, adaptive retries hold requests back for about two
	// seconds of real time; the cases run in parallel so that is paid once.
	isolateFromHost(t)
	for _, tt := range tests {
		t.Run(tt.service+"/"+tt.action, func(t *testing.T) {
			t.Parallel()
			e := newEnvIsolated(t)
			throttles := maxAttempts - 1
			fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: tt.service, Action: tt.action, Kind: awsemulator.FaultThrottle, Times: throttles})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.call(t, e); err != nil {
				t.Fatalf("call failed despite retries: %v", err)
			}
			if hits := e.emulator.FaultHits(fault); hits != throttles {
				t.Errorf("throttled %d times, want %d", hits, throttles)
			}
		})
	}
}

func TestPersistentServerErrorIsWrapped(t *testing.T) {
	e := newEnv(t)
	fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: "autoscaling", Kind: awsemulator.FaultServerError})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
	if err == nil {
		t.Fatal("Status() succeeded against a failing endpoint")
	}
	for _, want := range []string{"autoscaling:DescribeAutoScalingGroups", "auto scaling group workers", "InternalFailure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if hits := e.emulator.FaultHits(fault); hits != maxAttempts {
		t.Errorf("server saw %d attempts, want %d", hits, maxAttempts)
	}
}

func TestAccessDeniedNamesTheMissingAction(t *testing.T) {
	tests := []struct {
		service, action string
		wantAction      string
		call            func(*testing.T, *env) error
	}{
		{"autoscaling", "SetDesiredCapacity", "autoscaling:SetDesiredCapacity", func(t *testing.T, e *env) error {
			return e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").SetDesiredReplicas(context.Background(), 2)
		}},
		{"autoscaling", "DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingGroups", func(t *testing.T, e *env) error {
			_, err := e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").Status(context.Background())
			return err
		}},
		{"eks", "UpdateNodegroupConfig", "eks:UpdateNodegroupConfig", func(t *testing.T, e *env) error {
			return e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").SetDesiredReplicas(context.Background(), 3)
		}},
		{"sqs", "GetQueueUrl", "sqs:GetQueueUrl", func(t *testing.T, e *env) error {
			_, err := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:jobs").Length(context.Background())
			return err
		}},
		{"sqs", "GetQueueAttributes", "sqs:GetQueueAttributes", func(t *testing.T, e *env) error {
			_, err := e.queue(t, "https://sqs.us-west-2.amazonaws.com/123456789012/jobs").Length(context.Background())
			return err
		}},
		{"monitoring", "GetMetricData", "cloudwatch:GetMetricData", func(t *testing.T, e *env) error {
			_, err := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:jobs").OldestMessageAge(context.Background())
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.wantAction, func(t *testing.T) {
			e := newEnv(t)
			fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: tt.service, Action: tt.action, Kind: awsemulator.FaultAccessDenied})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.call(t, e)
			var denied *cloudprovider.AccessDeniedError
			if !errors.As(err, &denied) {
				t.Fatalf("error = %v, want *AccessDeniedError", err)
			}
			if denied.Action != tt.wantAction {
				t.Errorf("Action = %q, want %q", denied.Action, tt.wantAction)
			}
			if hits := e.emulator.FaultHits(fault); hits != 1 {
				t.Errorf("access denied was retried: %d attempts", hits)
			}
		})
	}
}

// The production path takes endpoints from the SDK's own variables.
func TestEndpointOverrideFromEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  func(emulatorURL string) map[string]string
	}{
		{"AWS_ENDPOINT_URL", func(u string) map[string]string {
			return map[string]string{"AWS_ENDPOINT_URL": u}
		}},
		{"service-specific variables win", func(u string) map[string]string {
			return map[string]string{
				"AWS_ENDPOINT_URL":              "http://127.0.0.1:1", // nothing listens there
				"AWS_ENDPOINT_URL_AUTO_SCALING": u,
				"AWS_ENDPOINT_URL_EKS":          u,
				"AWS_ENDPOINT_URL_SQS":          u,
				"AWS_ENDPOINT_URL_CLOUDWATCH":   u,
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateFromHost(t)
			_, srv, clk := startEmulator(t)
			t.Setenv("AWS_REGION", "us-west-2")
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			for k, v := range tt.env(srv.URL) {
				t.Setenv(k, v)
			}
			p, err := aws.New(context.Background(), aws.Options{MaxAttempts: 1, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			r := cloudprovider.NewRegistry()
			p.Register(r)
			e := &env{factory: r}
			ctx := context.Background()
			if _, err := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(ctx); err != nil {
				t.Errorf("auto scaling: %v", err)
			}
			if _, err := e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").Status(ctx); err != nil {
				t.Errorf("eks: %v", err)
			}
			q := e.queue(t, "arn:aws:sqs:us-west-2:123456789012:jobs")
			if _, err := q.Length(ctx); err != nil {
				t.Errorf("sqs: %v", err)
			}
			if _, err := q.OldestMessageAge(ctx); err != nil {
				t.Errorf("cloudwatch: %v", err)
			}
		})
	}
}

func TestRegionIsRequiredForBareIDs(t *testing.T) {
	isolateFromHost(t)
	p, err := aws.New(context.Background(), aws.Options{}, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AutoScalingGroup("workers"); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("AutoScalingGroup(name) without a region = %v, want an error about the region", err)
	}
	if _, err := p.AutoScalingGroup("arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:u:autoScalingGroupName/w"); err != nil {
		t.Errorf("AutoScalingGroup(ARN) without a default region = %v, want the ARN's region used", err)
	}
}

// The SDK's retry settings (AWS_MAX_ATTEMPTS, max_attempts in the profile) are honoured
// unless Options say otherwise; each case counts the attempts the emulator saw.
func TestRetryAttemptsFromTheSDKSettings(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		profile     string // contents of the shared config file
		maxAttempts int    // Options.MaxAttempts
		throttles   int    // 0 throttles every attempt
		wantErr     bool
		wantHits    int
	}{
		{name: "AWS_MAX_ATTEMPTS allows more attempts than the SDK's 3", env: map[string]string{"AWS_MAX_ATTEMPTS": "4"}, throttles: 3, wantHits: 3},
		{name: "AWS_MAX_ATTEMPTS allows fewer", env: map[string]string{"AWS_MAX_ATTEMPTS": "2"}, wantErr: true, wantHits: 2},
		{name: "max_attempts in the profile", profile: "[default]\nmax_attempts = 2\n", wantErr: true, wantHits: 2},
		{name: "AWS_MAX_ATTEMPTS with AWS_RETRY_MODE=standard", env: map[string]string{"AWS_MAX_ATTEMPTS": "4", "AWS_RETRY_MODE": "standard"}, wantErr: true, wantHits: 4},
		{name: "Options win over AWS_MAX_ATTEMPTS", env: map[string]string{"AWS_MAX_ATTEMPTS": "5"}, maxAttempts: 2, wantErr: true, wantHits: 2},
		{name: "the SDK's default without settings", wantErr: true, wantHits: 3},
	}
	// The settings are read once, by aws.New, so the providers are built one environment
	// at a time; the calls then run in parallel to pay adaptive mode's post-throttle
	// delays (real seconds) once.
	isolateFromHost(t)
	envs := make([]*env, len(tests))
	for i, tt := range tests {
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		if tt.profile != "" {
			file := t.TempDir() + "/config"
			if err := os.WriteFile(file, []byte(tt.profile), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_CONFIG_FILE", file)
		}
		emulator, srv, clk := startEmulator(t)
		p, err := aws.New(context.Background(),
			aws.Options{Region: "us-west-2", MaxAttempts: tt.maxAttempts, MaxBackoff: 5 * time.Millisecond, Clock: clk},
			config.WithBaseEndpoint(srv.URL),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		r := cloudprovider.NewRegistry()
		p.Register(r)
		envs[i] = &env{emulator: emulator, factory: r}
		isolateFromHost(t)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := envs[i]
			fault, err := e.emulator.InjectFault(awsemulator.Fault{Service: "autoscaling", Action: "DescribeAutoScalingGroups", Kind: awsemulator.FaultThrottle, Times: tt.throttles})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
			if (err != nil) != tt.wantErr {
				t.Errorf("Status() = %v, want error %v", err, tt.wantErr)
			}
			if hits := e.emulator.FaultHits(fault); hits != tt.wantHits {
				t.Errorf("throttled %d times, want %d", hits, tt.wantHits)
			}
		})
	}
}

func TestHungEndpointIsBoundedByTheCallTimeout(t *testing.T) {
	isolateFromHost(t)
	const callTimeout = 200 * time.Millisecond
	env := newEnvWithCallTimeout(t, callTimeout)
	// The endpoint accepts every request and answers none within the test's lifetime.
	if _, err := env.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultLatency, Latency: awsemulator.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"autoscaling:DescribeAutoScalingGroups", func() error {
			_, err := env.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
			return err
		}},
		{"autoscaling:SetDesiredCapacity", func() error {
			return env.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").SetDesiredReplicas(context.Background(), 2)
		}},
		{"eks:DescribeNodegroup", func() error {
			_, err := env.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general").Status(context.Background())
			return err
		}},
		{"sqs:GetQueueAttributes", func() error {
			_, err := env.queue(t, "https://sqs.us-west-2.amazonaws.com/123456789012/jobs").Length(context.Background())
			return err
		}},
		{"cloudwatch:GetMetricData", func() error {
			_, err := env.queue(t, "https://sqs.us-west-2.amazonaws.com/123456789012/jobs").OldestMessageAge(context.Background())
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), "no answer within the AWS call timeout of 200ms") ||
				!errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error = %v, want the call cut at the call timeout", err)
			}
		})
	}
}

func TestCallerDeadlineIsNotReportedAsTheCallTimeout(t *testing.T) {
	e := newEnv(t)
	if _, err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultLatency, Latency: awsemulator.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(ctx)
	if err == nil || strings.Contains(err.Error(), "AWS call timeout") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the caller's deadline, not the call timeout", err)
	}
}

func TestNegativeCallTimeoutIsRefused(t *testing.T) {
	isolateFromHost(t)
	if _, err := aws.New(context.Background(), aws.Options{Region: "us-west-2", CallTimeout: -time.Second}); err == nil ||
		!strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("error = %v, want a negative call timeout refused", err)
	}
}
