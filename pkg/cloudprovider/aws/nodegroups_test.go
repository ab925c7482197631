package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// The NodeGroups (Auto Scaling groups, EKS managed node groups) and the SQS queues, driven
// through the registry against the emulator.

func wantStatus(t *testing.T, got cloudprovider.NodeGroupStatus, desired, replicas int32, stable bool, messageContains string) {
	t.Helper()
	if got.DesiredReplicas != desired || got.Replicas != replicas || got.Stable != stable || !strings.Contains(got.Message, messageContains) {
		t.Errorf("status = %+v, want desired %d, replicas %d, stable %v, message containing %q", got, desired, replicas, stable, messageContains)
	}
	if stable && got.Message != "" {
		t.Errorf("stable status has message %q", got.Message)
	}
}

func mustStatus(t *testing.T, g cloudprovider.NodeGroup) cloudprovider.NodeGroupStatus {
	t.Helper()
	st, err := g.Status(context.Background())
	if err != nil {
		t.Fatalf("Status() = %v", err)
	}
	return st
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
