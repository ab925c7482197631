package launcher

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/disruption"
	"karpenter.sh/karpenter/pkg/pods"
)

// LaunchGroupAnnotationKey is on the NodeClaims of one launch: the key of their group, which one
// cloud call launches for all of them. A launch resumed after a crash finds its group's instances
// by the key, and asks the cloud again under it.
const LaunchGroupAnnotationKey = "karpenter.sh/launch-group"

// nameSuffixLength is that of the random part of a NodeClaim's name, as upstream's.
const nameSuffixLength = 5

// newName is a NodeClaim name for a node of the owner: <owner>-<5 random characters>.
func newName(owner string) string {
	return owner + "-" + utilrand.String(nameSuffixLength)
}

// groupKey names a launch of the NodeClaims named names: the same names give the same key, so
// a launch asked again after a crash is the same launch to the cloud; new NodeClaims give a new
// key, so they never get an old launch's instances back.
func groupKey(names []string) string {
	h := sha256.New()
	for _, name := range slices.Sorted(slices.Values(names)) {
		fmt.Fprintln(h, name)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// labelValue is a value a NodeClaim requirement may hold.
var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// claimable is whether a requirement the scheduler rendered may stand on a NodeClaim: keys
// Karpenter sets itself (karpenter.sh/*, but the capacity type) and the hostname are refused
// there, as upstream's schema refuses them, and so are values no label can hold.
func claimable(r corev1.NodeSelectorRequirement) bool {
	domain, _, found := strings.Cut(r.Key, "/")
	if !found {
		domain = ""
	}
	if r.Key == corev1.LabelHostname || (strings.HasSuffix(domain, "karpenter.sh") && r.Key != v1.CapacityTypeLabelKey && r.Key != v1.NodePoolLabelKey) {
		return false
	}
	for _, value := range r.Values {
		if len(value) > 63 || !labelValue.MatchString(value) {
			return false
		}
	}
	if r.Operator == corev1.NodeSelectorOpGt || r.Operator == corev1.NodeSelectorOpLt {
		n, err := strconv.ParseInt(r.Values[0], 10, 64)
		return err == nil && n >= 0
	}
	return true
}

// requirements are what the node must satisfy: the scheduler's requirements that a NodeClaim
// may hold, with the instance types, zones and capacity types of the candidates in place of
// the scheduler's own for those keys, in the candidates' order (cheapest first), and the pool's
// minValues on their keys (withMinValues).
func requirements(scheduled []corev1.NodeSelectorRequirement, candidates []cloudprovider.Candidate, minValues map[string]int) []v1.NodeSelectorRequirementWithMinValues {
	decidedKeys := [...]string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1.CapacityTypeLabelKey}
	// Each key's values in the candidates' order, once: a set beside each list, as a large
	// pool's thousand candidates made a search of the list per candidate quadratic.
	var decided [len(decidedKeys)][]string
	var seen [len(decidedKeys)]sets.Set[string]
	for k := range seen {
		seen[k] = sets.New[string]()
	}
	for _, c := range candidates {
		for k, value := range [...]string{c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType} {
			if !seen[k].Has(value) {
				seen[k].Insert(value)
				decided[k] = append(decided[k], value)
			}
		}
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	for _, r := range scheduled {
		if slices.Contains(decidedKeys[:], r.Key) || !claimable(r) {
			continue
		}
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values)})
	}
	for k, key := range decidedKeys {
		if len(decided[k]) > 0 {
			out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: decided[k]})
		}
	}
	return withMinValues(out, candidates, minValues)
}

// withMinValues sets on the requirements the minValues of their keys, as the candidates meet
// them: a minValues the candidates fall short of (relaxed) is lowered to what they give, as
// upstream's relaxed NodeClaims state it. A key without a requirement gets one, Exists.
func withMinValues(out []v1.NodeSelectorRequirementWithMinValues, candidates []cloudprovider.Candidate, minValues map[string]int) []v1.NodeSelectorRequirementWithMinValues {
	for _, key := range slices.Sorted(maps.Keys(minValues)) {
		kept := ptr.To(min(minValues[key], cloudprovider.DistinctValues(candidates, key)))
		i := slices.IndexFunc(out, func(r v1.NodeSelectorRequirementWithMinValues) bool { return r.Key == key })
		if i < 0 {
			out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpExists, MinValues: kept})
			continue
		}
		out[i].MinValues = kept
	}
	return out
}

// minValuesRelaxed is whether the node launches with fewer values of a key than the pool's
// minValues: relaxed by the scheduler (MinValuesBestEffort), or by the candidates that the
// pool's limits left it.
func minValuesRelaxed(n *scheduling.NewNode, candidates []cloudprovider.Candidate, minValues map[string]int) bool {
	unmet, _ := cloudprovider.MinValuesUnmet(candidates, minValues)
	return n.MinValuesRelaxed || unmet != ""
}

