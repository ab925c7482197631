package check

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// podSet counts, per topology domain, the placed pods a selector picks out in some namespaces.
// Counts are built from the cluster state when first asked for and kept current as the replay
// binds pods.
type podSet struct {
	namespaces sets.Set[string] // nil: all
	selector   labels.Selector
	key        string
	// eligible restricts counting to nodes a spreading pod could use; nil counts every node.
	eligible func(*node) bool
	domains  sets.Set[string]
	byDomain map[string]int
	total    int
	// unknown counts matching pods on nodes whose value for key depends on how they launch.
	unknown int
}

func (s *podSet) matches(pod *corev1.Pod) bool {
	return (s.namespaces == nil || s.namespaces.Has(pod.Namespace)) && s.selector.Matches(labels.Set(pod.Labels))
}

func (s *podSet) record(n *node, pod *corev1.Pod) {
	if !s.matches(pod) {
		return
	}
	s.total++
	if (s.eligible != nil && !s.eligible(n)) || n.lacks(s.key) {
		return
	}
	if d, ok := n.label(s.key); ok {
		s.byDomain[d]++
	} else {
		s.unknown++
	}
}

type replay struct {
	c      *checker
	sets   map[string]*podSet
	placed map[*node][]*corev1.Pod
	// owners hold, per anti-affinity term of a placed pod, the domains it forbids to the pods
	// the term selects.
	owners []owner
}

type owner struct {
	set    *podSet // the term's selector and namespaces, relative to its owner
	domain string
	known  bool
	// absent owners are on nodes without the key, so they forbid nothing.
	absent bool
	pod    *corev1.Pod
}

func (rp *replay) set(signature string, build func() *podSet) *podSet {
	if s, ok := rp.sets[signature]; ok {
		return s
	}
	s := build()
	s.byDomain = map[string]int{}
	for n, pods := range rp.placed {
		for _, pod := range pods {
			s.record(n, pod)
		}
	}
	rp.sets[signature] = s
	return s
}

func (rp *replay) bind(n *node, pod *corev1.Pod) {
	rp.placed[n] = append(rp.placed[n], pod)
	for _, s := range rp.sets {
		s.record(n, pod)
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			s, err := termSet(pod, term)
			if err != nil {
				continue
			}
			d, ok := n.label(term.TopologyKey)
			rp.owners = append(rp.owners, owner{set: s, domain: d, known: ok, absent: n.lacks(term.TopologyKey), pod: pod})
		}
	}
}

// replayTopology binds pods in the plan's order and checks each pod's hard topology spread,
// pod affinity and pod anti-affinity, and the anti-affinity of pods already placed.
func (c *checker) replayTopology() {
	rp := &replay{c: c, sets: map[string]*podSet{}, placed: map[*node][]*corev1.Pod{}}
	for _, n := range c.order {
		if n.existing {
			for _, pod := range n.pods {
				rp.bind(n, pod)
			}
		}
	}
	for _, b := range c.r.Bindings {
		n := c.nodes[b.NodeName]
		if n == nil {
			continue
		}
		for _, err := range rp.check(n, b.Pod) {
			c.fail("pod %s/%s on node %s: %v", b.Pod.Namespace, b.Pod.Name, n.name, err)
		}
		rp.bind(n, b.Pod)
	}
}

