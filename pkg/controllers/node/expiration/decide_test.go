package expiration_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// node is a Ready m5.xlarge node of the provisioner, age old, with pods of cpu each.
func node(name, provisioner string, age time.Duration, cpus ...string) scheduling.Node {
	var it = fake.DefaultInstanceTypes()[3] // m5.xlarge
	n := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Allocatable: it.Allocatable(), Capacity: it.Capacity,
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: provisioner, corev1.LabelInstanceTypeStable: it.Name,
			corev1.LabelTopologyZone: "us-west-2a", v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand,
			corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name},
		Finalizers: []string{v1alpha5.TerminationFinalizer}})
	n.CreationTimestamp = metav1.Time{Time: now.Add(-age)}
	var bound []*corev1.Pod
	for i, cpu := range cpus {
		p := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("%s-%d", name, i), NodeName: name, Requests: builders.Resources("cpu", cpu)})
		p.Status.Phase = corev1.PodRunning
		bound = append(bound, p)
	}
	return scheduling.Node{Node: n, Pods: bound}
}

func TestDecide(t *testing.T) {
	withTTL := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring", Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}}}})
	withTTL.Spec.TTLSecondsUntilExpired = ptr.To[int64](3600)
	without := builders.Provisioner(builders.ProvisionerOptions{Name: "forever"})
	provisioners := []consolidation.Provisioner{
		{Provisioner: withTTL, InstanceTypes: fake.DefaultInstanceTypes()},
		{Provisioner: without, InstanceTypes: fake.DefaultInstanceTypes()},
	}
	deleting := node("deleting", "expiring", time.Hour)
	deleting.Node.DeletionTimestamp = &metav1.Time{Time: now}
	launching := node("launching", "forever", time.Minute)
	launching.Node.Spec.Taints = []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	// A replacement Karpenter has opened whose not-ready taint the node lifecycle controller
	// has yet to lift: the expired node's pods will fit there in a moment.
	opening := node("opening", "forever", time.Minute)
	opening.Node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	// A node that went NotReady is not on its way: it does not hold expiry back.
	broken := node("broken", "forever", time.Minute)
	broken.Node.Status.Conditions[0].Status = corev1.ConditionFalse
	broken.Node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	// Finding 34.7: deleted, it would go without a drain.
	unfinalized := node("unfinalized", "expiring", 4*time.Hour)
	unfinalized.Node.Finalizers = nil
	for _, tc := range []struct {
		name    string
		nodes   []scheduling.Node
		pending int
		want    string
	}{
		{"a young node is kept", []scheduling.Node{node("young", "expiring", 59*time.Minute, "1")}, 0, "[]"},
		{"an expired node whose pods fit elsewhere is deleted", []scheduling.Node{node("old", "expiring", 2*time.Hour, "1"), node("roomy", "forever", time.Minute)}, 0, "[old delete]"},
		{"an expired node whose pods fit nowhere else gets capacity first", []scheduling.Node{node("old", "expiring", 2*time.Hour, "1"), node("full", "forever", time.Minute, "3500m")}, 0, "[old launch 1]"},
		{"an empty expired node is deleted", []scheduling.Node{node("old", "expiring", 2*time.Hour)}, 0, "[old delete]"},
		{"the oldest expires first, one at a time", []scheduling.Node{node("old", "expiring", 2*time.Hour), node("older", "expiring", 3*time.Hour)}, 0, "[older delete]"},
		{"a node without its termination finalizer waits for it, the next oldest expires", []scheduling.Node{node("old", "expiring", 2*time.Hour), unfinalized}, 0, "[old delete]"},
		{"nothing expires while a node of the provisioner is deleted", []scheduling.Node{node("old", "expiring", 2*time.Hour), deleting}, 0, "[]"},
		{"nothing expires while a node launches", []scheduling.Node{node("old", "expiring", 2*time.Hour), launching}, 0, "[]"},
		{"nothing expires while a Ready node still has its not-ready taint", []scheduling.Node{node("old", "expiring", 2*time.Hour, "1"), opening}, 0, "[]"},
		{"a NotReady node does not hold expiry back", []scheduling.Node{node("old", "expiring", 2*time.Hour), broken}, 0, "[old delete]"},
		{"nothing expires while pods wait", []scheduling.Node{node("old", "expiring", 2*time.Hour)}, 1, "[]"},
		{"a provisioner without a TTL keeps its nodes", []scheduling.Node{node("ancient", "forever", 1000*time.Hour)}, 0, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, d := range expiration.Decide(consolidation.Snapshot{Nodes: tc.nodes, Provisioners: provisioners, Pending: tc.pending, Now: now}) {
				if d.Delete {
					got = append(got, d.Node.Name+" delete")
				} else {
					got = append(got, fmt.Sprintf("%s launch %d", d.Node.Name, len(d.Launch)))
				}
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("decisions %v, want %s", got, tc.want)
			}
		})
	}
}
