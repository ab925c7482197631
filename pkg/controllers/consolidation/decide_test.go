package consolidation_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/disruption"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var settings = consolidation.Settings{MinNodeAge: 5 * time.Minute, Threshold: 0.1, MinSpotTypes: 1}

// provisioner consolidates amd64 nodes of the capacity type given.
func provisioner(name, capacityType string, enabled bool) consolidation.Provisioner {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{capacityType}},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
	}})
	p.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(enabled)}
	return consolidation.Provisioner{Provisioner: p, InstanceTypes: fake.DefaultInstanceTypes()}
}

func instanceType(name string) *cloudprovider.InstanceType {
	for _, it := range fake.DefaultInstanceTypes() {
		if it.Name == name {
			return it
		}
	}
	panic("no instance type " + name)
}

// node is a Ready node an hour old, launched by the provisioner as the instance type.
func node(name, provisioner, typeName, capacityType string, bound ...*corev1.Pod) scheduling.Node {
	it := instanceType(typeName)
	n := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Allocatable: it.Allocatable(), Capacity: it.Capacity,
		Labels: map[string]string{
			v1alpha5.ProvisionerNameLabelKey: provisioner, corev1.LabelInstanceTypeStable: typeName, corev1.LabelTopologyZone: "us-west-2a",
			v1alpha5.CapacityTypeLabelKey: capacityType, corev1.LabelArchStable: it.Labels[corev1.LabelArchStable], corev1.LabelOSStable: "linux",
			corev1.LabelHostname: name,
		},
		Finalizers: []string{v1alpha5.TerminationFinalizer}})
	n.CreationTimestamp = metav1.Time{Time: now.Add(-time.Hour)}
	for _, p := range bound {
		p.Spec.NodeName = name
	}
	return scheduling.Node{Node: n, Pods: bound}
}

