package provisioning_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/nodeclasses"
)

// nodePool creates a NodePool of the class whose nodes are labelled and tainted for the
// subtest, as provisioner does.
func (s *suite) nodePool(t *testing.T, name, class string, mutate func(*v1.NodePool)) {
	t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
		NodeClaimTemplateObjectMeta: v1.NodeClaimTemplateObjectMeta{Labels: map[string]v1.LabelValue{"suite": v1.LabelValue(name)}},
		Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			Taints:       []v1.Taint{{Key: "dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: class},
		},
	}}}
	if mutate != nil {
		mutate(np)
	}
	s.create(t, np)
}

// nodePoolTakesItsPods: a NodePool of a Ready class launches NodeClaims that name its class and
// carry its label, and its pods run on their nodes; a Provisioner of the same name and labels,
// weighing 0, launches nothing for pods both could take.
func (s *suite) nodePoolTakesItsPods(t *testing.T) {
	nodeclasses.Ready(t, s.env.Client, "takes-its-pods")
	s.nodePool(t, "both", "takes-its-pods", func(np *v1.NodePool) {
		np.Spec.Weight = ptr.To[int32](10)
		np.Spec.Template.Annotations = map[string]string{"example.com/owner": "team-a"}
		np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h")
	})
	selector, tolerations := s.provisioner(t, "both", nil)
	pods := s.pods(t, 3, builders.PodOptions{Requests: builders.Resources("cpu", "1500m"), NodeSelector: selector, Tolerations: tolerations})
	for pod, node := range s.running(t, pods) {
		if node.Labels[v1.NodePoolLabelKey] != "both" || node.Labels[v1alpha5.ProvisionerNameLabelKey] != "" {
			t.Errorf("pod %s runs on node %s labelled %v, want the NodePool's", pod, node.Name, node.Labels)
		}
	}
	var claims v1.NodeClaimList
	if err := s.env.Client.List(t.Context(), &claims, client.MatchingLabels{v1.NodePoolLabelKey: "both"}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("no NodeClaim of the NodePool")
	}
	for _, nc := range claims.Items {
		ref := nc.Spec.NodeClassRef
		if ref == nil || ref.Kind != "EC2NodeClass" || ref.Name != "takes-its-pods" || ref.Group != "karpenter.k8s.aws" {
			t.Errorf("nodeclaim %s names class %+v, want the NodePool's EC2NodeClass", nc.Name, ref)
		}
		if nc.Annotations["example.com/owner"] != "team-a" || nc.Spec.ExpireAfter.Duration == nil || nc.Spec.ExpireAfter.Duration.String() != "24h0m0s" {
			t.Errorf("nodeclaim %s: annotations %v, expireAfter %v; want the template's", nc.Name, nc.Annotations, nc.Spec.ExpireAfter)
		}
	}
	if n := s.launches("both"); n != 0 {
		t.Errorf("the Provisioner launched %d instances for pods the heavier NodePool takes", n)
	}

	// Its NodeClaims are the NodePool's: deleting it deletes them (the garbage collector
	// follows their owner reference), and so their nodes.
	np := &v1.NodePool{}
	if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: "both"}, np); err != nil {
		t.Fatal(err)
	}
	if err := s.env.Client.Delete(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the NodePool's NodeClaims deleted with it", func() (bool, string, error) {
		var list v1.NodeClaimList
		if err := s.env.Client.List(t.Context(), &list, client.MatchingLabels{v1.NodePoolLabelKey: "both"}); err != nil {
			return false, "", err
		}
		for _, nc := range list.Items {
			if nc.DeletionTimestamp == nil {
				return false, "nodeclaim " + nc.Name + " not deleted", nil
			}
		}
		return true, "", nil
	}, eventually.Timeout(pollTimeout))
}

// nodePoolNodeLimit: limits.nodes caps the NodePool's nodes; a pod beyond it waits, told why.
func (s *suite) nodePoolNodeLimit(t *testing.T) {
	nodeclasses.Ready(t, s.env.Client, "node-limit")
	s.nodePool(t, "node-limit", "node-limit", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}})
		np.Spec.Limits = v1.Limits{v1.LimitNodes: builders.Resources("nodes", "1")["nodes"]}
	})
	selector := map[string]string{"suite": "node-limit"}
	tolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "node-limit", Effect: corev1.TaintEffectNoSchedule}}
	pods := s.pods(t, 2, builders.PodOptions{Requests: builders.Resources("cpu", "1500m"), NodeSelector: selector, Tolerations: tolerations})
	waiting := s.oneRunningOneWaiting(t, pods)
	events.Wait(t, s.env.Client, waiting.Name, provisioning.ReasonUnprovisionable, "limits", eventually.Timeout(pollTimeout))
	var claims v1.NodeClaimList
	if err := s.env.Client.List(t.Context(), &claims, client.MatchingLabels{v1.NodePoolLabelKey: "node-limit"}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Errorf("%d NodeClaims under limits.nodes 1", len(claims.Items))
	}
}

