package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/awsemulator"
	"karpenter.sh/karpenter/test/sandbox"
)

// The launch tests: what becomes of a launch whose instance, answer or Node goes wrong.

// relaunchRuns numbers the runs (-count) of TestRelaunchAfterTheFirstInstanceDied, whose storage
// is named after the run: the last run's may still be going away.
var relaunchRuns atomic.Int32

// TestRelaunchAfterTheFirstInstanceDied (issue 34, finding 1): the instance launched for a pod
// dies before the pod runs on it (terminated by hand; spot reclaimed during boot and a node
// that never joins end alike) and its Node is deleted: the pod gets a new instance, not the dead
// one EC2 answers again for the first launch's client token. The pod waits for a volume (a
// WaitForFirstConsumer claim with no volume yet), so it is nominated to its node, not bound,
// and stays pending with the same UID once the node is gone.
func TestRelaunchAfterTheFirstInstanceDied(t *testing.T) {
	t.Parallel()
	const name, zone = "relaunch", "us-west-2a"
	ctx := context.Background()
	run := fmt.Sprintf("%s-%d", name, relaunchRuns.Add(1))
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
	}})
	createObject(t, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: run},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{zone}},
		}}},
	})
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: run, Namespace: sandbox.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(run),
			Resources:        corev1.VolumeResourceRequirements{Requests: builders.Resources("storage", "1Gi")},
		},
	}
	createObject(t, claim)
	pod := builders.Pod(builders.PodOptions{Name: run, Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", "1")})
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
	}}}
	createPods(t, pod)

	var first awsemulator.EC2Instance
	eventually.Holds(t, "an instance launched for the pod, with its Node", func() (bool, string, error) {
		ok, why, err := instancesMatchNodes(name, 1)
		if ok {
			first = liveInstances(name)[0]
		}
		return ok, why, err
	}, eventually.Timeout(waitTimeout))
	if err := stack.Emulator.TerminateEC2Instances([]string{first.InstanceID}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: first.PrivateDNSName}}
	if err := stack.Env.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Logf("instance %s terminated out of band and its node %s deleted", first.InstanceID, node.Name)
	waitGone(t, node)

	// The pod is planned again at the next pass (the allocator retries every
	// --batch-max-duration while a pod waits on an open node's room).
	var second awsemulator.EC2Instance
	eventually.Holds(t, "a new instance for the pod, with its Node", func() (bool, string, error) {
		ok, why, err := instancesMatchNodes(name, 1)
		if ok {
			second = liveInstances(name)[0]
		}
		return ok && second.InstanceID != first.InstanceID, why, err
	}, eventually.Timeout(waitTimeout))

	// The volume the pod waits for, where its new node is: it runs there.
	createObject(t, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: run, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      builders.Resources("storage", "1Gi"),
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              run,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/" + run}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, zone)},
			}}}},
		},
	})
	if on := waitRunning(t, pod)[pod.Name]; on.Spec.ProviderID != second.ProviderID {
		t.Errorf("the pod runs on node %s (%s), not on the new instance %s", on.Name, on.Spec.ProviderID, second.ProviderID)
	}
}

