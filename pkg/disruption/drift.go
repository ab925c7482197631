package disruption

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// HashVersion is how NodePoolHash and EC2NodeClassHash compute. A NodeClaim stamped with another
// version (upstream's "v3", or an earlier one of this project) is stamped again rather than
// drifted: bump it whenever a change to the computation would change the hash of an unchanged
// object (a field added to or removed from it, a default changed).
const HashVersion = "json-1"

// Drift reasons, the Drifted condition's; upstream's names.
const (
	ReasonNodePoolDrifted      = "NodePoolDrifted"
	ReasonRequirementsDrifted  = "RequirementsDrifted"
	ReasonNodeClassDrifted     = "NodeClassDrift"
	ReasonAMIDrifted           = "AMIDrift"
	ReasonSubnetDrifted        = "SubnetDrift"
	ReasonSecurityGroupDrifted = "SecurityGroupDrift"
	ReasonInstanceTypeNotFound = "InstanceTypeNotFound"
)

// NodePoolHash is the hash of the template fields whose change drifts a NodePool's nodes: its
// labels, annotations, taints, startup taints, nodeClassRef, expireAfter and
// terminationGracePeriod. Requirements drift by whether the nodes still meet them, not by a
// hash; the NodePool's weight, limits and disruption are how Karpenter behaves, not what the
// nodes are, and never drift them. Taints compare as sets.
func NodePoolHash(np *v1.NodePool) string {
	template := np.Spec.Template.DeepCopy()
	template.Spec.Requirements = nil
	sortTaints(template.Spec.Taints)
	sortTaints(template.Spec.StartupTaints)
	return hashOf(template)
}

// EC2NodeClassHash is the hash of the class's fields whose change drifts its nodes. The
// selector terms and the AMI family are left out: what they resolve to is compared instead
// (AMIDrift), so that a selector rewritten to the same AMIs drifts nothing.
func EC2NodeClassHash(class *awsv1.EC2NodeClass) string {
	spec := class.Spec.DeepCopy()
	spec.SubnetSelectorTerms = nil
	spec.SecurityGroupSelectorTerms = nil
	spec.CapacityReservationSelectorTerms = nil
	spec.AMISelectorTerms = nil
	spec.AMIFamily = nil
	spec.IPPrefixCount = nil
	return hashOf(spec)
}

// hashOf is the FNV-64a hash of the value's JSON, which writes map keys in order and leaves
// unset fields out, so that an unset field and a field set to its zero value hash alike.
func hashOf(v any) string {
	encoded, err := json.Marshal(v)
	if err != nil {
		// The API types always encode.
		panic(fmt.Sprintf("encoding %T for its hash, %v", v, err))
	}
	h := fnv.New64a()
	_, _ = h.Write(encoded)
	return strconv.FormatUint(h.Sum64(), 10)
}

func sortTaints(taints []v1.Taint) {
	slices.SortFunc(taints, func(a, b v1.Taint) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(string(a.Effect), string(b.Effect)), strings.Compare(a.Value, b.Value))
	})
}

// Drift is why a NodeClaim no longer is what its NodePool and class would launch now.
type Drift struct {
	Reason  string
	Message string
}

// Observed is what the cloud says now of a NodeClaim's instance; the zero value knows nothing.
type Observed struct {
	// Instance is the instance as the cloud lists it, nil when it has not said yet what network
	// the instance runs in.
	Instance *cloudprovider.Instance
	// InstanceTypeGone is whether the cloud no longer offers the NodeClaim's instance type to
	// its NodePool's class, in any zone; false when not known.
	InstanceTypeGone bool
}