// nodePoolsChooseASpreadLabel: upstream's capacity-spread pattern. Two NodePools require a label
// of their own on their nodes, capacity-spread, the spot one with four values and the on-demand
// one with one; a Deployment's pods spread over it with a skew of one. Each NodeClaim carries the
// value its pool chose, its node registers with it, and kube-scheduler, which enforces the
// spread, runs the pods two to each value: four to one, spot to on-demand. kube-scheduler counts
// only the domains of nodes it sees, so pods bound while some nodes are still to register may pile
// up (three on one value, one on another, in a CI run): the pools' startup taint keeps every pod
// off until all five nodes are there, as a CNI's keeps them off a node until it is set up.
func (s *suite) nodePoolsChooseASpreadLabel(t *testing.T) {
	const key, suite, startupTaint = "capacity-spread", "capacity-spread", "example.com/network-not-ready"
	nodeclasses.Ready(t, s.env.Client, suite)
	for name, pool := range map[string]struct {
		capacityType string
		values       []string
	}{"spread-spot": {v1.CapacityTypeSpot, []string{"2", "3", "4", "5"}}, "spread-on-demand": {v1.CapacityTypeOnDemand, []string{"1"}}} {
		s.nodePool(t, name, suite, func(np *v1.NodePool) {
			np.Spec.Template.Labels["suite"] = suite
			np.Spec.Template.Spec.Taints[0].Value = suite
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.capacityType}},
				v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: pool.values})
			np.Spec.Template.Spec.StartupTaints = []v1.Taint{{Key: startupTaint, Effect: corev1.TaintEffectNoSchedule}}
		})
	}
	app := map[string]string{"app": suite}
	pods := s.pods(t, 10, builders.PodOptions{
		Labels: app, Requests: builders.Resources("cpu", "500m"), NodeSelector: map[string]string{"suite": suite},
		Tolerations:    []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: suite, Effect: corev1.TaintEffectNoSchedule}},
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(key, corev1.DoNotSchedule, app)},
	})
	// Registration puts the startup taint on and lifts a taint of its own: the patch, which tests
	// the taint's place in the list, is read again and retried until all five are lifted.
	eventually.Holds(t, "the five nodes register, and their startup taint is lifted", func() (bool, string, error) {
		var list corev1.NodeList
		if err := s.env.Client.List(t.Context(), &list, client.MatchingLabels{"suite": suite, v1.NodeRegisteredLabelKey: "true"}); err != nil {
			return false, "", err
		}
		if len(list.Items) < 5 {
			return false, fmt.Sprintf("%d nodes", len(list.Items)), nil
		}
		tainted := 0
		for i := range list.Items {
			patch, err := nodes.RemoveTaintPatch(&list.Items[i], startupTaint)
			if err != nil || patch == nil {
				continue
			}
			tainted++
			if err := s.env.Client.Patch(t.Context(), &list.Items[i], client.RawPatch(types.JSONPatchType, patch)); err != nil && !nodes.ChangedSinceRead(err) {
				return false, "", fmt.Errorf("lifting the startup taint of node %s, %w", list.Items[i].Name, err)
			}
		}
		return tainted == 0, fmt.Sprintf("%d nodes still tainted", tainted), nil
	}, eventually.Timeout(pollTimeout))
	perValue := map[string]int{}
	for pod, node := range s.running(t, pods) {
		value, pool := node.Labels[key], node.Labels[v1.NodePoolLabelKey]
		perValue[value]++
		if (value == "1") != (pool == "spread-on-demand") || value == "" {
			t.Errorf("pod %s runs on node %s of %s with %s=%q", pod, node.Name, pool, key, value)
		}
	}
	if len(perValue) != 5 || slices.ContainsFunc(slices.Collect(maps.Values(perValue)), func(n int) bool { return n != 2 }) {
		t.Errorf("pods per %s value %v, want 2 on each of 1 – 5", key, perValue)
	}
	var claims v1.NodeClaimList
	if err := s.env.Client.List(t.Context(), &claims, client.MatchingLabels{"suite": suite}); err != nil {
		t.Fatal(err)
	}
	// Nodes waiting for their startup taint are room for the pods nominated there, not a reason
	// to launch more (counted as taints, they made every pass launch another node).
	if len(claims.Items) != 5 {
		t.Errorf("%d NodeClaims, want 5: one for each value", len(claims.Items))
	}
	for _, nc := range claims.Items {
		value := nc.Labels[key]
		if !slices.ContainsFunc(nc.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool {
			return r.Key == key && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{value})
		}) {
			t.Errorf("nodeclaim %s labelled %s=%q requires %v", nc.Name, key, value, nc.Spec.Requirements)
		}
	}
}
