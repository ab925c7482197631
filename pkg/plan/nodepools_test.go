package plan_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kubefake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/apis"
	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// nodeClass is an EC2NodeClass whose Ready condition has the status given, as its controller
// writes it.
func nodeClass(name string, ready metav1.ConditionStatus) *awsv1.EC2NodeClass {
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	class.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: ready, Reason: "SubnetsNotFound", Message: "no subnet matches"}}
	return class
}

// nodePool is a NodePool of the class, on-demand amd64 nodes.
func nodePool(name, class string, mutate ...func(*v1.NodePool)) v1.NodePool {
	np := v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1alpha5.CapacityTypeOnDemand}},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		},
		NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: class},
	}}}}
	for _, m := range mutate {
		m(&np)
	}
	return np
}

func classes(objects ...client.Object) client.Reader {
	return kubefake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objects...).Build()
}

func pendingPod(name, cpu string) *state.Snapshot {
	return &state.Snapshot{Pods: []corev1.Pod{*builders.Pod(builders.PodOptions{Name: name, Requests: builders.Resources("cpu", cpu), Unschedulable: true})},
		InstanceTypes: map[string]*cloudprovider.InstanceType{}}
}

// TestNodePoolsArePlanned: a NodePool whose class is Ready plans the pod's node, named by its
// kind; those the controller's pass leaves out are reported with the reason.
func TestNodePoolsArePlanned(t *testing.T) {
	in := plan.Pools{
		NodePools: []v1.NodePool{
			nodePool("default", "ready"),
			nodePool("waiting", "not-ready"),
			nodePool("orphan", "missing"),
			nodePool("static", "ready", func(np *v1.NodePool) { np.Spec.Replicas = ptr.To[int64](2) }),
		},
		NodeClasses: classes(nodeClass("ready", metav1.ConditionTrue), nodeClass("not-ready", metav1.ConditionFalse)),
	}
	report := plan.Provisioning(context.Background(), pendingPod("web", "1"), in, lister{})

	if len(report.NewNodes) != 1 || report.NewNodes[0].Pool != "nodepool/default" || !slices.Equal(report.NewNodes[0].Pods, []string{"default/web"}) {
		t.Errorf("new nodes %+v, want one of nodepool/default for web", report.NewNodes)
	}
	want := map[string]string{
		"waiting": "EC2NodeClass not-ready is not ready: no subnet matches",
		"orphan":  "EC2NodeClass missing does not exist",
		"static":  "static (spec.replicas)",
	}
	if len(report.SkippedPools) != len(want) {
		t.Errorf("skipped %+v, want %v", report.SkippedPools, want)
	}
	for _, s := range report.SkippedPools {
		if s.Kind != "NodePool" || !strings.Contains(s.Reason, want[s.Name]) || want[s.Name] == "" {
			t.Errorf("skipped %+v, want NodePool %s skipped saying %q", s, s.Name, want[s.Name])
		}
	}
}

// TestNodePoolWeightBeatsACheaperProvisioner: a weighted NodePool takes the pod on its dearer
// instance type, though a Provisioner of the same name would launch a cheaper node.
func TestNodePoolWeightBeatsACheaperProvisioner(t *testing.T) {
	in := plan.Pools{
		Provisioners: []v1alpha5.Provisioner{onDemand("default")},
		NodePools: []v1.NodePool{nodePool("default", "ready", func(np *v1.NodePool) {
			np.Spec.Weight = ptr.To[int32](10)
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.2xlarge"}})
		})},
		NodeClasses: classes(nodeClass("ready", metav1.ConditionTrue)),
	}
	report := plan.Provisioning(context.Background(), pendingPod("web", "1"), in, lister{})
	if len(report.NewNodes) != 1 || report.NewNodes[0].Pool != "nodepool/default" || report.NewNodes[0].InstanceType != "m5.2xlarge" {
		t.Errorf("new nodes %+v, want one m5.2xlarge of nodepool/default", report.NewNodes)
	}

	in.NodePools[0].Spec.Weight = nil
	report = plan.Provisioning(context.Background(), pendingPod("web", "1"), in, lister{})
	if len(report.NewNodes) != 1 || report.NewNodes[0].Pool != "provisioner/default" || report.NewNodes[0].InstanceType == "m5.2xlarge" {
		t.Errorf("new nodes %+v, want the Provisioner's cheaper node once the NodePool weighs as little", report.NewNodes)
	}
}