// TestDescribeFailureAfterALaunchNeitherOrphansNorExceedsLimits (issue 34, finding 9): CreateFleet
// launched the pod's instance, but DescribeInstances fails (a policy without it, throttling past
// the retries), so the instance's node name is unknown. The instance stays the pod's and counts
// against the Provisioner's limits: once EC2 answers again, it gets its Node and the pod runs
// there, beside a pod that came meanwhile, which the limits leave no room for on a second
// instance. No other instance is launched. It injects a fault every DescribeInstances call
// meets, so it runs before the parallel tests.
func TestDescribeFailureAfterALaunchNeitherOrphansNorExceedsLimits(t *testing.T) {
	const name = "unread"
	skip := len(stack.Emulator.FleetRequests())
	// One m5.large (2 vCPUs) fits under the limit, and holds both pods.
	createProvisioner(t, builders.ProvisionerOptions{Name: name, Limits: builders.Resources("cpu", "2"), Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"m5.large"}},
	}})
	pod := func(podName, cpu string) *corev1.Pod {
		return builders.Pod(builders.PodOptions{Name: name + "-" + podName, Namespace: sandbox.Namespace,
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name}, Requests: builders.Resources("cpu", cpu)})
	}
	first, second := pod("first", "1"), pod("second", "500m")
	if _, err := stack.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeInstances", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Emulator.ClearFaults)
	createPods(t, first)
	eventually.Holds(t, "the pod's instance launched and the controller refused its description", func() (bool, string, error) {
		var ids []string
		for _, request := range stack.Emulator.FleetRequests()[skip:] {
			if request.TagSpecifications["instance"][v1alpha5.ProvisionerNameLabelKey] == name {
				ids = append(ids, request.InstanceIDs...)
			}
		}
		if len(ids) == 0 {
			return false, "no instance launched yet", nil
		}
		log, err := os.ReadFile(stack.ControllerLog())
		if err != nil {
			return false, "", err
		}
		refused := slices.ContainsFunc(strings.Split(string(log), "\n"), func(line string) bool {
			return strings.Contains(line, ids[0]) && strings.Contains(line, "ec2:DescribeInstances")
		})
		return refused, fmt.Sprintf("instances %v, no log line names %s and ec2:DescribeInstances", ids, ids[0]), nil
	}, eventually.Timeout(waitTimeout))
	createPods(t, second)
	stack.Emulator.ClearFaults()

	placed := waitRunning(t, first, second)
	if placed[first.Name].Name != placed[second.Name].Name {
		t.Errorf("the pods run on %s and %s, want the one instance launched", placed[first.Name].Name, placed[second.Name].Name)
	}
	if n := launchedInstances(name, skip); n != 1 {
		t.Errorf("%d instances launched for the pods, want 1: the one whose description failed", n)
	}
	eventually.Holds(t, "every live instance with its Node and every Node with its instance", func() (bool, string, error) {
		return instancesMatchNodes(name, 1)
	}, eventually.Timeout(waitTimeout))
}

// launchFailure is a Provisioner whose launches fail for a reason only its user can fix, and what
// the user is told (docs/troubleshooting.md, "Launches that fail until you act").
type launchFailure struct {
	name string
	// provider is the Provisioner's spec.provider; requirements its requirements.
	provider     string
	requirements []v1alpha5.NodeSelectorRequirement
	// reason is that of the Provisioner's Ready condition, its Warning Event, the pods' and the
	// launch error metric's label.
	reason string
	// field is the field the condition's message names; "" when the cause is no field's.
	field string
	// unplanned is whether the Provisioner plans for no pod (its subnets unknown), so that its
	// pods are told Unprovisionable naming the cause, once for each reason the scheduler gives
	// (which names the cluster's other Provisioners, so may change), not once in all.
	unplanned bool
}

