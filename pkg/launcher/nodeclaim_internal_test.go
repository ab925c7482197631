package launcher

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestGroupKeyNamesTheNodeClaims(t *testing.T) {
	key := groupKey([]string{"default-aaaaa", "default-bbbbb"})
	if got := groupKey([]string{"default-bbbbb", "default-aaaaa"}); got != key {
		t.Errorf("the same names in another order give another key: %s, %s", got, key)
	}
	for name, other := range map[string]string{
		"another name": groupKey([]string{"default-aaaaa", "default-ccccc"}),
		"fewer names":  groupKey([]string{"default-aaaaa"}),
	} {
		if other == key {
			t.Errorf("%s gives the same key", name)
		}
	}
	if len(key) > 64 {
		t.Errorf("key %q is longer than the 64 characters an EC2 client token takes", key)
	}
	if a, b := newName("default"), newName("default"); a == b || len(a) != len("default-")+nameSuffixLength {
		t.Errorf("names %q and %q, want default-<%d random characters>, each its own", a, b, nameSuffixLength)
	}
}

func TestRequirementsAreWhatANodeClaimMayHold(t *testing.T) {
	it := fake.DefaultInstanceTypes()[0]
	candidates := []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}, {InstanceType: it, Offering: it.Offerings[2]}}
	got := requirements([]corev1.NodeSelectorRequirement{
		{Key: v1alpha5.ProvisionerNameLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
		{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"hostname-placeholder-0001"}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{"ml"}},
		{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"-1"}},
		{Key: "example.com/size", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
	}, candidates, nil)
	var keys []string
	for _, r := range got {
		keys = append(keys, r.Key)
	}
	want := []string{"example.com/team", "example.com/size", corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey}
	if !slices.Equal(keys, want) {
		t.Errorf("requirement keys %v, want %v: karpenter.sh's own, the hostname and negative integers left out, the candidates' types, zones and capacity types in the scheduler's stead", keys, want)
	}
	zones := got[3].Values
	if len(zones) != 2 || zones[0] != it.Offerings[0].Zone || zones[1] != it.Offerings[2].Zone {
		t.Errorf("zones %v, want the candidates' in their order", zones)
	}
}

func TestAssignIsTheSameForALaunchAndItsResumption(t *testing.T) {
	claim := func(name, providerID string) *v1.NodeClaim {
		nc := &v1.NodeClaim{}
		nc.Name, nc.Status.ProviderID = name, providerID
		return nc
	}
	instance := func(id string) *cloudprovider.Instance {
		return &cloudprovider.Instance{ID: id, ProviderID: "fake:///a/" + id}
	}
	instances := []*cloudprovider.Instance{instance("i-3"), instance("i-1"), instance("i-2")}
	a, b, c := claim("p-a", ""), claim("p-b", ""), claim("p-c", "")
	pairs, unlaunched := Assign([]*v1.NodeClaim{c, a, b}, instances)
	if pairs[a].ID != "i-1" || pairs[b].ID != "i-2" || pairs[c].ID != "i-3" || len(unlaunched) != 0 {
		t.Errorf("a: %v, b: %v, c: %v, unlaunched %v; want names in order to ids in order", pairs[a], pairs[b], pairs[c], unlaunched)
	}
	// Resumed after b recorded its instance: the others get the same as before.
	b = claim("p-b", "fake:///a/i-2")
	pairs, _ = Assign([]*v1.NodeClaim{a, b, c}, instances)
	if pairs[a].ID != "i-1" || pairs[c].ID != "i-3" || len(pairs) != 2 {
		t.Errorf("resumed: a: %v, c: %v (%d pairs); want i-1 and i-3 again", pairs[a], pairs[c], len(pairs))
	}
	// Fewer instances than NodeClaims: the last by name go without.
	pairs, unlaunched = Assign([]*v1.NodeClaim{claim("p-a", ""), claim("p-b", ""), claim("p-c", "")}, instances[:1])
	if len(pairs) != 1 || len(unlaunched) != 2 || unlaunched[0].Name != "p-b" {
		t.Errorf("%d pairs, unlaunched %v; want p-a launched, p-b and p-c not", len(pairs), unlaunched)
	}
}

