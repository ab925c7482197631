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

func mustStatus(t *testing.T, g cloudprovider.NodeGroup) cloudprovider.NodeGroupStatus {
	t.Helper()
	st, err := g.Status(context.Background())
	if err != nil {
		t.Fatalf("Status() = %v", err)
	}
	return st
}

func wantStatus(t *testing.T, got cloudprovider.NodeGroupStatus, desired, replicas int32, stable bool, messageContains string) {
	t.Helper()
	if got.DesiredReplicas != desired || got.Replicas != replicas || got.Stable != stable || !strings.Contains(got.Message, messageContains) {
		t.Errorf("status = %+v, want desired %d, replicas %d, stable %v, message containing %q", got, desired, replicas, stable, messageContains)
	}
	if stable && got.Message != "" {
		t.Errorf("stable status has message %q", got.Message)
	}
}

func TestAutoScalingGroupScalesOutAndIn(t *testing.T) {
	for _, id := range []string{
		"workers",
		"arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:0b6e4a43-0000-4000-8000-000000000000:autoScalingGroupName/workers",
	} {
		t.Run(id, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			g := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), id)

			st := mustStatus(t, g)
			wantStatus(t, st, 1, 1, true, "")
			if st.MinReplicas != 1 || st.MaxReplicas != 5 {
				t.Errorf("bounds = [%d, %d], want [1, 5]", st.MinReplicas, st.MaxReplicas)
			}

			if err := g.SetDesiredReplicas(ctx, 4); err != nil {
				t.Fatalf("SetDesiredReplicas(4) = %v", err)
			}
			wantStatus(t, mustStatus(t, g), 4, 1, false, "3 pending")
			e.clock.Step(pendingDelay - time.Second)
			wantStatus(t, mustStatus(t, g), 4, 1, false, "3 pending")
			e.clock.Step(time.Second)
			wantStatus(t, mustStatus(t, g), 4, 4, true, "")

			if err := g.SetDesiredReplicas(ctx, 2); err != nil {
				t.Fatalf("SetDesiredReplicas(2) = %v", err)
			}
			wantStatus(t, mustStatus(t, g), 2, 2, false, "2 terminating")
			e.clock.Step(terminatingDelay)
			wantStatus(t, mustStatus(t, g), 2, 2, true, "")
			if n := len(e.emulator.Instances("workers")); n != 2 {
				t.Errorf("emulator has %d instances, want 2", n)
			}
		})
	}
}

func TestAutoScalingGroupChangedOutOfBandIsObserved(t *testing.T) {
	e := newEnv(t)
	g := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers")
	// Someone else (a console user, another tool) resizes the group.
	other := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers")
	if err := other.SetDesiredReplicas(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(pendingDelay)
	wantStatus(t, mustStatus(t, g), 3, 3, true, "")
}

func TestDesiredOutsideBoundsIsNotForced(t *testing.T) {
	tests := []struct {
		typ, id            string
		requested          int32
		wantMin, wantMax   int32
		wantDesiredAfter   int32
		wantResourceInText string
	}{
		{string(v1alpha1.AWSEC2AutoScalingGroup), "workers", 6, 1, 5, 1, "auto scaling group workers"},
		{string(v1alpha1.AWSEC2AutoScalingGroup), "workers", 0, 1, 5, 1, "auto scaling group workers"},
		{string(v1alpha1.AWSEKSNodeGroup), "sandbox/general", 11, 0, 10, 2, "eks node group sandbox/general"},
		{string(v1alpha1.AWSEKSNodeGroup), "sandbox/general", -1, 0, 10, 2, "eks node group sandbox/general"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.id, func(t *testing.T) {
			e := newEnv(t)
			g := e.nodeGroup(t, tt.typ, tt.id)
			err := g.SetDesiredReplicas(context.Background(), tt.requested)
			var oob *cloudprovider.OutOfBoundsError
			if !errors.As(err, &oob) {
				t.Fatalf("SetDesiredReplicas(%d) = %v, want *OutOfBoundsError", tt.requested, err)
			}
			if oob.Min != tt.wantMin || oob.Max != tt.wantMax || oob.Requested != tt.requested || !strings.Contains(err.Error(), tt.wantResourceInText) {
				t.Errorf("error = %+v (%v), want bounds [%d, %d]", oob, err, tt.wantMin, tt.wantMax)
			}
			if st := mustStatus(t, g); st.DesiredReplicas != tt.wantDesiredAfter {
				t.Errorf("desired after refusal = %d, want unchanged %d", st.DesiredReplicas, tt.wantDesiredAfter)
			}
		})
	}
}

func TestEKSNodeGroupUpdateInProgressIsNotStableNotAnError(t *testing.T) {
	for _, id := range []string{
		"sandbox/general",
		"arn:aws:eks:us-west-2:123456789012:nodegroup/sandbox/general/5ec4a9d6-0000-4000-8000-000000000000",
	} {
		t.Run(id, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			g := e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), id)
			wantStatus(t, mustStatus(t, g), 2, 2, true, "")

			if err := g.SetDesiredReplicas(ctx, 5); err != nil {
				t.Fatalf("SetDesiredReplicas(5) = %v", err)
			}
			// EKS reports the old size until the update completes.
			wantStatus(t, mustStatus(t, g), 2, 2, false, "node group is UPDATING")

			var busy *cloudprovider.BusyError
			if err := g.SetDesiredReplicas(ctx, 6); !errors.As(err, &busy) {
				t.Fatalf("SetDesiredReplicas during an update = %v, want *BusyError", err)
			}

			e.clock.Step(eksUpdateDelay)
			wantStatus(t, mustStatus(t, g), 5, 2, false, "3 pending")
			e.clock.Step(pendingDelay)
			wantStatus(t, mustStatus(t, g), 5, 5, true, "")
			for _, i := range e.emulator.Instances("") {
				if i.EKSNodeGroup == "sandbox/general" && i.Labels["eks.amazonaws.com/nodegroup"] != "general" {
					t.Errorf("instance %s lacks the nodegroup label: %v", i.InstanceID, i.Labels)
				}
			}
		})
	}
}