// TestLaunchFailuresTheUserMustFixAreReported (issue 34, finding 11): a launch that fails for a
// reason only the user can fix (a resource the Provisioner names that EC2 refuses, an account
// quota) is not silent: the Provisioner is Ready=False with the cause as its reason and the field
// in its message, with a Warning Event of that reason, each pod waiting for it is told once, and
// karpenter_launch_errors_total counts it by reason. No instance is launched. The rows fail in
// EC2 as the emulator does it, each to its Provisioner (the vCPU quota to the one instance type
// only its row uses), so they run side by side; together before the parallel tests, whose
// faults they would not see cleared.
func TestLaunchFailuresTheUserMustFixAreReported(t *testing.T) {
	badAMI := createLaunchTemplate(t, "e2e-missing-ami", "ami-00000000000000dea")
	if _, err := stack.Emulator.InjectFault(awsemulator.Fault{Kind: awsemulator.FaultCapacity, InstanceType: "r5.xlarge", Code: "VcpuLimitExceeded"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Emulator.ClearFaults)
	onlyType := func(name string) []v1alpha5.NodeSelectorRequirement {
		return []v1alpha5.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{name}}}
	}
	for _, row := range []launchFailure{
		{name: "bad-profile", provider: `{"instanceProfile": "KarpenterNodeInstanceProfile-missing"}`, reason: "InvalidInstanceProfile", field: "spec.provider.instanceProfile"},
		{name: "bad-template", provider: `{"launchTemplate": "e2e-no-such-template"}`, reason: "InvalidLaunchTemplate", field: "spec.provider.launchTemplate"},
		{name: "bad-subnets", provider: `{"subnetSelector": {"e2e.karpenter.sh/no-such-subnet": "*"}}`, reason: "InvalidSubnet", field: "spec.provider.subnetSelector", unplanned: true},
		{name: "bad-groups", provider: `{"securityGroupSelector": {"e2e.karpenter.sh/no-such-group": "*"}}`, reason: "InvalidSecurityGroup", field: "spec.provider.securityGroupSelector"},
		{name: "bad-ami", provider: fmt.Sprintf(`{"launchTemplate": %q}`, badAMI), reason: "InvalidAMI", field: "spec.provider.launchTemplate"},
		{name: "vcpu-quota", requirements: onlyType("r5.xlarge"), reason: "VCPUQuotaExceeded"},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			checkLaunchFailure(t, row)
		})
	}
}

// TestUnauthorizedLaunchIsReportedUntilALaunchSucceeds (issue 34, finding 11): the controller's
// role may not call ec2:CreateFleet: the Provisioner says so (Ready=False, Unauthorized, naming
// the action to grant) until a launch succeeds, then it is Ready again. The fault refuses every
// CreateFleet, so this test runs alone.
func TestUnauthorizedLaunchIsReportedUntilALaunchSucceeds(t *testing.T) {
	if _, err := stack.Emulator.InjectFault(awsemulator.Fault{Service: "ec2", Action: "CreateFleet", Kind: awsemulator.FaultAccessDenied}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Emulator.ClearFaults)
	pod := checkLaunchFailure(t, launchFailure{name: "unauthorized", reason: "Unauthorized", field: "ec2:CreateFleet"})
	stack.Emulator.ClearFaults()
	waitRunning(t, pod)
	eventually.Holds(t, "the Provisioner Ready again, and saying so", func() (bool, string, error) {
		p := &v1alpha5.Provisioner{}
		if err := stack.Env.Client.Get(context.Background(), client.ObjectKey{Name: "unauthorized"}, p); err != nil {
			return false, "", err
		}
		recovered, err := hasEventOf(p, "Ready")
		return p.StatusConditions().IsHappy() && recovered, fmt.Sprintf("conditions %+v, Ready Event %t", p.Status.Conditions, recovered), err
	}, eventually.Timeout(waitTimeout))
}