// TestLaunchedNodeClaimRegistersItsNode: the Node a kubelet registers from Karpenter's user
// data, matched to the launched NodeClaim, carries what the NodeClaim decided.
func TestLaunchedNodeClaimRegistersItsNode(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Labels: map[string]string{"team": "ml"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}})
	it := fake.DefaultInstanceTypes()[0]
	instance := &cloudprovider.Instance{ProviderID: "fake:///us-west-2b/i-1", ID: "i-1", InstanceType: it.Name, Zone: "us-west-2b",
		CapacityType: v1alpha5.CapacityTypeSpot, NodeName: "ip-10-0-0-1.us-west-2.compute.internal",
		Labels: map[string]string{corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: "us-west-2b", v1alpha5.CapacityTypeLabelKey: "spot"}}
	hold := corev1.Taint{Key: v1alpha5.LaunchingTaintKey, Effect: corev1.TaintEffectNoSchedule}
	nc := newNodeClaim("default-abcde", Request{Pool: Pool{Provisioner: p}, StartupTaints: []corev1.Taint{hold}}, &scheduling.NewNode{Pool: pools.Provisioner(p.Name)}, map[string]string{v1alpha5.ReplacesAnnotationKey: "old"})
	nc.UID = "nc-uid"
	nc = launched(nc, instance, it)
	kubelet := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: instance.NodeName, Labels: map[string]string{corev1.LabelHostname: instance.NodeName, "team": "ml", v1alpha5.ProvisionerNameLabelKey: "default"}},
		Spec:       corev1.NodeSpec{ProviderID: instance.ProviderID, Taints: append(slices.Clone(p.Spec.Taints), nodeclaims.UnregisteredTaint)},
	}
	node := nodeclaims.Register(nc, kubelet)
	for key, want := range map[string]string{
		"team":                           "ml",
		v1alpha5.ProvisionerNameLabelKey: "default",
		corev1.LabelTopologyZone:         "us-west-2b",
		corev1.LabelInstanceTypeStable:   it.Name,
		v1alpha5.CapacityTypeLabelKey:    "spot",
		corev1.LabelHostname:             instance.NodeName,
	} {
		if node.Labels[key] != want {
			t.Errorf("label %s = %q, want %q", key, node.Labels[key], want)
		}
	}
	if node.Name != instance.NodeName || node.Spec.ProviderID != instance.ProviderID || node.Annotations[v1alpha5.ReplacesAnnotationKey] != "old" {
		t.Errorf("node %s %s %v, want the instance's name and provider id, the NodeClaim's annotations", node.Name, node.Spec.ProviderID, node.Annotations)
	}
	if !slices.Equal(node.Spec.Taints, append(slices.Clone(p.Spec.Taints), hold)) {
		t.Errorf("taints %v, want the provisioner's and the hold, the unregistered taint gone", node.Spec.Taints)
	}
	if !slices.Equal(node.Finalizers, []string{v1.TerminationFinalizer}) || len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != "nc-uid" {
		t.Errorf("finalizers %v, owners %v; want the termination finalizer and the NodeClaim", node.Finalizers, node.OwnerReferences)
	}
	if nc.Status.ProviderID != instance.ProviderID || nc.Status.ImageID != instance.ImageID || !nc.IsTrue(v1.ConditionTypeLaunched) || nc.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("nodeclaim status %+v, want the instance recorded, Launched", nc.Status)
	}
}

