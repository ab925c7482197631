package awsemulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	awsprovider "karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// The emulator is tested through the real SDK clients: if they can
// deserialize what it says, so can Karpenter.

func start(t *testing.T, opts awsemulator.Options, seed string) (*awsemulator.Emulator, sdkaws.Config) {
	t.Helper()
	e, srv := awstest.Serve(t, opts, seed)
	cfg := sdkaws.Config{
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: sdkaws.String(srv.URL),
		HTTPClient:   awsprovider.GuardRequestBodies(awshttp.NewBuildableClient()),
		// Single attempts: these tests look at raw responses, not retries.
		RetryMaxAttempts: 1,
	}
	return e, cfg
}

func TestDescribeAutoScalingGroupsPaginates(t *testing.T) {
	var seed strings.Builder
	seed.WriteString("autoScalingGroups:\n")
	const groups = 123
	for i := range groups {
		fmt.Fprintf(&seed, "- {name: group-%03d, minSize: 0, maxSize: 3, desiredCapacity: 1, instanceType: m5.large}\n", i)
	}
	_, cfg := start(t, awsemulator.Options{}, seed.String())
	client := autoscaling.NewFromConfig(cfg)

	for _, tt := range []struct {
		maxRecords int32
		wantPages  int
	}{{0, 3}, {100, 2}, {50, 3}, {7, 18}} {
		t.Run(fmt.Sprintf("MaxRecords=%d", tt.maxRecords), func(t *testing.T) {
			in := &autoscaling.DescribeAutoScalingGroupsInput{}
			if tt.maxRecords > 0 {
				in.MaxRecords = sdkaws.Int32(tt.maxRecords)
			}
			pages, seen := 0, map[string]bool{}
			for p := autoscaling.NewDescribeAutoScalingGroupsPaginator(client, in); p.HasMorePages(); {
				out, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, g := range out.AutoScalingGroups {
					name := sdkaws.ToString(g.AutoScalingGroupName)
					if seen[name] {
						t.Errorf("group %s returned twice", name)
					}
					seen[name] = true
					if len(g.Instances) != 1 || g.Instances[0].LifecycleState != "InService" {
						t.Errorf("group %s instances = %+v, want one InService", name, g.Instances)
					}
				}
			}
			if pages != tt.wantPages || len(seen) != groups {
				t.Errorf("got %d groups over %d pages, want %d over %d", len(seen), pages, groups, tt.wantPages)
			}
		})
	}

	_, err := client.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{MaxRecords: sdkaws.Int32(101)})
	if code := errorCode(err); code != "ValidationError" {
		t.Errorf("MaxRecords=101: error code %q (%v), want ValidationError", code, err)
	}
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestInstancesMoveThroughTheLifecycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, cfg := start(t, awsemulator.Options{Clock: clk, PendingDelay: time.Minute, TerminatingDelay: 30 * time.Second},
		`{"autoScalingGroups": [{"name": "g", "minSize": 0, "maxSize": 9, "desiredCapacity": 0, "instanceType": "m5.large", "availabilityZones": ["z-a", "z-b", "z-c"]}]}`)
	client := autoscaling.NewFromConfig(cfg)
	ctx := context.Background()

	states := func() map[string]int {
		counts := map[string]int{}
		for _, i := range e.Instances("g") {
			counts[i.LifecycleState]++
		}
		return counts
	}
	perZone := func() map[string]int {
		counts := map[string]int{}
		for _, i := range e.Instances("g") {
			if i.LifecycleState != "Terminating" {
				counts[i.AvailabilityZone]++
			}
		}
		return counts
	}

	if _, err := client.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: sdkaws.String("g"), DesiredCapacity: sdkaws.Int32(6)}); err != nil {
		t.Fatal(err)
	}
	if got := states(); got["Pending"] != 6 {
		t.Errorf("just after scale out: %v, want 6 Pending", got)
	}
	if got := perZone(); got["z-a"] != 2 || got["z-b"] != 2 || got["z-c"] != 2 {
		t.Errorf("zones = %v, want balanced", got)
	}
	clk.Step(time.Minute)
	if got := states(); got["InService"] != 6 {
		t.Errorf("after the pending delay: %v, want 6 InService", got)
	}

	if _, err := client.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: sdkaws.String("g"), DesiredCapacity: sdkaws.Int32(3)}); err != nil {
		t.Fatal(err)
	}
	if got := states(); got["InService"] != 3 || got["Terminating"] != 3 {
		t.Errorf("just after scale in: %v, want 3 InService and 3 Terminating", got)
	}
	if got := perZone(); got["z-a"] != 1 || got["z-b"] != 1 || got["z-c"] != 1 {
		t.Errorf("zones after scale in = %v, want balanced", got)
	}
	clk.Step(30 * time.Second)
	if got := states(); got["InService"] != 3 || len(got) != 1 {
		t.Errorf("after the terminating delay: %v, want only 3 InService", got)
	}

	for _, tt := range []struct {
		desired  int32
		wantCode string
	}{{10, "ValidationError"}, {-1, "ValidationError"}} {
		_, err := client.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: sdkaws.String("g"), DesiredCapacity: sdkaws.Int32(tt.desired)})
		if code := errorCode(err); code != tt.wantCode {
			t.Errorf("SetDesiredCapacity(%d): code %q (%v), want %s", tt.desired, code, err, tt.wantCode)
		}
	}
	_, err := client.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: sdkaws.String("missing"), DesiredCapacity: sdkaws.Int32(1)})
	if code := errorCode(err); code != "ValidationError" {
		t.Errorf("unknown group: code %q (%v), want ValidationError", code, err)
	}

	// Moving a bound drags desired along, as in Auto Scaling.
	if _, err := client.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: sdkaws.String("g"), MaxSize: sdkaws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	out, err := client.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"g"}})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.AutoScalingGroups[0]; sdkaws.ToInt32(g.DesiredCapacity) != 2 || sdkaws.ToInt32(g.MaxSize) != 2 {
		t.Errorf("after lowering max: desired %d max %d, want 2 and 2", sdkaws.ToInt32(g.DesiredCapacity), sdkaws.ToInt32(g.MaxSize))
	}
}

