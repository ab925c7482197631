package state_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// fixture is one cluster with everything that changes where a pod may go: a Ready node with a
// bound pod and a pod nominated to it, a node still launching, a launched NodeClaim whose Node
// has not registered, a node being deleted, a DaemonSet, and a pod's claim, volume and class.
func fixture(now time.Time) *state.Snapshot {
	labels := func(name, instanceType string) map[string]string {
		return map[string]string{corev1.LabelHostname: name, corev1.LabelInstanceTypeStable: instanceType,
			corev1.LabelTopologyZone: "us-west-2a", v1alpha5.ProvisionerNameLabelKey: "default", v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand}
	}
	allocatable := builders.Resources("cpu", "4", "memory", "16Gi", "pods", "110")
	ready := builders.Node(builders.NodeOptions{Name: "ready", Labels: labels("ready", "m5.xlarge"), Allocatable: allocatable, Ready: corev1.ConditionTrue,
		Finalizers: []string{v1alpha5.TerminationFinalizer}})
	ready.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	launching := builders.Node(builders.NodeOptions{Name: "launching", Labels: labels("launching", "m5.xlarge"),
		Taints: []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}})
	launching.Status = corev1.NodeStatus{}
	deleting := builders.Node(builders.NodeOptions{Name: "deleting", Labels: labels("deleting", "m5.xlarge"), Allocatable: allocatable, Ready: corev1.ConditionTrue,
		Finalizers: []string{v1alpha5.TerminationFinalizer}})
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	launched := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: labels("", "m5.large")},
		Status: v1.NodeClaimStatus{ProviderID: "aws:///us-west-2a/i-0123", Allocatable: builders.Resources("cpu", "2", "memory", "8Gi", "pods", "29")}}
	nominated := builders.Pod(builders.PodOptions{Name: "nominated", Unschedulable: true, Requests: builders.Resources("cpu", "1")})
	nominated.Status.NominatedNodeName = "ready"
	withVolume := builders.Pod(builders.PodOptions{Name: "with-volume", Unschedulable: true, Requests: builders.Resources("cpu", "1")})
	withVolume.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	daemonSet := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "kube-system"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "logs", Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "100m")}}}}}}}
	class := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "ebs.csi.aws.com",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: withVolume.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3"), VolumeName: "pv-data"}}
	volume := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}}}}}}}}}
	return &state.Snapshot{
		Now:        now,
		Nodes:      []corev1.Node{*ready, *launching, *deleting},
		NodeClaims: []v1.NodeClaim{launched},
		Pods: []corev1.Pod{
			*builders.Pod(builders.PodOptions{Name: "bound", NodeName: "ready", Phase: corev1.PodRunning, Requests: builders.Resources("cpu", "1")}),
			*builders.Pod(builders.PodOptions{Name: "draining", NodeName: "deleting", Phase: corev1.PodRunning, Requests: builders.Resources("cpu", "1")}),
			*nominated, *withVolume,
			*builders.Pod(builders.PodOptions{Name: "pending", Unschedulable: true, Requests: builders.Resources("cpu", "3")}),
		},
		DaemonSets:    []appsv1.DaemonSet{daemonSet},
		Claims:        []corev1.PersistentVolumeClaim{claim},
		Volumes:       []corev1.PersistentVolume{volume},
		Classes:       []storagev1.StorageClass{class},
		CSINodes:      []storagev1.CSINode{{ObjectMeta: metav1.ObjectMeta{Name: "ready"}}},
		InstanceTypes: map[string]*cloudprovider.InstanceType{},
	}
}

// asked is what an input asks the scheduler, in comparable form.
type asked struct {
	Pods, DaemonSetPods      []string
	Nodes                    []askedNode
	Provisioners             []string
	Claims, Volumes, Classes int
}

type askedNode struct {
	Name, Allocatable string
	Taints, Pods      []string
	CSINode           bool
}

func summary(input scheduling.Input) asked {
	out := asked{Claims: len(input.PersistentVolumeClaims), Volumes: len(input.PersistentVolumes), Classes: len(input.StorageClasses)}
	for _, pod := range input.Pods {
		out.Pods = append(out.Pods, pod.Name)
	}
	for _, pod := range input.DaemonSetPods {
		out.DaemonSetPods = append(out.DaemonSetPods, pod.Name)
	}
	for _, n := range input.Nodes {
		node := askedNode{Name: n.Node.Name, Allocatable: fmt.Sprint(n.Node.Status.Allocatable), CSINode: n.CSINode != nil}
		for _, t := range n.Node.Spec.Taints {
			node.Taints = append(node.Taints, t.ToString())
		}
		for _, pod := range n.Pods {
			node.Pods = append(node.Pods, pod.Name)
		}
		out.Nodes = append(out.Nodes, node)
	}
	for _, p := range input.Pools {
		out.Provisioners = append(out.Provisioners, fmt.Sprintf("%s used %v of %d types", p.Key.Name, p.Used, len(p.InstanceTypes)))
	}
	return out
}