// TestNodeClaimMinValues: a NodePool's NodeClaim carries the minValues of its requirements, as
// its candidates meet them, and says whether they were relaxed: by the scheduler, or by
// candidates that give fewer values than minValues asks.
func TestNodeClaimMinValues(t *testing.T) {
	types := fake.DefaultInstanceTypes()
	offered := func(n int) []cloudprovider.Candidate {
		var out []cloudprovider.Candidate
		for _, it := range types[:n] {
			out = append(out, cloudprovider.Candidate{InstanceType: it, Offering: it.Offerings[0]})
		}
		return out
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "flexible"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(2)},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}, MinValues: ptr.To(1)},
	}
	scheduled := []corev1.NodeSelectorRequirement{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}
	for _, tc := range []struct {
		name             string
		candidates       []cloudprovider.Candidate
		scheduledRelaxed bool
		wantTypes        int
		wantRelaxed      string
	}{
		{"met", offered(3), false, 2, "false"},
		{"too few candidates", offered(1), false, 1, "true"},
		{"relaxed by the scheduler", offered(3), true, 2, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &scheduling.NewNode{Pool: pools.NodePool(np.Name), Requirements: scheduled, MinValuesRelaxed: tc.scheduledRelaxed}
			nc := newNodeClaim("flexible-abcde", Request{Pool: Pool{NodePool: np}, Candidates: tc.candidates}, n, map[string]string{})
			minValues := map[string]int{}
			for _, r := range nc.Spec.Requirements {
				if r.MinValues != nil {
					minValues[r.Key] = *r.MinValues
				}
			}
			if minValues[corev1.LabelInstanceTypeStable] != tc.wantTypes || minValues[corev1.LabelOSStable] != 1 || len(minValues) != 2 {
				t.Errorf("minValues %v, want %d instance types and 1 os", minValues, tc.wantTypes)
			}
			if got := nc.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey]; got != tc.wantRelaxed {
				t.Errorf("relaxed annotation %q, want %q", got, tc.wantRelaxed)
			}
		})
	}
	// A Provisioner's NodeClaim has no minValues to say anything of.
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default"})
	nc := newNodeClaim("default-abcde", Request{Pool: Pool{Provisioner: p}, Candidates: offered(1)}, &scheduling.NewNode{Pool: pools.Provisioner(p.Name)}, map[string]string{})
	if _, ok := nc.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey]; ok {
		t.Errorf("a Provisioner's NodeClaim annotated %v", nc.Annotations)
	}
}

// TestChosenLabelsReachTheNodeClaimAndTheCloud: the labels the plan chose for a request's nodes
// are on each NodeClaim and in the cloud's launch request beside the pool's, and a launch
// resumed from the NodeClaim asks for them again, the labels its instance brought excluded.
func TestChosenLabelsReachTheNodeClaimAndTheCloud(t *testing.T) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "spot"}}
	np.Spec.Template.Labels = map[string]v1.LabelValue{"team": "web"}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	pool := Pool{NodePool: np}
	chosen := map[string]string{"capacity-spread": "3"}
	nc := newNodeClaim("spot-abcde", Request{Pool: pool, Labels: chosen}, &scheduling.NewNode{Pool: pools.NodePool("spot")}, map[string]string{})
	if nc.Labels["capacity-spread"] != "3" || nc.Labels["team"] != "web" || nc.Labels[v1.NodePoolLabelKey] != "spot" {
		t.Errorf("nodeclaim labels %v, want the pool's and capacity-spread=3", nc.Labels)
	}
	if labels := pool.launchRequest(nil, chosen, "group", 1).Labels; labels["capacity-spread"] != "3" || labels["team"] != "web" {
		t.Errorf("launch request labels %v, want the pool's and capacity-spread=3", labels)
	}
	// Once launched, the NodeClaim also has its instance's labels: a resumed launch leaves them out.
	nc.Labels[corev1.LabelInstanceTypeStable] = "m5.large"
	nc.Labels["karpenter.k8s.aws/instance-family"] = "m5"
	if got := pool.chosenLabels(nc); len(got) != 1 || got["capacity-spread"] != "3" {
		t.Errorf("chosen labels read back %v, want capacity-spread=3 alone", got)
	}
}
