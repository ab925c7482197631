package scheduling

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/scheduling"
)

type groupKind int

const (
	spreadGroup groupKind = iota
	affinityGroup
	antiAffinityGroup
)

// topologyKey is a node label, other than the hostname, that topology terms count pods over.
// Its values are interned so that counts are slices indexed by domain.
type topologyKey struct {
	index  int
	name   string
	values *interner
}

// topologyGroup counts, per topology domain, the pods that match one selector. Pods that carry
// the same term (same kind, key, namespaces, selector and skew) share a group.
type topologyGroup struct {
	id   int
	kind groupKind
	// key is the topology key; nil for kubernetes.io/hostname, whose counts live on each node.
	key        *topologyKey
	namespaces sets.Set[string]
	selector   labels.Selector
	maxSkew    int32
	minDomains int32
	// eligibility restricts which nodes count for a spread: kube-scheduler honours the
	// spreading pod's node affinity (nodeAffinityPolicy Honor), so pods on nodes it could
	// not use do not count. Nil when every node counts.
	eligibility scheduling.Requirements
	// honorAffinity and honorTaints are the spread's nodeAffinityPolicy and nodeTaintsPolicy:
	// whether nodes the pod's node affinity, or its tolerations, exclude are domains at all.
	honorAffinity bool
	honorTaints   bool
	tolerations   []corev1.Toleration
	// requiredKeys are the other keys of the spreading pod's constraints of the same kind
	// (DoNotSchedule or ScheduleAnyway): kube-scheduler counts only nodes carrying them all.
	requiredKeys []*topologyKey
	// domainsKey identifies what decides the group's domains besides the pod's node affinity.
	domainsKey string

	// domainCounts and domainOwners are indexed by the key's interned values.
	domainCounts []int32
	domainOwners []int32
	// total counts matching pods on any node, for the rule that lets the first pod of a
	// self-affine set go anywhere.
	total int32
	// newNodesCounted and newNodesOwned are, for a hostname group, how many nodes opened in the
	// pass hold a pod it counts, or one that owns its anti-affinity term: once that is every
	// open node, a pod that such a pod keeps away need not look at any of them.
	newNodesCounted, newNodesOwned int
}

func (g *topologyGroup) matches(pod *corev1.Pod) bool {
	if g.namespaces != nil && !g.namespaces.Has(pod.Namespace) {
		return false
	}
	return g.selector.Matches(labels.Set(pod.Labels))
}

// ownedTerm is a topology term a pod carries.
type ownedTerm struct {
	group *topologyGroup
	// self is whether the pod matches its own term's selector.
	self bool
	// soft terms (ScheduleAnyway spreads, preferred pod affinity and anti-affinity) are
	// honoured only on the pod's first attempt.
	soft bool
}

type topologyGroups struct {
	bySignature map[string]*topologyGroup
	all         []*topologyGroup
	// selectors are the label selectors parsed so far, by selectorKey: the pods of one
	// workload carry the same selectors, and parsing validates every key and value again.
	selectors map[string]labels.Selector
	// key resolves a topology key other than the hostname.
	key func(name string) *topologyKey
}

func (t *topologyGroups) intern(g *topologyGroup, keyName, signature string) *topologyGroup {
	if existing, ok := t.bySignature[signature]; ok {
		return existing
	}
	if keyName != corev1.LabelHostname {
		g.key = t.key(keyName)
		g.domainCounts = make([]int32, len(g.key.values.names))
		g.domainOwners = make([]int32, len(g.key.values.names))
	}
	g.id = len(t.all)
	t.bySignature[signature] = g
	t.all = append(t.all, g)
	return g
}

// selector is metav1.LabelSelectorAsSelector, parsed once per distinct selector.
func (t *topologyGroups) selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	key := selectorKey(ls)
	if selector, ok := t.selectors[key]; ok {
		return selector, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	t.selectors[key] = selector
	return selector, nil
}

// selectorKey renders a label selector so that equal selectors render alike; nil and empty
// ones, which select nothing and everything, differ.
func selectorKey(ls *metav1.LabelSelector) string {
	var buf [128]byte
	return string(keyBuilder(buf[:0]).selector(ls))
}

// spreadSelector is the constraint's selector with matchLabelKeys resolved against the pod.
func (t *topologyGroups) spreadSelector(pod *corev1.Pod, c *corev1.TopologySpreadConstraint) (labels.Selector, error) {
	selector, err := t.selector(c.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("topology spread label selector, %w", err)
	}
	if c.LabelSelector == nil {
		return selector, nil
	}
	for _, key := range c.MatchLabelKeys {
		value, ok := pod.Labels[key]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, fmt.Errorf("topology spread matchLabelKeys, %w", err)
		}
		selector = selector.Add(*r)
	}
	return selector, nil
}