// TestEveryPlannerAsksTheSchedulerTheSameQuestion: given one cluster state, the provisioning
// pass (and `kubectl karpenter plan`, which runs it), consolidation and expiry hand the
// scheduler the same room (nominated pods, launching nodes and launched NodeClaims counted,
// nodes being deleted not), the same DaemonSets and the same volumes.
func TestEveryPlannerAsksTheSchedulerTheSameQuestion(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	lister := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	kube := crfake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(p).Build()

	snapshot := fixture(now)
	types, _, err := provisioning.ResolveInstanceTypes(t.Context(), lister, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		snapshot.InstanceTypes[it.Name] = it
	}
	pending := snapshot.Pending()
	provisioners := []scheduling.Pool{provisioning.Limited(p, types, provisioning.Used(snapshot, pools.Provisioner(p.Name)))}
	fromProvisioning := summary(provisioning.PendingInput(snapshot, pending, provisioners))

	want := asked{
		Pods:          []string{"pending", "with-volume"},
		DaemonSetPods: []string{"logs"},
		Claims:        1, Volumes: 1, Classes: 1,
	}
	if diff := cmp.Diff(want.Pods, fromProvisioning.Pods); diff != "" {
		t.Errorf("provisioning's pending pods (-want +got):\n%s", diff)
	}
	if fromProvisioning.Claims != want.Claims || fromProvisioning.Volumes != want.Volumes || fromProvisioning.Classes != want.Classes ||
		!slices.Equal(fromProvisioning.DaemonSetPods, want.DaemonSetPods) {
		t.Errorf("provisioning asks with DaemonSets %v and %d claims, %d volumes, %d classes; want the fixture's", fromProvisioning.DaemonSetPods,
			fromProvisioning.Claims, fromProvisioning.Volumes, fromProvisioning.Classes)
	}
	var names []string
	for _, n := range fromProvisioning.Nodes {
		names = append(names, n.Name)
		switch n.Name {
		case "ready":
			if !slices.Equal(n.Pods, []string{"bound", "nominated"}) || !n.CSINode {
				t.Errorf("ready node holds %v (CSINode %v), want its bound and its nominated pod, with its CSINode", n.Pods, n.CSINode)
			}
		case "launching", "default-abcde":
			if len(n.Taints) != 0 || n.Allocatable == fmt.Sprint(corev1.ResourceList(nil)) || len(n.Pods) != 1 {
				t.Errorf("%s: taints %v, allocatable %s, pods %v; want its launch taints lifted, its instance type's room and its DaemonSet's pod to come",
					n.Name, n.Taints, n.Allocatable, n.Pods)
			}
		}
	}
	if !slices.Equal(names, []string{"ready", "launching", "default-abcde"}) {
		t.Errorf("room on %v, want ready, launching and the launched NodeClaim's node to come (never the node being deleted)", names)
	}

	disruption, _, err := consolidation.Read(t.Context(), kube, fixture(now), lister, provisioning.NewLedger())
	if err != nil {
		t.Fatal(err)
	}
	fromConsolidation := summary(disruption.Input(pending, disruption.Provisioners, nil))
	if diff := cmp.Diff(fromProvisioning, fromConsolidation); diff != "" {
		t.Errorf("consolidation asks otherwise than provisioning (-provisioning +consolidation):\n%s", diff)
	}

	var expired *scheduling.Node
	for i := range disruption.Nodes {
		if disruption.Nodes[i].Node.Name == "ready" {
			expired = &disruption.Nodes[i]
		}
	}
	fromExpiry := summary(expiration.ReplacementInput(*disruption, expired))
	wantExpiry := fromProvisioning
	wantExpiry.Pods = []string{"bound", "nominated"}
	wantExpiry.Nodes = wantExpiry.Nodes[1:]
	if diff := cmp.Diff(wantExpiry, fromExpiry); diff != "" {
		t.Errorf("expiry of node ready asks otherwise than provisioning, less that node (-want +got):\n%s", diff)
	}

	report := plan.Provisioning(t.Context(), fixture(now), plan.Pools{Provisioners: []v1alpha5.Provisioner{*p}}, lister)
	results := scheduling.Schedule(provisioning.PendingInput(snapshot, pending, provisioners))
	if len(report.NewNodes) != len(results.NewNodes) || report.PricePerHour != results.Price() {
		t.Errorf("kubectl karpenter plan plans %d new nodes at $%.4f/h, the controller's input %d at $%.4f/h", len(report.NewNodes), report.PricePerHour,
			len(results.NewNodes), results.Price())
	}
}