func (rp *replay) check(n *node, pod *corev1.Pod) []error {
	var errs []error
	for i := range pod.Spec.TopologySpreadConstraints {
		if err := rp.checkSpread(n, pod, &pod.Spec.TopologySpreadConstraints[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			s, err := rp.termSet(pod, term)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			d, ok := n.label(term.TopologyKey)
			switch {
			case s.total == 0 && s.matches(pod):
				// The first of a set of pods with affinity to each other may go anywhere.
			case !ok:
				errs = append(errs, fmt.Errorf("pod affinity on %s: node has no known value", term.TopologyKey))
			case s.byDomain[d] == 0:
				errs = append(errs, fmt.Errorf("pod affinity on %s: no matching pod in %s", term.TopologyKey, d))
			}
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			s, err := rp.termSet(pod, term)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			d, ok := n.label(term.TopologyKey)
			if !ok && !n.lacks(term.TopologyKey) && s.total > 0 {
				errs = append(errs, fmt.Errorf("pod anti-affinity on %s: node has no known value", term.TopologyKey))
			} else if ok && s.byDomain[d] > 0 {
				errs = append(errs, fmt.Errorf("pod anti-affinity on %s: %d matching pods already in %s", term.TopologyKey, s.byDomain[d], d))
			}
		}
	}
	for _, o := range rp.owners {
		if !o.set.matches(pod) || o.absent || n.lacks(o.set.key) {
			continue
		}
		d, ok := n.label(o.set.key)
		if !ok || !o.known {
			errs = append(errs, fmt.Errorf("anti-affinity of pod %s/%s on %s cannot be verified: domain unknown", o.pod.Namespace, o.pod.Name, o.set.key))
		} else if d == o.domain {
			errs = append(errs, fmt.Errorf("violates the anti-affinity of pod %s/%s in %s", o.pod.Namespace, o.pod.Name, d))
		}
	}
	return errs
}

func (rp *replay) checkSpread(n *node, pod *corev1.Pod, c *corev1.TopologySpreadConstraint) error {
	if c.WhenUnsatisfiable != corev1.DoNotSchedule {
		return nil
	}
	s, err := rp.spreadSet(pod, c)
	if err != nil {
		return err
	}
	if n.lacks(c.TopologyKey) {
		return fmt.Errorf("topology spread on %s: node does not have the label", c.TopologyKey)
	}
	domain, ok := n.label(c.TopologyKey)
	if !ok {
		return fmt.Errorf("topology spread on %s: node has no known value", c.TopologyKey)
	}
	if s.unknown > 0 {
		return fmt.Errorf("topology spread on %s: %d matching pods on nodes without a known value", c.TopologyKey, s.unknown)
	}
	if s.domains == nil {
		// Domains are those of every node the pod could use, whether or not it holds pods.
		s.domains = sets.New[string]()
		for _, m := range rp.c.order {
			if s.eligible(m) {
				s.domains = s.domains.Union(m.values[c.TopologyKey])
			}
		}
	}
	domains := s.domains
	minimum := math.MaxInt
	for d := range domains {
		minimum = min(minimum, s.byDomain[d])
	}
	if c.MinDomains != nil && domains.Len() < int(*c.MinDomains) {
		minimum = 0
	}
	self := 0
	if s.matches(pod) {
		self = 1
	}
	if skew := s.byDomain[domain] + self - minimum; skew > int(c.MaxSkew) {
		return fmt.Errorf("topology spread on %s: skew %d in %s exceeds maxSkew %d", c.TopologyKey, skew, domain, c.MaxSkew)
	}
	return nil
}

// spreadSet is the pod set a hard spread constraint counts: its selector with matchLabelKeys,
// over the nodes its nodeAffinityPolicy, nodeTaintsPolicy and topology keys include.
func (rp *replay) spreadSet(pod *corev1.Pod, c *corev1.TopologySpreadConstraint) (*podSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, err
	}
	if c.LabelSelector != nil {
		for _, key := range c.MatchLabelKeys {
			if v, ok := pod.Labels[key]; ok {
				r, err := labels.NewRequirement(key, selection.Equals, []string{v})
				if err != nil {
					return nil, err
				}
				selector = selector.Add(*r)
			}
		}
	}
	// nodeAffinityPolicy (default Honor) and nodeTaintsPolicy (default Ignore) decide which
	// nodes are domains and count.
	honour := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honourTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	constrained := len(pod.Spec.NodeSelector) > 0 || (pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil &&
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	keys := sets.New[string]()
	for _, other := range pod.Spec.TopologySpreadConstraints {
		if other.WhenUnsatisfiable == c.WhenUnsatisfiable {
			keys.Insert(other.TopologyKey)
		}
	}
	cache := map[*node]bool{}
	eligible := func(m *node) bool {
		if ok, seen := cache[m]; seen {
			return ok
		}
		ok := true
		if honour && constrained {
			selected, err := m.selects(pod)
			ok = err == nil && selected
		}
		if honourTaints && !toleratesNoScheduleTaints(pod, m.taints) {
			ok = false
		}
		// Only nodes with every topology key of the pod's constraints of this kind count.
		for _, key := range sets.List(keys) {
			if m.lacks(key) || m.absent.Has(key) {
				ok = false
			}
		}
		cache[m] = ok
		return ok
	}
	// Pods whose node affinity or tolerations decide the eligible nodes count on their own.
	var decider any
	if (honour && constrained) || honourTaints {
		decider = pod
	}
	signature := fmt.Sprintf("spread/%s/%s/%s/%v/%v/%v/%p", pod.Namespace, c.TopologyKey, selector, honour, honourTaints, sets.List(keys), decider)
	return rp.set(signature, func() *podSet {
		return &podSet{namespaces: sets.New(pod.Namespace), selector: selector, key: c.TopologyKey, eligible: eligible}
	}), nil
}

func termSet(pod *corev1.Pod, term *corev1.PodAffinityTerm) (*podSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return nil, err
	}
	if term.LabelSelector != nil {
		// matchLabelKeys and mismatchLabelKeys narrow the selector by the owner's own labels.
		for _, keys := range []struct {
			keys []string
			op   selection.Operator
		}{{term.MatchLabelKeys, selection.Equals}, {term.MismatchLabelKeys, selection.NotEquals}} {
			for _, key := range keys.keys {
				if v, ok := pod.Labels[key]; ok {
					r, err := labels.NewRequirement(key, keys.op, []string{v})
					if err != nil {
						return nil, err
					}
					selector = selector.Add(*r)
				}
			}
		}
	}
	var namespaces sets.Set[string]
	switch {
	case term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels)+len(term.NamespaceSelector.MatchExpressions) == 0:
	case term.NamespaceSelector != nil:
		return nil, fmt.Errorf("namespaceSelector is not verifiable without namespaces")
	case len(term.Namespaces) > 0:
		namespaces = sets.New(term.Namespaces...)
	default:
		namespaces = sets.New(pod.Namespace)
	}
	return &podSet{namespaces: namespaces, selector: selector, key: term.TopologyKey}, nil
}

func (rp *replay) termSet(pod *corev1.Pod, term *corev1.PodAffinityTerm) (*podSet, error) {
	proto, err := termSet(pod, term)
	if err != nil {
		return nil, err
	}
	signature := fmt.Sprintf("term/%v/%s/%s", sets.List(proto.namespaces), term.TopologyKey, proto.selector)
	if proto.namespaces == nil {
		signature = "term/*/" + term.TopologyKey + "/" + proto.selector.String()
	}
	return rp.set(signature, func() *podSet { return proto }), nil
}