func TestEKSNodeGroupUpdates(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, cfg := start(t, awsemulator.Options{Clock: clk, EKSUpdateDelay: time.Minute},
		`{"eksNodeGroups": [{"clusterName": "c", "nodegroupName": "ng", "minSize": 1, "maxSize": 4, "desiredSize": 1, "instanceType": "m5.large", "labels": {"team": "a"}, "taints": [{"key": "k", "effect": "NoExecute"}]}]}`)
	client := eks.NewFromConfig(cfg)
	ctx := context.Background()

	ng, err := client.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("ng")})
	if err != nil {
		t.Fatal(err)
	}
	if n := ng.Nodegroup; n.Status != "ACTIVE" || sdkaws.ToInt32(n.ScalingConfig.DesiredSize) != 1 || n.Labels["team"] != "a" ||
		len(n.Taints) != 1 || n.Taints[0].Effect != "NO_EXECUTE" || len(n.Resources.AutoScalingGroups) != 1 || !strings.HasPrefix(sdkaws.ToString(n.NodegroupArn), "arn:aws:eks:us-west-2:123456789012:nodegroup/c/ng/") {
		t.Errorf("DescribeNodegroup = %+v", n)
	}

	up, err := client.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("ng"), ScalingConfig: &ekstypes.NodegroupScalingConfig{DesiredSize: sdkaws.Int32(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if up.Update.Status != "InProgress" || up.Update.Type != "ConfigUpdate" || len(up.Update.Params) != 1 || sdkaws.ToString(up.Update.Params[0].Value) != "3" {
		t.Errorf("update = %+v", up.Update)
	}
	_, err = client.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("ng"), ScalingConfig: &ekstypes.NodegroupScalingConfig{DesiredSize: sdkaws.Int32(2)}})
	if code := errorCode(err); code != "ResourceInUseException" {
		t.Errorf("second update while one is in progress: %q (%v), want ResourceInUseException", code, err)
	}

	clk.Step(time.Minute)
	du, err := client.DescribeUpdate(ctx, &eks.DescribeUpdateInput{Name: sdkaws.String("c"), NodegroupName: sdkaws.String("ng"), UpdateId: up.Update.Id})
	if err != nil || du.Update.Status != "Successful" {
		t.Errorf("DescribeUpdate = %+v, %v; want Successful", du, err)
	}
	for _, tt := range []struct {
		desired  int32
		wantCode string
	}{{5, "InvalidParameterException"}, {3, "InvalidParameterException"} /* no change */} {
		_, err := client.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("ng"), ScalingConfig: &ekstypes.NodegroupScalingConfig{DesiredSize: sdkaws.Int32(tt.desired)}})
		if code := errorCode(err); code != tt.wantCode {
			t.Errorf("UpdateNodegroupConfig(%d): %q (%v), want %s", tt.desired, code, err, tt.wantCode)
		}
	}
	_, err = client.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("missing")})
	if code := errorCode(err); code != "ResourceNotFoundException" {
		t.Errorf("missing node group: %q (%v), want ResourceNotFoundException", code, err)
	}
	list, err := client.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: sdkaws.String("c")})
	if err != nil || len(list.Nodegroups) != 1 || list.Nodegroups[0] != "ng" {
		t.Errorf("ListNodegroups = %+v, %v", list, err)
	}
}