// newNodeClaim is the NodeClaim of one of a request's nodes: named, labelled (the pool's labels
// and those the plan chose) and annotated as its group's, carrying the plan's decision (what it may launch as, what it must have room for),
// the pool's taints and the startup taints its launcher asks for. A NodePool's NodeClaim names
// its EC2NodeClass, takes the template's annotations, startup taints, expireAfter and
// terminationGracePeriod, and with minValues says whether they were relaxed; a Provisioner's
// names the Provisioner, whose spec.provider is its cloud configuration, and never expires by
// itself, as its ttlSecondsUntilExpired is read live.
func newNodeClaim(name string, request Request, n *scheduling.NewNode, annotations map[string]string) *v1.NodeClaim {
	pool, candidates, startupTaints := request.Pool, request.Candidates, request.StartupTaints
	minValues := pool.MinValues()
	labels := pool.Labels()
	maps.Copy(labels, request.Labels)
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: maps.Clone(annotations),
			Finalizers:  []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{
			Taints:        v1.TaintsFrom(pool.Taints()),
			StartupTaints: v1.TaintsFrom(startupTaints),
			Requirements:  requirements(n.Requirements, candidates, minValues),
			Resources:     v1.ResourceRequirements{Requests: podRequests(n.Pods)},
			NodeClassRef:  pool.nodeClassRef(),
		},
	}
	if pool.NodePool == nil {
		return nc
	}
	// Owned by its NodePool, as upstream's: deleting the NodePool deletes its NodeClaims, and so
	// drains and terminates its nodes; the NodePool stays until they are gone.
	nc.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool", Name: pool.NodePool.Name,
		UID: pool.NodePool.UID, BlockOwnerDeletion: ptr.To(true)}}
	if len(minValues) > 0 {
		nc.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] = strconv.FormatBool(minValuesRelaxed(n, candidates, minValues))
	}
	// What drift compares the NodeClaim with later: the template and class it launched from.
	nc.Annotations[v1.NodePoolHashAnnotationKey] = disruption.NodePoolHash(pool.NodePool)
	nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = disruption.HashVersion
	if class, ok := pool.NodeClass.(*awsv1.EC2NodeClass); ok {
		nc.Annotations[awsv1.EC2NodeClassHashAnnotationKey] = disruption.EC2NodeClassHash(class)
		nc.Annotations[awsv1.EC2NodeClassHashVersionAnnotationKey] = disruption.HashVersion
	}
	template := &pool.NodePool.Spec.Template
	for k, v := range template.Annotations {
		if _, ok := nc.Annotations[k]; !ok {
			nc.Annotations[k] = v
		}
	}
	nc.Spec.StartupTaints = append(slices.Clone(template.Spec.StartupTaints), nc.Spec.StartupTaints...)
	nc.Spec.ExpireAfter = template.Spec.ExpireAfter
	nc.Spec.TerminationGracePeriod = template.Spec.TerminationGracePeriod
	return nc
}

// Assign pairs a group's NodeClaims with the instances launched for them: a NodeClaim that
// recorded an instance keeps it; the others take the rest in order, NodeClaims by name and
// instances by id. The rule is the same for the launch and for a launch resumed after a crash,
// so both pair them alike, whatever was recorded before the crash. It returns the pairs of the
// NodeClaims that had none recorded, and the NodeClaims left without an instance.
func Assign(group []*v1.NodeClaim, instances []*cloudprovider.Instance) (map[*v1.NodeClaim]*cloudprovider.Instance, []*v1.NodeClaim) {
	claimed := map[string]bool{}
	var open []*v1.NodeClaim
	for _, nc := range group {
		if nc.Status.ProviderID != "" {
			claimed[nc.Status.ProviderID] = true
		} else {
			open = append(open, nc)
		}
	}
	free := slices.DeleteFunc(slices.Clone(instances), func(i *cloudprovider.Instance) bool { return claimed[i.ProviderID] })
	slices.SortFunc(free, func(a, b *cloudprovider.Instance) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(open, func(a, b *v1.NodeClaim) int { return cmp.Compare(a.Name, b.Name) })
	pairs := map[*v1.NodeClaim]*cloudprovider.Instance{}
	for i, nc := range open {
		if i == len(free) {
			return pairs, open[i:]
		}
		pairs[nc] = free[i]
	}
	return pairs, nil
}

// launched is the NodeClaim as its instance makes it: the labels the instance type and offering
// give it, the instance's provider id, image, and capacity and allocatable by its type (nil
// when unknown), and Launched True.
func launched(nc *v1.NodeClaim, instance *cloudprovider.Instance, it *cloudprovider.InstanceType) *v1.NodeClaim {
	out := nc.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, instance.Labels)
	out.Status.ProviderID = instance.ProviderID
	out.Status.ImageID = instance.ImageID
	if it != nil {
		out.Status.Capacity = it.Capacity.DeepCopy()
		out.Status.Allocatable = it.Allocatable()
	}
	out.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched",
		fmt.Sprintf("Launched instance %s: %s in %s (%s)", instance.ID, instance.InstanceType, instance.Zone, instance.CapacityType))
	return out
}

// podRequests are the pods' requests summed: what the node is launched to have room for.
func podRequests(podList []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, pod := range podList {
		for name, q := range pods.Requests(pod) {
			sum := out[name].DeepCopy()
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}