// pod is a ReplicaSet's pod requesting cpu and memory.
func pod(name, cpu, memory string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := builders.Pod(builders.PodOptions{Name: name, Labels: map[string]string{"app": name},
		Requests: builders.Resources("cpu", cpu, "memory", memory),
		Owners:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}})
	p.Status.Phase = corev1.PodRunning
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestDecide(t *testing.T) {
	onDemand := provisioner("default", v1alpha5.CapacityTypeOnDemand, true)
	spot := provisioner("spot", v1alpha5.CapacityTypeSpot, true)
	disabled := provisioner("manual", v1alpha5.CapacityTypeOnDemand, false)
	oneAtATime := provisioner("single", v1alpha5.CapacityTypeOnDemand, true)
	oneAtATime.Provisioner.Spec.Consolidation.Budget = ptr.To(intstr.FromInt32(1))
	allAtOnce := provisioner("all", v1alpha5.CapacityTypeOnDemand, true)
	allAtOnce.Provisioner.Spec.Consolidation.Budget = ptr.To(intstr.FromString("100%"))
	// limited counts the 8 cpus of one m5.2xlarge against a limit of cpu cpus.
	limited := func(cpu string) consolidation.Provisioner {
		p := provisioner("default", v1alpha5.CapacityTypeOnDemand, true)
		p.Provisioner.Spec.Limits = &v1alpha5.Limits{Resources: builders.Resources("cpu", cpu)}
		p.Provisioner.Status.Resources = builders.Resources("cpu", "8")
		return p
	}
	noController := func(p *corev1.Pod) { p.OwnerReferences = nil }
	doNotEvict := func(p *corev1.Pod) { p.Annotations = map[string]string{pods.DoNotEvictAnnotationKey: "true"} }
	deleting := node("going", "single", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
	deleting.Node.DeletionTimestamp = &metav1.Time{Time: now}
	young := node("young", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("y", "1", "1Gi"))
	young.Node.CreationTimestamp = metav1.Time{Time: now.Add(-time.Minute)}
	notReady := node("unready", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("u", "1", "1Gi"))
	notReady.Node.Status.Conditions[0].Status = corev1.ConditionUnknown
	guarded := policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	// replacing is an empty node consolidation launched to replace the nodes named.
	replacing := func(replaces string) scheduling.Node {
		n := node("replacement", "default", "m5.large", v1alpha5.CapacityTypeOnDemand)
		n.Node.Annotations = map[string]string{v1alpha5.ReplacesAnnotationKey: replaces}
		n.Node.CreationTimestamp = metav1.Time{Time: now.Add(-10 * time.Minute)}
		return n
	}
	// unfinalized lost its termination finalizer: deleted, it would go without a drain.
	unfinalized := node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))
	unfinalized.Node.Finalizers = nil
	// big is a node the pods of a small one fit next to.
	big := func(name, provisioner string) scheduling.Node {
		return node(name, provisioner, "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod(name+"-app", "6", "20Gi"))
	}

	for _, tc := range []struct {
		name         string
		provisioners []consolidation.Provisioner
		nodes        []scheduling.Node
		budgets      []policyv1.PodDisruptionBudget
		pending      int
		settings     *consolidation.Settings
		action       consolidation.Action
		removed      []string
		replacement  string
		replacedBy   string
		skipped      map[string]string
	}{
		{
			// Deleting expensive would save more, but the replacement was launched for r5: a
			// pass after a restart finishes that rather than deciding afresh.
			name: "once a replacement is Ready the nodes it replaces are deleted",
			nodes: []scheduling.Node{
				replacing("r5"),
				node("r5", "default", "r5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "500m", "5Gi")),
				node("expensive", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("b", "500m", "1Gi")),
			},
			action: consolidation.Delete, removed: []string{"r5"}, replacedBy: "replacement",
		},
		{
			name: "a replaced node that can no longer go is decided on afresh",
			nodes: []scheduling.Node{
				replacing("r5"),
				node("r5", "default", "r5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "500m", "5Gi", doNotEvict)),
				node("expensive", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("b", "500m", "1Gi")),
			},
			action: consolidation.Delete, removed: []string{"expensive"},
			skipped: map[string]string{"r5": consolidation.ReasonDoNotEvict},
		},
		{
			name: "a node of a replaced name created after the replacement is another node",
			nodes: []scheduling.Node{
				replacing("r5"),
				func() scheduling.Node {
					n := node("r5", "default", "r5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "500m", "5Gi"))
					n.Node.CreationTimestamp = metav1.Time{Time: now.Add(-6 * time.Minute)}
					return n
				}(),
				node("expensive", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("b", "500m", "1Gi")),
			},
			action: consolidation.Delete, removed: []string{"expensive"},
		},
		{
			name:   "a node whose pods fit elsewhere is deleted",
			nodes:  []scheduling.Node{big("big", "default"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			action: consolidation.Delete, removed: []string{"small"},
			skipped: map[string]string{"big": disruption.ConsolidationNotCheaper},
		},
		{
			// Finding 34.7.
			name:    "a node without its termination finalizer waits for it",
			nodes:   []scheduling.Node{big("big", "default"), unfinalized},
			skipped: map[string]string{"big": disruption.ConsolidationNotCheaper},
		},
		{
			name:   "an oversized node is replaced with the cheapest type that fits",
			nodes:  []scheduling.Node{node("oversized", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			action: consolidation.Replace, removed: []string{"oversized"}, replacement: "t3.medium",
		},
		{
			name:         "a replacement is not launched past the Provisioner's limits",
			provisioners: []consolidation.Provisioner{limited("9")},
			nodes:        []scheduling.Node{node("oversized", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			skipped:      map[string]string{"oversized": disruption.ConsolidationLimits},
		},
		{
			name:         "a replacement is launched when the limits leave room for it beside the old node",
			provisioners: []consolidation.Provisioner{limited("10")},
			nodes:        []scheduling.Node{node("oversized", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			action:       consolidation.Replace, removed: []string{"oversized"}, replacement: "t3.medium",
		},
		{
			name:     "a replacement saving less than the threshold is not made",
			nodes:    []scheduling.Node{node("r5", "default", "r5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "500m", "5Gi"))},
			settings: &consolidation.Settings{MinNodeAge: settings.MinNodeAge, Threshold: 0.3},
			skipped:  map[string]string{"r5": disruption.ConsolidationNotCheaper},
		},
		{
			name:   "the same replacement is made above the threshold",
			nodes:  []scheduling.Node{node("r5", "default", "r5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "500m", "5Gi"))},
			action: consolidation.Replace, removed: []string{"r5"}, replacement: "m5.large",
		},
		{
			name: "two nodes at the default budget of 10% are considered one at a time",
			nodes: []scheduling.Node{
				node("left", "default", "m5.large", v1alpha5.CapacityTypeOnDemand, pod("l", "800m", "5Gi")),
				node("right", "default", "m5.large", v1alpha5.CapacityTypeOnDemand, pod("r", "800m", "5Gi")),
			},
			skipped: map[string]string{"left": disruption.ConsolidationNotCheaper, "right": disruption.ConsolidationNotCheaper},
		},
		{
			name: "two nodes are replaced by one when neither alone saves as much",
			nodes: []scheduling.Node{
				node("left", "all", "m5.large", v1alpha5.CapacityTypeOnDemand, pod("l", "800m", "5Gi")),
				node("right", "all", "m5.large", v1alpha5.CapacityTypeOnDemand, pod("r", "800m", "5Gi")),
			},
			provisioners: []consolidation.Provisioner{allAtOnce},
			action:       consolidation.Replace, removed: []string{"left", "right"}, replacement: "r5.large",
		},
		{
			name:         "a spot node is replaced by cheaper spot",
			provisioners: []consolidation.Provisioner{spot},
			nodes:        []scheduling.Node{node("spotty", "spot", "m5.2xlarge", v1alpha5.CapacityTypeSpot, pod("a", "1", "1Gi"))},
			action:       consolidation.Replace, removed: []string{"spotty"}, replacement: "t3.medium",
		},
		{
			name:         "a spot node is not replaced when too few types are cheaper",
			provisioners: []consolidation.Provisioner{spot},
			nodes:        []scheduling.Node{node("spotty", "spot", "m5.2xlarge", v1alpha5.CapacityTypeSpot, pod("a", "1", "1Gi"))},
			settings:     &consolidation.Settings{MinNodeAge: settings.MinNodeAge, Threshold: 0.1, MinSpotTypes: 100},
			skipped:      map[string]string{"spotty": disruption.ConsolidationSpotNotDiverse},
		},
		{
			name:         "a spot node is not replaced by spot with SpotToSpotConsolidation=false",
			provisioners: []consolidation.Provisioner{spot},
			nodes:        []scheduling.Node{node("spotty", "spot", "m5.2xlarge", v1alpha5.CapacityTypeSpot, pod("a", "1", "1Gi"))},
			settings:     &consolidation.Settings{MinNodeAge: settings.MinNodeAge, Threshold: 0.1, MinSpotTypes: 5, NoSpotToSpot: true},
			skipped:      map[string]string{"spotty": disruption.ConsolidationSpotToSpotOff},
		},
		{
			name:    "a do-not-evict pod keeps its node",
			nodes:   []scheduling.Node{big("big", "manual"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi", doNotEvict))},
			skipped: map[string]string{"small": consolidation.ReasonDoNotEvict},
		},
		{
			name:    "a pod without a controller keeps its node",
			nodes:   []scheduling.Node{big("big", "manual"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi", noController))},
			skipped: map[string]string{"small": consolidation.ReasonNoController},
		},
		{
			name:    "a PDB allowing no disruption keeps the node",
			nodes:   []scheduling.Node{big("big", "manual"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("guarded", "1", "1Gi"))},
			budgets: []policyv1.PodDisruptionBudget{guarded},
			skipped: map[string]string{"small": consolidation.ReasonPDB},
		},
		{
			name:    "a young node is kept",
			nodes:   []scheduling.Node{big("big", "manual"), young},
			skipped: map[string]string{"young": consolidation.ReasonTooYoung},
		},
		{
			name:    "a node not Ready is kept",
			nodes:   []scheduling.Node{big("big", "manual"), notReady},
			skipped: map[string]string{"unready": consolidation.ReasonNotReady},
		},
		{
			name:  "a Provisioner without consolidation keeps its nodes, unexplained",
			nodes: []scheduling.Node{big("big", "manual"), node("small", "manual", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
		},
		{
			name:    "a budget spent on a node being deleted keeps the others",
			nodes:   []scheduling.Node{big("big", "manual"), deleting, node("small", "single", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			skipped: map[string]string{"small": consolidation.ReasonBudget},
		},
		{
			name: "a node draining holds every node",
			nodes: []scheduling.Node{big("big", "default"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi")), func() scheduling.Node {
				n := node("draining", "manual", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("d", "1", "1Gi"))
				n.Node.DeletionTimestamp = &metav1.Time{Time: now}
				return n
			}()},
		},
		{
			name:    "pending pods hold every node",
			nodes:   []scheduling.Node{big("big", "default"), node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("a", "1", "1Gi"))},
			pending: 1,
		},
		{
			name: "a launching node holds every node",
			nodes: []scheduling.Node{big("big", "default"), func() scheduling.Node {
				n := node("new", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
				n.Node.Spec.Taints = []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()},
		},
		{
			// kube-controller-manager keeps node.kubernetes.io/not-ready on a node until it has
			// seen it Ready; a pass in between would find no room there and replace again.
			name: "a node Kubernetes still taints not-ready holds every node",
			nodes: []scheduling.Node{big("big", "default"), func() scheduling.Node {
				n := node("new", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand)
				n.Node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()},
		},
		{
			name:    "pods that fit nowhere keep their node",
			nodes:   []scheduling.Node{node("full", "default", "m5.large", v1alpha5.CapacityTypeOnDemand, pod("a", "1500m", "6Gi"))},
			skipped: map[string]string{"full": disruption.ConsolidationNotCheaper},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings
			// Spot is cheaper: where it may launch, every replacement is spot.
			provisioners := tc.provisioners
			if provisioners == nil {
				provisioners = []consolidation.Provisioner{onDemand, disabled, oneAtATime}
			}
			if tc.settings != nil {
				s = *tc.settings
			}
			decision := consolidation.Decide(consolidation.Snapshot{
				Nodes: tc.nodes, Provisioners: provisioners,
				Budgets: tc.budgets, Pending: tc.pending, Now: now,
			}, s)
			if decision.Action != tc.action {
				t.Fatalf("action %q, want %q (skipped %v, unsettled %q)", decision.Action, tc.action, decision.Skipped, decision.Unsettled)
			}
			var removed []string
			for _, n := range decision.Nodes {
				removed = append(removed, n.Name)
			}
			slices.Sort(removed)
			if decision.ReplacedBy != tc.replacedBy {
				t.Errorf("replaced by %q, want %q", decision.ReplacedBy, tc.replacedBy)
			}
			if !slices.Equal(removed, tc.removed) {
				t.Errorf("removes %v, want %v", removed, tc.removed)
			}
			if tc.replacement != "" {
				if len(decision.Replacements) != 1 || decision.Replacements[0].InstanceTypes[0].Name != tc.replacement {
					t.Errorf("replacements %+v, want one, %s first", decision.Replacements, tc.replacement)
				} else if decision.Saving < s.Threshold*decision.Price || decision.Replacements[0].Price >= decision.Price {
					t.Errorf("saving $%.4f/h of $%.4f/h", decision.Saving, decision.Price)
				}
			}
			skipped := map[string]string{}
			for name, e := range decision.Skipped {
				skipped[name] = e.Reason
				if e.Message == "" {
					t.Errorf("node %s skipped without a message", name)
				}
			}
			if fmt.Sprint(skipped) != fmt.Sprint(orEmpty(tc.skipped)) {
				t.Errorf("skipped %v, want %v", decision.Skipped, tc.skipped)
			}
		})
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// A pod with a volume moves only where its volume can follow: consolidation resolves claims
// as provisioning does, and respects an existing node's attach limit.
func TestDecideMovesPodsWithVolumes(t *testing.T) {
	withClaim := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	volume := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: cloudprovider.EBSCSIDriver, VolumeHandle: "vol-1"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}}},
			}}}},
		}}
	for _, tc := range []struct {
		name       string
		attachable *int32
		action     consolidation.Action
	}{
		{name: "the pod and its volume move to the node with room", action: consolidation.Delete},
		{name: "the node with room attaches no more EBS volumes: a cheaper node replaces small", attachable: ptr.To[int32](0), action: consolidation.Replace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			small := node("small", "default", "m5.xlarge", v1alpha5.CapacityTypeOnDemand, pod("db", "500m", "1Gi", withClaim))
			big := node("big", "default", "m5.2xlarge", v1alpha5.CapacityTypeOnDemand, pod("big-app", "6", "20Gi"))
			if tc.attachable != nil {
				big.CSINode = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
					Name: cloudprovider.EBSCSIDriver, NodeID: "big", Allocatable: &storagev1.VolumeNodeResources{Count: tc.attachable}}}}}
			}
			decision := consolidation.Decide(consolidation.Snapshot{
				Nodes:        []scheduling.Node{small, big},
				Provisioners: []consolidation.Provisioner{provisioner("default", v1alpha5.CapacityTypeOnDemand, true)},
				Question:     state.Question{Claims: []*corev1.PersistentVolumeClaim{claim}, Volumes: []*corev1.PersistentVolume{volume}},
				Now:          now,
			}, consolidation.Settings{Threshold: 0.1, MinNodeAge: time.Minute})
			if decision.Action != tc.action {
				t.Fatalf("action %q, want %q (skipped %v)", decision.Action, tc.action, decision.Skipped)
			}
			if len(decision.Nodes) != 1 || decision.Nodes[0].Name != "small" {
				t.Errorf("removes %v, want small", decision.Nodes)
			}
		})
	}
}