func (t *topologyGroups) addSpread(pod *corev1.Pod, c *corev1.TopologySpreadConstraint, eligibility scheduling.Requirements) (ownedTerm, error) {
	var requiredNames []string
	for _, other := range pod.Spec.TopologySpreadConstraints {
		if other.WhenUnsatisfiable == c.WhenUnsatisfiable && other.TopologyKey != c.TopologyKey && other.TopologyKey != corev1.LabelHostname &&
			!slices.Contains(requiredNames, other.TopologyKey) {
			requiredNames = append(requiredNames, other.TopologyKey)
		}
	}
	sort.Strings(requiredNames)
	var minDomains int32
	if c.MinDomains != nil {
		minDomains = *c.MinDomains
	}
	honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	if c.TopologyKey == corev1.LabelHostname || !honorAffinity {
		eligibility = nil
	}
	var tolerations []corev1.Toleration
	if honorTaints {
		tolerations = pod.Spec.Tolerations
	}
	// What decides the group's domains besides the pod's node affinity.
	domainsKey := func() string {
		return fmt.Sprintf("%s/%v/%v/%v/%v", c.TopologyKey, honorAffinity, honorTaints, tolerations, requiredNames)
	}
	var buf [256]byte
	signature := keyBuilder(buf[:0]).str("spread")
	if honorTaints {
		signature = signature.str(domainsKey())
	} else {
		signature = signature.str(c.TopologyKey).bool(honorAffinity).int(int64(len(requiredNames)))
		for _, name := range requiredNames {
			signature = signature.str(name)
		}
	}
	signature = signature.str(pod.Namespace).selector(c.LabelSelector)
	if c.LabelSelector != nil {
		signature = signature.labelKeys(pod, c.MatchLabelKeys)
	}
	signature = signature.int(int64(c.MaxSkew)).int(int64(minDomains))
	if eligibility != nil {
		signature = signature.str(requirementsKey(eligibility))
	}
	soft := c.WhenUnsatisfiable == corev1.ScheduleAnyway
	// Pods of one workload carry the same constraint: its group is built once.
	if g, ok := t.bySignature[string(signature)]; ok {
		return ownedTerm{group: g, self: g.matches(pod), soft: soft}, nil
	}
	selector, err := t.spreadSelector(pod, c)
	if err != nil {
		return ownedTerm{}, err
	}
	var requiredKeys []*topologyKey
	for _, name := range requiredNames {
		requiredKeys = append(requiredKeys, t.key(name))
	}
	g := &topologyGroup{
		kind: spreadGroup, namespaces: sets.New(pod.Namespace), selector: selector, maxSkew: c.MaxSkew, minDomains: minDomains,
		eligibility: eligibility, honorAffinity: honorAffinity, honorTaints: honorTaints, tolerations: tolerations, requiredKeys: requiredKeys, domainsKey: domainsKey(),
	}
	g = t.intern(g, c.TopologyKey, string(signature))
	return ownedTerm{group: g, self: g.matches(pod), soft: soft}, nil
}

func (t *topologyGroups) addAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm, kind groupKind) (ownedTerm, error) {
	if term.TopologyKey == "" {
		return ownedTerm{}, fmt.Errorf("pod affinity term without a topology key")
	}
	var namespaces sets.Set[string]
	switch {
	case term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0:
		// An empty namespace selector selects every namespace.
	case term.NamespaceSelector != nil:
		return ownedTerm{}, fmt.Errorf("pod affinity namespaceSelector other than {} is not supported")
	case len(term.Namespaces) > 0:
		namespaces = sets.New(term.Namespaces...)
	}
	var buf [256]byte
	signature := keyBuilder(buf[:0]).str("affinity").int(int64(kind)).str(term.TopologyKey)
	switch {
	case term.NamespaceSelector != nil:
		signature = signature.int(-1)
	case namespaces != nil:
		list := sets.List(namespaces)
		signature = signature.int(int64(len(list)))
		for _, name := range list {
			signature = signature.str(name)
		}
	default:
		signature = signature.int(1).str(pod.Namespace)
	}
	signature = signature.selector(term.LabelSelector)
	if term.LabelSelector != nil {
		signature = signature.labelKeys(pod, term.MatchLabelKeys).labelKeys(pod, term.MismatchLabelKeys)
	}
	if g, ok := t.bySignature[string(signature)]; ok {
		return ownedTerm{group: g, self: g.matches(pod)}, nil
	}
	if term.NamespaceSelector == nil && namespaces == nil {
		namespaces = sets.New(pod.Namespace)
	}
	selector, err := t.selector(term.LabelSelector)
	if err != nil {
		return ownedTerm{}, fmt.Errorf("pod affinity label selector, %w", err)
	}
	if term.LabelSelector != nil {
		if selector, err = withLabelKeys(selector, pod, term.MatchLabelKeys, selection.Equals); err != nil {
			return ownedTerm{}, fmt.Errorf("pod affinity matchLabelKeys, %w", err)
		}
		if selector, err = withLabelKeys(selector, pod, term.MismatchLabelKeys, selection.NotEquals); err != nil {
			return ownedTerm{}, fmt.Errorf("pod affinity mismatchLabelKeys, %w", err)
		}
	}
	g := &topologyGroup{kind: kind, namespaces: namespaces, selector: selector}
	g = t.intern(g, term.TopologyKey, string(signature))
	return ownedTerm{group: g, self: g.matches(pod)}, nil
}

// withLabelKeys narrows selector by each of keys the pod has a label of: key op the pod's value.
func withLabelKeys(selector labels.Selector, pod *corev1.Pod, keys []string, op selection.Operator) (labels.Selector, error) {
	for _, key := range keys {
		if value, ok := pod.Labels[key]; ok {
			r, err := labels.NewRequirement(key, op, []string{value})
			if err != nil {
				return nil, err
			}
			selector = selector.Add(*r)
		}
	}
	return selector, nil
}