func TestSQSMessages(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, cfg := start(t, awsemulator.Options{Clock: clk}, "")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()

	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: sdkaws.String("work"), Attributes: map[string]string{"VisibilityTimeout": "10"}})
	if err != nil {
		t.Fatal(err)
	}
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: sdkaws.String("work")})
	if err != nil || sdkaws.ToString(url.QueueUrl) != sdkaws.ToString(created.QueueUrl) || sdkaws.ToString(url.QueueUrl) != "https://sqs.us-west-2.amazonaws.com/123456789012/work" {
		t.Fatalf("GetQueueUrl = %v, %v", sdkaws.ToString(url.QueueUrl), err)
	}
	q := url.QueueUrl
	// The SDK verifies MD5OfMessageBody and MD5OfBody, so these also check the checksums.
	for _, body := range []string{"one", "two", "three"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: sdkaws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: sdkaws.String("later"), DelaySeconds: 60}); err != nil {
		t.Fatal(err)
	}
	received, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 2})
	if err != nil || len(received.Messages) != 2 || sdkaws.ToString(received.Messages[0].Body) != "one" {
		t.Fatalf("ReceiveMessage = %+v, %v", received, err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: received.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	attrs := func() map[string]string {
		t.Helper()
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q, AttributeNames: []sqstypes.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	want := func(visible, inFlight, delayed string) {
		t.Helper()
		a := attrs()
		if a["ApproximateNumberOfMessages"] != visible || a["ApproximateNumberOfMessagesNotVisible"] != inFlight || a["ApproximateNumberOfMessagesDelayed"] != delayed {
			t.Errorf("attributes = %v, want visible %s, in flight %s, delayed %s", a, visible, inFlight, delayed)
		}
	}
	want("1", "1", "1")
	clk.Step(10 * time.Second) // the unacknowledged message becomes visible again
	want("2", "0", "1")
	clk.Step(50 * time.Second) // the delayed message arrives
	want("3", "0", "0")

	_, err = client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: sdkaws.String("https://sqs.us-west-2.amazonaws.com/123456789012/missing")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Errorf("missing queue: %v, want *types.QueueDoesNotExist", err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: sdkaws.String("bogus")}); err == nil {
		t.Error("DeleteMessage with a bogus receipt handle succeeded")
	}
}

// ReceiveMessage long-polls: with WaitTimeSeconds it returns a message sent while it waits, and
// nothing once the wait runs out. Interrupt's events arrive as EventBridge delivers them.
func TestSQSLongPollingAndInterruptionEvents(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, "sqsQueues: [{name: events}]")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	q := sdkaws.String("https://sqs.us-west-2.amazonaws.com/123456789012/events")
	if _, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 21}); err == nil {
		t.Error("WaitTimeSeconds 21 was accepted")
	}
	empty, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 1})
	if err != nil || len(empty.Messages) != 0 {
		t.Fatalf("ReceiveMessage of an empty queue = %+v, %v", empty, err)
	}
	received := make(chan *sqs.ReceiveMessageOutput, 1)
	go func() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 20})
		if err != nil {
			t.Error(err)
		}
		received <- out
	}()
	if _, err := e.Interrupt("events", "i-0123456789abcdef0", awsemulator.InterruptSpot, ""); err != nil {
		t.Fatal(err)
	}
	out := <-received
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want 1", len(out.Messages))
	}
	var event struct {
		DetailType string            `json:"detail-type"`
		Source     string            `json:"source"`
		Detail     map[string]string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(sdkaws.ToString(out.Messages[0].Body)), &event); err != nil {
		t.Fatal(err)
	}
	if event.DetailType != "EC2 Spot Instance Interruption Warning" || event.Source != "aws.ec2" || event.Detail["instance-id"] != "i-0123456789abcdef0" {
		t.Errorf("event %+v", event)
	}
}