// TestPlanHoldsMinValuesToTheControllersPolicy: a NodePool asking more instance types than its
// requirements leave is refused under Strict and planned under BestEffort, as the controller
// plans it with that --min-values-policy.
func TestPlanHoldsMinValuesToTheControllersPolicy(t *testing.T) {
	in := plan.Pools{
		NodePools: []v1.NodePool{nodePool("default", "ready", func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.2xlarge"}, MinValues: ptr.To(1)},
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(2)})
		})},
		NodeClasses: classes(nodeClass("ready", metav1.ConditionTrue)),
	}
	for _, tc := range []struct {
		policy   scheduling.MinValuesPolicy
		newNodes int
	}{{"", 0}, {scheduling.MinValuesStrict, 0}, {scheduling.MinValuesBestEffort, 1}} {
		in.MinValuesPolicy = tc.policy
		report := plan.Provisioning(context.Background(), pendingPod("web", "1"), in, lister{})
		if len(report.NewNodes) != tc.newNodes {
			t.Errorf("policy %q: new nodes %+v, unschedulable %+v; want %d new nodes", tc.policy, report.NewNodes, report.Unschedulable, tc.newNodes)
		}
	}
}

// TestNodePoolConsolidation: the plan decides on NodePools' underutilized nodes as the
// disruption controller does, and says why it keeps each other node: a pod's do-not-disrupt,
// consolidateAfter not passed, a WhenEmpty policy, a NodeClaim without a node yet.
func TestNodePoolConsolidation(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	emptyOnly := nodePool("emptyonly", "ready", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty })
	in := plan.Pools{NodePools: []v1.NodePool{nodePool("default", "ready"), emptyOnly}, NodeClasses: classes(nodeClass("ready", metav1.ConditionTrue))}
	snapshot := &state.Snapshot{Now: now, InstanceTypes: map[string]*cloudprovider.InstanceType{}}
	add := func(name, nodePool string, consolidatable bool, pod *corev1.Pod) {
		labels := map[string]string{v1.NodePoolLabelKey: nodePool, corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelTopologyZone: "us-west-2a",
			v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name}
		nc := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nodePool + "-" + name, Labels: labels, CreationTimestamp: metav1.Time{Time: now.Add(-time.Hour)}},
			Status: v1.NodeClaimStatus{NodeName: name, ProviderID: "fake:///" + name, Conditions: []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}}}
		if consolidatable {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue})
		}
		snapshot.NodeClaims = append(snapshot.NodeClaims, nc)
		node := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Labels: labels,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}})
		snapshot.Nodes = append(snapshot.Nodes, *node)
		pod.Spec.NodeName = name
		pod.Status.Phase = corev1.PodRunning
		snapshot.Pods = append(snapshot.Pods, *pod)
	}
	owned := func(name string) *corev1.Pod {
		return builders.Pod(builders.PodOptions{Name: name, Requests: builders.Resources("cpu", "500m"),
			Owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}})
	}
	held := owned("held")
	held.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	add("a", "default", true, owned("a"))
	add("held", "default", true, held)
	add("young", "default", false, owned("young"))
	add("quiet", "emptyonly", true, owned("quiet"))
	snapshot.NodeClaims = append(snapshot.NodeClaims, v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-launching", Labels: map[string]string{v1.NodePoolLabelKey: "default"}}})

	got := plan.NodePoolConsolidation(context.Background(), snapshot, in, lister{}, nil, 0.1, disruption.ConsolidationSettings{MinSpotTypes: 15})
	reasons := map[string]string{}
	for _, k := range got.Kept {
		reasons[k.Name] = k.Reason
	}
	// The launching NodeClaim unsettles the cluster: nothing is taken, and the candidate says so.
	want := map[string]string{"a": plan.ReasonUnsettled, "held": disruption.BlockedDoNotDisruptPod, "young": plan.ReasonNotConsolidatable,
		"quiet": plan.ReasonConsolidationDisabled, "default-launching": plan.ReasonNotLaunched}
	if got.Action != "" || !maps.Equal(reasons, want) {
		t.Errorf("action %q, kept %v; want none, %v", got.Action, reasons, want)
	}

	snapshot.NodeClaims = snapshot.NodeClaims[:len(snapshot.NodeClaims)-1]
	got = plan.NodePoolConsolidation(context.Background(), snapshot, in, lister{}, nil, 0.1, disruption.ConsolidationSettings{MinSpotTypes: 15})
	if got.Action != "delete" || !slices.Equal(got.Nodes, []string{"a"}) || got.SavingPerHour <= 0 {
		t.Errorf("consolidation %+v, want node a deleted with a saving (its pod fits on the others)", got)
	}
	var table strings.Builder
	if err := plan.Write(&table, &plan.Report{NodePoolConsolidation: got}, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodePool consolidation: delete a, saving $", "DisruptionBlockedByPodAnnotation", "NotConsolidatable"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table\n%s\ndoes not say %q", table.String(), want)
		}
	}
}