// checkLaunchFailure creates the row's Provisioner and a pod for it, and waits until the user is
// told of the failure everywhere, the pod once although the launch was tried again. It returns
// the pod.
func checkLaunchFailure(t *testing.T, row launchFailure) *corev1.Pod {
	t.Helper()
	p := builders.Provisioner(builders.ProvisionerOptions{Name: row.name, Requirements: row.requirements})
	if row.provider != "" {
		p.Spec.Provider = &runtime.RawExtension{Raw: []byte(row.provider)}
	}
	createProvisionerObject(t, p)
	pod := builders.Pod(builders.PodOptions{Name: row.name + "-pod", Namespace: sandbox.Namespace,
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: row.name}, Requests: builders.Resources("cpu", "1")})
	createPods(t, pod)
	ctx := context.Background()
	eventually.Holds(t, "the failure told on the Provisioner, the pod and the metric, twice tried", func() (bool, string, error) {
		current := &v1alpha5.Provisioner{}
		if err := stack.Env.Client.Get(ctx, client.ObjectKey{Name: row.name}, current); err != nil {
			return false, "", err
		}
		ready := current.StatusConditions().GetCondition(apis.ConditionReady)
		condition := ready != nil && ready.IsFalse() && ready.Reason == row.reason && strings.Contains(ready.Message, row.field)
		warned, err := hasEventOf(p, row.reason)
		if err != nil {
			return false, "", err
		}
		told, err := podToldOf(pod, row)
		if err != nil {
			return false, "", err
		}
		scrape, err := scrapeControllerOnce(t.Context())
		if err != nil {
			return false, "", err
		}
		counted := 0.0
		if s, problem := find(scrape, "karpenter_launch_errors_total", map[string]string{"reason": row.reason}); problem == "" {
			counted = s.value
		}
		return condition && warned && (told == 1 || row.unplanned && told > 0) && counted >= 2,
			fmt.Sprintf("Ready %+v, Provisioner Event %t, pod told %d times, karpenter_launch_errors_total{reason=%q} %g", ready, warned, told, row.reason, counted), nil
	}, eventually.Timeout(waitTimeout))
	if n := len(liveInstances(row.name)); n != 0 {
		t.Errorf("%d instances launched for a Provisioner whose launches fail", n)
	}
	if told, err := podToldOf(pod, row); err != nil || told != 1 && !row.unplanned {
		t.Errorf("the pod was told %d times of %s (%v), want once", told, row.reason, err)
	}
	return pod
}

// hasEventOf reports whether the object (not an earlier run's of its name) has had an Event for
// reason.
func hasEventOf(object client.Object, reason string) (bool, error) {
	events := &corev1.EventList{}
	if err := stack.Env.Client.List(context.Background(), events, client.MatchingFields{"involvedObject.name": object.GetName(), "reason": reason}); err != nil {
		return false, fmt.Errorf("listing events, %w", err)
	}
	return slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.InvolvedObject.UID == object.GetUID() }), nil
}

// podToldOf counts the Warning Events telling the pod of the row's failure: of its reason, or,
// for a Provisioner that plans for no pod, Unprovisionable naming the reason.
func podToldOf(pod *corev1.Pod, row launchFailure) (int, error) {
	events := &corev1.EventList{}
	if err := stack.Env.Client.List(context.Background(), events, client.MatchingFields{"involvedObject.name": pod.Name}); err != nil {
		return 0, fmt.Errorf("listing events, %w", err)
	}
	n := 0
	for _, e := range events.Items {
		// Events of an earlier run's pod of the name (-count) are not this one's.
		if e.InvolvedObject.UID != pod.UID {
			continue
		}
		if e.Type == corev1.EventTypeWarning && (e.Reason == row.reason || row.unplanned && e.Reason == provisioning.ReasonUnprovisionable && strings.Contains(e.Message, row.reason)) {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}

// createLaunchTemplate creates (or finds, from an earlier run) a launch template of the user's
// in the emulated account, with the sandbox's instance profile and security group and the AMI.
func createLaunchTemplate(t *testing.T, name, ami string) string {
	t.Helper()
	client := ec2.NewFromConfig(sdkaws.Config{
		Region:       sandbox.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("e2e", "e2e", ""),
		BaseEndpoint: sdkaws.String(stack.EmulatorURL),
	})
	_, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            sdkaws.String(ami),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: sdkaws.String(sandbox.InstanceProfile)},
			SecurityGroupIds:   []string{"sg-sandbox-nodes"},
		},
	})
	// One of an earlier run (-count) is the same template.
	if apiErr := smithy.APIError(nil); err != nil && (!errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidLaunchTemplateName.AlreadyExistsException") {
		t.Fatal(err)
	}
	return name
}