func TestSeedFiles(t *testing.T) {
	seed, err := awsemulator.LoadSeed("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := awsemulator.New(awsemulator.Options{})
	if err := e.Seed(seed); err != nil {
		t.Fatalf("testdata/seed.yaml: %v", err)
	}
	instances := e.Instances("queue-workers")
	if len(instances) != 1 || instances[0].LifecycleState != "InService" || instances[0].Taints[0].Effect != "NoSchedule" || instances[0].Capacity["cpu"] != "2" ||
		instances[0].ProviderID != "aws:///"+instances[0].AvailabilityZone+"/"+instances[0].InstanceID {
		t.Errorf("seeded instances = %+v", instances)
	}

	for _, tt := range []struct{ name, seed, wantErr string }{
		{"unknown field", `{"autoScalingGroups": [{"name": "g", "maxSize": 1, "instanceType": "m5.large", "bogus": 1}]}`, "bogus"},
		{"desired above max", `{"autoScalingGroups": [{"name": "g", "maxSize": 1, "desiredCapacity": 2, "instanceType": "m5.large"}]}`, "min (0) <= desired (2) <= max (1)"},
		{"no instance type", `{"autoScalingGroups": [{"name": "g", "maxSize": 1}]}`, "instanceType is required"},
		{"duplicate", `{"sqsQueues": [{"name": "jobs"}]}`, "already exists"},
		{"no cluster", `{"eksNodeGroups": [{"nodegroupName": "ng", "maxSize": 1, "instanceType": "m5.large"}]}`, "clusterName is required"},
		{"duplicate subnet", `{"subnets": [{"id": "subnet-0a1", "availabilityZone": "us-west-2a"}]}`, "already exists"},
		{"bad cidr", `{"subnets": [{"id": "s", "availabilityZone": "us-west-2a", "cidrBlock": "10.0.0.0/30"}]}`, "/28 or larger"},
		{"unnamed group", `{"securityGroups": [{"id": "sg-1"}]}`, "id and name are required"},
		{"unknown type", `{"catalogue": {"instanceTypes": ["m5.huge"]}}`, "unknown instance type"},
		{"offering outside region", `{"catalogue": {"offerings": {"m5.large": ["eu-west-1a"]}}}`, "not a zone of the region"},
		{"ssm name", `{"ssmParameters": {"image": "ami-1"}}`, "not a parameter path"},
		{"zone id", `{"subnets": [{"id": "s", "availabilityZone": "us-west-2a", "availabilityZoneId": "west-1"}]}`, "not a zone id"},
		{"two zone ids for a zone", `{"subnets": [{"id": "s1", "availabilityZone": "us-west-2d", "availabilityZoneId": "usw2-az9"}, {"id": "s2", "availabilityZone": "us-west-2d"}]}`, "usw2-az9"},
		{"image id", `{"images": ["ami-1"]}`, "not an AMI id"},
		{"image field", `{"images": [{"id": "ami-00000000000000a01", "arch": "arm64"}]}`, "arch"},
		{"image architecture", `{"images": [{"id": "ami-00000000000000a01", "architecture": "riscv"}]}`, "architecture"},
		{"image state", `{"images": [{"id": "ami-00000000000000a01", "state": "ready"}]}`, "state"},
		{"image owner", `{"images": [{"id": "ami-00000000000000a01", "ownerId": "amazon"}]}`, "12-digit"},
		{"own image alias", `{"images": [{"id": "ami-00000000000000a01", "ownerAlias": "amazon"}]}`, "another account"},
		{"duplicate image", `{"images": ["ami-00000000000000a01", {"id": "ami-00000000000000a01"}]}`, "already exists"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := awsemulator.ParseSeed([]byte(tt.seed))
			if err == nil {
				err = e.Seed(s)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAdminAPI(t *testing.T) {
	e := awsemulator.New(awsemulator.Options{})
	srv := httptest.NewServer(e)
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantBody           string
	}{
		{"GET", "/_emulator/healthz", "", 200, "ok"},
		{"POST", "/_emulator/seed", "sqsQueues: [{name: q}]\nautoScalingGroups: [{name: g, maxSize: 2, desiredCapacity: 2, instanceType: t3.small}]", 204, ""},
		{"POST", "/_emulator/seed", "sqsQueues: [{name: q}]", 400, "already exists"},
		{"GET", "/_emulator/instances?group=g", "", 200, `"lifecycleState":"InService"`},
		{"POST", "/_emulator/queues/q/messages", `{"count": 3}`, 204, ""},
		{"POST", "/_emulator/queues/nope/messages", `{"count": 3}`, 404, "does not exist"},
		{"POST", "/_emulator/faults", `{"service": "sqs", "kind": "latency", "latency": "1ms", "times": 1}`, 204, ""},
		{"POST", "/_emulator/faults", `{"kind": "meteor"}`, 400, "unknown fault kind"},
		{"GET", "/_emulator/faults", "", 200, `"latency":"1ms"`},
		{"DELETE", "/_emulator/faults", "", 204, ""},
		{"POST", "/_emulator/instances/i-0123456789abcdef0/interrupt?queue=q&kind=spot", "", 200, `"messageId"`},
		{"POST", "/_emulator/instances/i-0123456789abcdef0/interrupt?queue=q&kind=state-change&state=terminated", "", 200, `"messageId"`},
		{"POST", "/_emulator/instances/i-0123456789abcdef0/interrupt?queue=q&kind=meteor", "", 400, "unknown interruption kind"},
		{"POST", "/_emulator/instances/web-1/interrupt?queue=q&kind=spot", "", 400, "not an EC2 instance id"},
		{"POST", "/_emulator/instances/i-0123456789abcdef0/interrupt?queue=nope&kind=spot", "", 400, "does not exist"},
		{"DELETE", "/_emulator/queues/q/messages", "", 204, ""},
		{"PUT", "/_emulator/autoscalinggroups/g/tags", `{"karpenter.sh/namespace": "team-a"}`, 204, ""},
		{"PUT", "/_emulator/autoscalinggroups/nope/tags", `{}`, 404, "does not exist"},
		{"PUT", "/_emulator/eksnodegroups/c/nope/tags", `{}`, 404, "does not exist"},
	}
	for _, tt := range tests {
		status, body := do(tt.method, tt.path, tt.body)
		if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
			t.Errorf("%s %s = %d %q, want %d containing %q", tt.method, tt.path, status, body, tt.wantStatus, tt.wantBody)
		}
	}
}

func TestErrorShapesPerProtocol(t *testing.T) {
	e, cfg := start(t, awsemulator.Options{}, `{"sqsQueues": [{"name": "q"}], "eksNodeGroups": [{"clusterName": "c", "nodegroupName": "ng", "maxSize": 1, "instanceType": "m5.large"}], "autoScalingGroups": [{"name": "g", "maxSize": 1, "instanceType": "m5.large"}]}`)
	ctx := context.Background()
	asg, eksClient, sqsClient := autoscaling.NewFromConfig(cfg), eks.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	calls := map[string]func() error{
		"autoscaling": func() error {
			_, err := asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
			return err
		},
		"eks": func() error {
			_, err := eksClient.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: sdkaws.String("c"), NodegroupName: sdkaws.String("ng")})
			return err
		},
		"sqs": func() error {
			_, err := sqsClient.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: sdkaws.String("q")})
			return err
		},
	}
	tests := []struct {
		service string
		kind    awsemulator.FaultKind
		want    string
	}{
		{"autoscaling", awsemulator.FaultThrottle, "Throttling"},
		{"autoscaling", awsemulator.FaultAccessDenied, "AccessDenied"},
		{"autoscaling", awsemulator.FaultServerError, "InternalFailure"},
		{"eks", awsemulator.FaultThrottle, "ThrottlingException"},
		{"eks", awsemulator.FaultAccessDenied, "AccessDeniedException"},
		{"sqs", awsemulator.FaultThrottle, "RequestThrottled"},
		{"sqs", awsemulator.FaultAccessDenied, "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.service+"/"+string(tt.kind), func(t *testing.T) {
			e.ClearFaults()
			if _, err := e.InjectFault(awsemulator.Fault{Service: tt.service, Kind: tt.kind, Times: 1}); err != nil {
				t.Fatal(err)
			}
			if code := errorCode(calls[tt.service]()); code != tt.want {
				t.Errorf("error code = %q, want %q", code, tt.want)
			}
			if err := calls[tt.service](); err != nil {
				t.Errorf("after the fault was used up: %v", err)
			}
		})
	}
}