func TestMissingResourcesAreNotFound(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var notFound *cloudprovider.NotFoundError
	for _, tt := range []struct{ typ, id string }{
		{string(v1alpha1.AWSEC2AutoScalingGroup), "nope"},
		{string(v1alpha1.AWSEKSNodeGroup), "sandbox/nope"},
	} {
		if _, err := e.nodeGroup(t, tt.typ, tt.id).Status(ctx); !errors.As(err, &notFound) {
			t.Errorf("%s %s: Status() = %v, want *NotFoundError", tt.typ, tt.id, err)
		}
	}
	for _, id := range []string{"arn:aws:sqs:us-west-2:123456789012:nope", "https://sqs.us-west-2.amazonaws.com/123456789012/nope"} {
		if _, err := e.queue(t, id).Length(ctx); !errors.As(err, &notFound) {
			t.Errorf("%s: Length() = %v, want *NotFoundError", id, err)
		}
	}
}

func TestSQSQueueLengthAndOldestMessageAge(t *testing.T) {
	for _, id := range []string{
		"arn:aws:sqs:us-west-2:123456789012:jobs",
		"https://sqs.us-west-2.amazonaws.com/123456789012/jobs",
	} {
		t.Run(id, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			q := e.queue(t, id)
			e.clock.Step(90 * time.Second)
			if err := e.emulator.SendMessages("jobs", 2, "job"); err != nil {
				t.Fatal(err)
			}
			if n, err := q.Length(ctx); err != nil || n != 5 {
				t.Errorf("Length() = %d, %v; want 5", n, err)
			}
			if age, err := q.OldestMessageAge(ctx); err != nil || age != 90*time.Second {
				t.Errorf("OldestMessageAge() = %v, %v; want 1m30s", age, err)
			}
			if err := e.emulator.PurgeQueue("jobs"); err != nil {
				t.Fatal(err)
			}
			if n, err := q.Length(ctx); err != nil || n != 0 {
				t.Errorf("Length() after purge = %d, %v; want 0", n, err)
			}
			if age, err := q.OldestMessageAge(ctx); err != nil || age != 0 {
				t.Errorf("OldestMessageAge() after purge = %v, %v; want 0", age, err)
			}
		})
	}
}

func TestOldestMessageAgeWithoutDatapointsIsNoData(t *testing.T) {
	e := newEnv(t)
	_, err := e.queue(t, "https://sqs.us-west-2.amazonaws.com/123456789012/unknown").OldestMessageAge(context.Background())
	if !errors.Is(err, cloudprovider.ErrNoData) {
		t.Fatalf("OldestMessageAge() = %v, want ErrNoData", err)
	}
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
			if err := e.emulator.InjectFault(awsemulator.Fault{Service: tt.service, Action: tt.action, Kind: awsemulator.FaultThrottle, Times: throttles}); err != nil {
				t.Fatal(err)
			}
			if err := tt.call(t, e); err != nil {
				t.Fatalf("call failed despite retries: %v", err)
			}
			if hits := e.emulator.FaultHits(); hits[0] != throttles {
				t.Errorf("throttled %d times, want %d", hits[0], throttles)
			}
		})
	}
}

