package scalablenodegroup_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const seed = `
autoScalingGroups:
- {name: workers, minSize: 0, maxSize: 10, desiredCapacity: 1, instanceType: m5.large,
   availabilityZones: [us-west-2a, us-west-2b], labels: {karpenter.sh/group: workers}, tags: {karpenter.sh/namespace: default}}
- {name: shared, minSize: 0, maxSize: 10, desiredCapacity: 2, instanceType: m5.large, availabilityZones: [us-west-2a],
   tags: {karpenter.sh/namespace: default}}
- {name: elsewhere, minSize: 0, maxSize: 10, desiredCapacity: 2, instanceType: m5.large, tags: {karpenter.sh/namespace: team-b}}
- {name: untagged, minSize: 0, maxSize: 10, desiredCapacity: 2, instanceType: m5.large}
- {name: running, minSize: 0, maxSize: 30, desiredCapacity: 20, instanceType: m5.large, availabilityZones: [us-west-2a],
   tags: {karpenter.sh/namespace: default}}
eksNodeGroups:
- {clusterName: sandbox, nodegroupName: general, minSize: 1, maxSize: 5, desiredSize: 2, instanceType: c5.xlarge,
   tags: {karpenter.sh/namespace: default}}
- {clusterName: sandbox, nodegroupName: untagged, minSize: 1, maxSize: 5, desiredSize: 2, instanceType: c5.xlarge}
`

// TestScalableNodeGroupsOnEmulatedAWS drives node groups through the scale subresource of a
// real apiserver, the controller, the real AWS SDK and the project's AWS emulator.
func TestScalableNodeGroupsOnEmulatedAWS(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	emulator, server := awstest.Serve(t, awsemulator.Options{PendingDelay: 2 * time.Second, TerminatingDelay: time.Second, EKSUpdateDelay: time.Second}, seed)
	// The controller reaches AWS only through the SDK's own configuration chain.
	t.Setenv("AWS_ENDPOINT_URL", server.URL)
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	ctx := context.Background()
	startController(t, env)

	t.Run("kubectl scale resizes an Auto Scaling group", func(t *testing.T) {
		group := createGroup(t, env, "workers", v1alpha1.AWSEC2AutoScalingGroup, "workers")
		waitForStatus(t, env, group, 1, "karpenter.sh/group=workers")
		kubectl(t, env, "scale", "scalablenodegroup/workers", "--replicas=3")
		waitForStatus(t, env, group, 3, "karpenter.sh/group=workers")
		if n := inService(emulator.Instances("workers")); n != 3 {
			t.Errorf("%d instances in service, want 3", n)
		}
		kubectl(t, env, "scale", "scalablenodegroup/workers", "--replicas=0")
		waitForStatus(t, env, group, 0, "karpenter.sh/group=workers")
	})

	t.Run("a group created without spec.replicas adopts the Auto Scaling group's size", func(t *testing.T) {
		group := createGroup(t, env, "running", v1alpha1.AWSEC2AutoScalingGroup, "running")
		waitForStatus(t, env, group, 20, "")
		if got := ptr.Deref(group.Spec.Replicas, -1); got != 20 {
			t.Errorf("spec.replicas = %d, want the adopted 20", got)
		}
		if n := inService(emulator.Instances("running")); n != 20 {
			t.Errorf("%d instances in service, want the 20 the group had", n)
		}
	})

	t.Run("kubectl scale resizes an EKS node group", func(t *testing.T) {
		group := createGroup(t, env, "general", v1alpha1.AWSEKSNodeGroup, "sandbox/general")
		waitForStatus(t, env, group, 2, "eks.amazonaws.com/nodegroup=general")
		kubectl(t, env, "scale", "scalablenodegroup/general", "--replicas=4")
		waitForStatus(t, env, group, 4, "eks.amazonaws.com/nodegroup=general")
	})

	t.Run("a change made outside Karpenter is set back to the adopted size", func(t *testing.T) {
		group := createGroup(t, env, "shared", v1alpha1.AWSEC2AutoScalingGroup, "shared")
		waitForStatus(t, env, group, 2, "")
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg.HTTPClient = aws.GuardRequestBodies(awshttp.NewBuildableClient())
		if _, err := autoscaling.NewFromConfig(cfg).SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
			AutoScalingGroupName: sdkaws.String("shared"), DesiredCapacity: sdkaws.Int32(5),
		}); err != nil {
			t.Fatal(err)
		}
		// spec.replicas, adopted at creation, is the desired state from then on.
		eventually.Holds(t, "a Scaled event from 5 back to 2", func() (bool, string, error) {
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events, client.InNamespace("default")); err != nil {
				return false, "", err
			}
			var seen []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "shared" {
					if e.Reason == scalablenodegroup.ReasonScaled && strings.Contains(e.Message, "from 5 to 2") {
						return true, "", nil
					}
					seen = append(seen, e.Reason+": "+e.Message)
				}
			}
			return false, fmt.Sprintf("events %q", seen), nil
		}, eventually.Timeout(45*time.Second))
		waitForStatus(t, env, group, 2, "")
	})

	t.Run("a group not granted to the namespace is never resized", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			typ  v1alpha1.NodeGroupType
			id   string
		}{
			{"untagged", v1alpha1.AWSEC2AutoScalingGroup, "untagged"},
			{"elsewhere", v1alpha1.AWSEC2AutoScalingGroup, "elsewhere"},
			{"untagged-eks", v1alpha1.AWSEKSNodeGroup, "sandbox/untagged"},
		} {
			group := createGroup(t, env, tc.name, tc.typ, tc.id)
			kubectl(t, env, "scale", "scalablenodegroup/"+tc.name, "--replicas=4")
			waitForCondition(t, env, group, scalablenodegroup.ReasonNotGranted)
		}
		if n := len(emulator.Instances("untagged")) + len(emulator.Instances("elsewhere")); n != 4 {
			t.Errorf("%d instances in the ungranted groups, want the seeded 4", n)
		}
		for _, i := range emulator.Instances("") {
			if i.EKSNodeGroup == "sandbox/untagged" && i.LifecycleState != "InService" {
				t.Errorf("the ungranted EKS node group changed: instance %s is %s", i.InstanceID, i.LifecycleState)
			}
		}
	})

	t.Run("a second object on the same group is refused", func(t *testing.T) {
		group := createGroup(t, env, "workers-by-arn", v1alpha1.AWSEC2AutoScalingGroup,
			"arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:0f4c:autoScalingGroupName/workers")
		waitForCondition(t, env, group, scalablenodegroup.ReasonDuplicate)
	})
}