// Drifted is how the NodeClaim drifted from its NodePool and EC2NodeClass, nil when it has not:
// its template hash differs from the NodePool's, its node's labels no longer meet the NodePool's
// requirements, its instance type is no longer offered, its class hash differs from the class's,
// its image is no longer among those the class resolves, its instance's subnet is no longer
// among the class's, or its instance's security groups are no longer the class's. The node's
// labels are the NodeClaim's when it has no node yet. A requirement on a label the node does not
// carry drifts nothing: which value it would have is not known. class is nil for a NodeClaim of
// another kind of class, or one not resolved yet.
func Drifted(nc *v1.NodeClaim, node *corev1.Node, np *v1.NodePool, class *awsv1.EC2NodeClass, observed Observed) *Drift {
	if stampedWith(nc.Annotations, v1.NodePoolHashAnnotationKey, v1.NodePoolHashVersionAnnotationKey) {
		if want := NodePoolHash(np); nc.Annotations[v1.NodePoolHashAnnotationKey] != want {
			return &Drift{ReasonNodePoolDrifted, fmt.Sprintf("NodePool %s's template changed since the node launched", np.Name)}
		}
	}
	labels := nc.Labels
	if node != nil {
		labels = node.Labels
	}
	if key, value, ok := unmetRequirement(np.Spec.Template.Spec.Requirements, labels); !ok {
		return &Drift{ReasonRequirementsDrifted, fmt.Sprintf("label %s=%q no longer meets NodePool %s's requirements", key, value, np.Name)}
	}
	if observed.InstanceTypeGone {
		return &Drift{ReasonInstanceTypeNotFound, fmt.Sprintf("instance type %s is no longer offered to NodePool %s", labels[corev1.LabelInstanceTypeStable], np.Name)}
	}
	if class == nil {
		return nil
	}
	if stampedWith(nc.Annotations, awsv1.EC2NodeClassHashAnnotationKey, awsv1.EC2NodeClassHashVersionAnnotationKey) {
		if want := EC2NodeClassHash(class); nc.Annotations[awsv1.EC2NodeClassHashAnnotationKey] != want {
			return &Drift{ReasonNodeClassDrifted, fmt.Sprintf("EC2NodeClass %s changed since the node launched", class.Name)}
		}
	}
	// Until the class resolves its AMIs, nothing says the node's is outdated.
	if nc.Status.ImageID != "" && len(class.Status.AMIs) > 0 &&
		!slices.ContainsFunc(class.Status.AMIs, func(ami awsv1.AMI) bool { return ami.ID == nc.Status.ImageID }) {
		return &Drift{ReasonAMIDrifted, fmt.Sprintf("image %s is no longer among those EC2NodeClass %s resolves", nc.Status.ImageID, class.Name)}
	}
	return networkDrifted(class, observed.Instance)
}

// networkDrifted is how the instance's network drifted from the class's: its subnet is no longer
// among the class's, or its security groups are not the class's (as upstream, compared as sets).
// Until the class resolves them, or the cloud says what the instance runs in, nothing drifts.
func networkDrifted(class *awsv1.EC2NodeClass, instance *cloudprovider.Instance) *Drift {
	if instance == nil {
		return nil
	}
	if instance.SubnetID != "" && len(class.Status.Subnets) > 0 &&
		!slices.ContainsFunc(class.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == instance.SubnetID }) {
		return &Drift{ReasonSubnetDrifted, fmt.Sprintf("subnet %s is no longer among those EC2NodeClass %s selects", instance.SubnetID, class.Name)}
	}
	if len(instance.SecurityGroupIDs) > 0 && len(class.Status.SecurityGroups) > 0 {
		selected := sets.New[string]()
		for _, group := range class.Status.SecurityGroups {
			selected.Insert(group.ID)
		}
		if running := sets.New(instance.SecurityGroupIDs...); !running.Equal(selected) {
			return &Drift{ReasonSecurityGroupDrifted, fmt.Sprintf("security groups %v are not those EC2NodeClass %s selects, %v",
				sets.List(running), class.Name, sets.List(selected))}
		}
	}
	return nil
}

// stampedWith is whether the annotations carry a hash computed as HashVersion computes it.
func stampedWith(annotations map[string]string, hashKey, versionKey string) bool {
	return annotations[hashKey] != "" && annotations[versionKey] == HashVersion
}

// unmetRequirement is the first label, by requirement order, whose value a requirement refuses.
func unmetRequirement(requirements []v1.NodeSelectorRequirementWithMinValues, labels map[string]string) (string, string, bool) {
	for _, r := range requirements {
		value, present := labels[r.Key]
		if !present {
			continue
		}
		core := r.Core()
		requirement, err := scheduling.NewRequirement(core.Operator, core.Values...)
		// Admission refuses a malformed requirement; one that slipped by drifts nothing.
		if err != nil {
			continue
		}
		if !requirement.Has(value) {
			return r.Key, value, false
		}
	}
	return "", "", true
}