func TestPersistentServerErrorIsWrapped(t *testing.T) {
	e := newEnv(t)
	if err := e.emulator.InjectFault(awsemulator.Fault{Service: "autoscaling", Kind: awsemulator.FaultServerError}); err != nil {
		t.Fatal(err)
	}
	_, err := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
	if err == nil {
		t.Fatal("Status() succeeded against a failing endpoint")
	}
	for _, want := range []string{"autoscaling:DescribeAutoScalingGroups", "auto scaling group workers", "InternalFailure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if hits := e.emulator.FaultHits(); hits[0] != maxAttempts {
		t.Errorf("server saw %d attempts, want %d", hits[0], maxAttempts)
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
			if err := e.emulator.InjectFault(awsemulator.Fault{Service: tt.service, Action: tt.action, Kind: awsemulator.FaultAccessDenied}); err != nil {
				t.Fatal(err)
			}
			err := tt.call(t, e)
			var denied *cloudprovider.AccessDeniedError
			if !errors.As(err, &denied) {
				t.Fatalf("error = %v, want *AccessDeniedError", err)
			}
			if denied.Action != tt.wantAction {
				t.Errorf("Action = %q, want %q", denied.Action, tt.wantAction)
			}
			if hits := e.emulator.FaultHits(); hits[0] != 1 {
				t.Errorf("access denied was retried: %d attempts", hits[0])
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
			if err := e.emulator.InjectFault(awsemulator.Fault{Service: "autoscaling", Action: "DescribeAutoScalingGroups", Kind: awsemulator.FaultThrottle, Times: tt.throttles}); err != nil {
				t.Fatal(err)
			}
			_, err := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers").Status(context.Background())
			if (err != nil) != tt.wantErr {
				t.Errorf("Status() = %v, want error %v", err, tt.wantErr)
			}
			if hits := e.emulator.FaultHits(); hits[0] != tt.wantHits {
				t.Errorf("throttled %d times, want %d", hits[0], tt.wantHits)
			}
		})
	}
}

// TestGrantedNamespaceIsReadFromTheGroupsTags checks the grant the controller relies on: the
// namespace tag of an Auto Scaling group, and of an EKS managed node group itself (not its
// Auto Scaling group's), as DescribeAutoScalingGroups and DescribeNodegroup return them.
func TestGrantedNamespaceIsReadFromTheGroupsTags(t *testing.T) {
	e := newEnv(t)
	asg := e.nodeGroup(t, string(v1alpha1.AWSEC2AutoScalingGroup), "workers")
	ng := e.nodeGroup(t, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general")
	if got := mustStatus(t, asg).GrantedNamespace; got != "" {
		t.Errorf("untagged Auto Scaling group: GrantedNamespace = %q, want none", got)
	}
	if got := mustStatus(t, ng).GrantedNamespace; got != "" {
		t.Errorf("untagged EKS node group: GrantedNamespace = %q, want none", got)
	}
	if err := e.emulator.SetAutoScalingGroupTags("workers", map[string]string{cloudprovider.NamespaceTag: "team-a", "team": "b"}); err != nil {
		t.Fatal(err)
	}
	if err := e.emulator.SetEKSNodeGroupTags("sandbox/general", map[string]string{cloudprovider.NamespaceTag: "team-b"}); err != nil {
		t.Fatal(err)
	}
	if got := mustStatus(t, asg).GrantedNamespace; got != "team-a" {
		t.Errorf("Auto Scaling group: GrantedNamespace = %q, want team-a", got)
	}
	if got := mustStatus(t, ng).GrantedNamespace; got != "team-b" {
		t.Errorf("EKS node group: GrantedNamespace = %q, want team-b", got)
	}
}

// TestIDsNamingTheSameGroupAreEqual is what the duplicate check compares: a name resolves in
// the default region, an ARN in its own.
func TestIDsNamingTheSameGroupAreEqual(t *testing.T) {
	e := newEnv(t)
	asgARN := "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:0f4c:autoScalingGroupName/workers"
	tests := []struct {
		typ       v1alpha1.NodeGroupType
		a, b      string
		wantEqual bool
	}{
		{v1alpha1.AWSEC2AutoScalingGroup, "workers", asgARN, true},
		{v1alpha1.AWSEC2AutoScalingGroup, "workers", "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:0f4c:autoScalingGroupName/workers", false},
		{v1alpha1.AWSEC2AutoScalingGroup, "workers", "other", false},
		{v1alpha1.AWSEKSNodeGroup, "sandbox/general", "arn:aws:eks:us-west-2:123456789012:nodegroup/sandbox/general/6ab2", true},
		{v1alpha1.AWSEKSNodeGroup, "sandbox/general", "other/general", false},
	}
	for _, tt := range tests {
		a, b := e.nodeGroup(t, string(tt.typ), tt.a).ID(), e.nodeGroup(t, string(tt.typ), tt.b).ID()
		if (a == b) != tt.wantEqual {
			t.Errorf("%s: ID(%s) = %q, ID(%s) = %q, want equal %t", tt.typ, tt.a, a, tt.b, b, tt.wantEqual)
		}
	}
}

func TestHungEndpointIsBoundedByTheCallTimeout(t *testing.T) {
	isolateFromHost(t)
	const callTimeout = 200 * time.Millisecond
	env := newEnvWithCallTimeout(t, callTimeout)
	// The endpoint accepts every request and answers none within the test's lifetime.
	if err := env.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultLatency, Latency: awsemulator.Duration(time.Hour)}); err != nil {
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
	if err := e.emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultLatency, Latency: awsemulator.Duration(time.Hour)}); err != nil {
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