// waitForCondition waits until AbleToScale is False with reason and a Warning event says so.
func waitForCondition(t *testing.T, env *environment.Environment, group *v1alpha1.ScalableNodeGroup, reason string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("%s is refused with %s", group.Name, reason), func() (bool, string, error) {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(group), group); err != nil {
			return false, "", err
		}
		able := group.StatusConditions().GetCondition(v1alpha1.AbleToScale)
		if able == nil || able.IsTrue() || able.Reason != reason {
			return false, fmt.Sprintf("conditions=%+v", group.Status.Conditions), nil
		}
		events := &corev1.EventList{}
		if err := env.Client.List(t.Context(), events, client.InNamespace(group.Namespace), client.MatchingFields{"involvedObject.name": group.Name}); err != nil {
			return false, "", err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == reason {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("no Warning event %s among %d events", reason, len(events.Items)), nil
	}, eventually.Timeout(45*time.Second))
}

// startController runs the controller in the operator until the test ends; its cloud
// provider is AWS through the SDK's configuration chain, as in production.
func startController(t *testing.T, env *environment.Environment) {
	t.Helper()
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:      []string{scalablenodegroup.Name},
		ResyncPeriod: time.Second,
	}})
}

func createGroup(t *testing.T, env *environment.Environment, name string, typ v1alpha1.NodeGroupType, id string) *v1alpha1.ScalableNodeGroup {
	t.Helper()
	group := &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: typ, ID: id},
	}
	if err := env.Client.Create(context.Background(), group); err != nil {
		t.Fatal(err)
	}
	return group
}

// waitForStatus waits until the group reports replicas in service, Ready and stable.
func waitForStatus(t *testing.T, env *environment.Environment, group *v1alpha1.ScalableNodeGroup, replicas int32, selector string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("%s reports %d stable replicas", group.Name, replicas), func() (bool, string, error) {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(group), group); err != nil {
			return false, "", err
		}
		stabilized := group.StatusConditions().GetCondition(v1alpha1.Stabilized)
		return ptr.Deref(group.Status.Replicas, -1) == replicas && group.StatusConditions().IsHappy() &&
				stabilized != nil && stabilized.IsTrue() && (selector == "" || group.Status.Selector == selector),
			fmt.Sprintf("replicas=%v selector=%q conditions=%+v", ptr.Deref(group.Status.Replicas, -1), group.Status.Selector, group.Status.Conditions), nil
	}, eventually.Timeout(45*time.Second))
}

func inService(instances []awsemulator.Instance) int {
	n := 0
	for _, instance := range instances {
		if instance.LifecycleState == "InService" {
			n++
		}
	}
	return n
}

func kubectl(t *testing.T, env *environment.Environment, args ...string) {
	t.Helper()
	command := exec.Command("kubectl", append([]string{"--kubeconfig", env.KubeconfigPath, "--namespace", "default"}, args...)...)
	if out, err := command.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v, %v: %s", args, err, out)
	}
}
