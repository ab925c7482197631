package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// podInfo is a pending pod with everything the inner loop needs precomputed.
type podInfo struct {
	pod      *corev1.Pod
	requests resources
	// hostPorts are the ports the pod binds on its node.
	hostPorts []hostPort
	// attempts are tried in order; later ones relax preferences.
	attempts  []attempt
	tolerates []bool // by provisioner index
	// existingVolumes are the alternatives an existing node's labels must meet for the pod's
	// volumes, nil for none.
	existingVolumes []scheduling.Requirements

	hostSpreads, hostAffinities, hostAntiAffinities       []ownedTerm
	domainSpreads, domainAffinities, domainAntiAffinities []ownedTerm
	// owned are the groups of the pod's required anti-affinity terms, which other pods must
	// respect.
	owned []*topologyGroup
	// matches are the groups whose selector matches the pod, so placing it changes their counts.
	matches            []*topologyGroup
	matchesHostAnti    []*topologyGroup
	matchesDomainAnti  []*topologyGroup
	matchesEligibility []*topologyGroup
	// keys are the topology keys other than the hostname whose value the pod's node must have
	// decided: those of its own terms and of the groups it is counted in. owns[i] is whether a
	// required term of the pod's own needs the node to carry keys[i] at all.
	keys []*topologyKey
	owns []bool
	// tolerationsKey renders the pod's tolerations for caching the domains it can reach.
	tolerationsKey string
	class          int
	// binding is the position of the pod's binding in the results once placed.
	binding int
	err     error
	reason  string
}

// attempt is one set of node requirements to try for a pod.
type attempt struct {
	requirements scheduling.Requirements
	// base is the required part (nodeSelector and one required node affinity term), which
	// decides the pod's topology domains; baseKey renders it for caching.
	base    scheduling.Requirements
	baseKey string
	// reach is base with one alternative of what the pod's volumes need: where the pod may go
	// at all. reachKey renders it.
	reach    scheduling.Requirements
	reachKey string
	// soft attempts honour ScheduleAnyway topology spread too.
	soft bool
}

func (s *scheduler) prepare(in Input) []*podInfo {
	// Resources and zones first: everything else is sized by them.
	for _, p := range in.Pools {
		for _, it := range p.InstanceTypes {
			s.resources.register(it.Capacity)
			for _, o := range it.Offerings {
				s.zones.intern(o.Zone)
				s.capacityTypes.intern(o.CapacityType)
			}
		}
		s.resources.register(p.Limits)
	}
	for _, n := range in.Nodes {
		s.resources.register(n.Node.Status.Allocatable)
		if z, ok := n.Node.Labels[corev1.LabelTopologyZone]; ok {
			s.zones.intern(z)
		}
	}
	requests := make(map[*corev1.Pod]corev1.ResourceList, len(in.Pods)+len(in.DaemonSetPods))
	podRequestsOf := func(pod *corev1.Pod) corev1.ResourceList {
		r := s.volumes.withAttachments(pod, in.Requests.of(pod))
		requests[pod] = r
		s.resources.register(r)
		return r
	}
	for _, pod := range in.Pods {
		podRequestsOf(pod)
	}
	for _, pod := range in.DaemonSetPods {
		podRequestsOf(pod)
	}
	for _, n := range in.Nodes {
		for _, pod := range n.Pods {
			podRequestsOf(pod)
		}
	}

	s.indexVolumeDrivers()
	for i, p := range in.Pools {
		s.provisioners = append(s.provisioners, s.newProvisioner(i, p, in.DaemonSetPods, requests))
	}
	for _, n := range in.Nodes {
		s.existingLabels = append(s.existingLabels, n.Node.Labels)
	}
	// The highest weight first: newNodeFor takes the first weight that can take a pod.
	sort.SliceStable(s.provisioners, func(i, j int) bool {
		a, b := s.provisioners[i], s.provisioners[j]
		if a.weight != b.weight {
			return a.weight > b.weight
		}
		return pools.Compare(a.key, b.key) < 0
	})

	s.topology = &topologyGroups{bySignature: map[string]*topologyGroup{}, selectors: map[string]labels.Selector{}, key: s.topologyKey}
	pending := make([]*podInfo, 0, len(in.Pods))
	for _, pod := range in.Pods {
		pending = append(pending, s.newPodInfo(pod, requests[pod]))
	}
	// Existing pods' anti-affinity binds pending pods too.
	type existingPod struct {
		pod   *corev1.Pod
		owned []*topologyGroup
	}
	var existingPods [][]existingPod
	for _, n := range in.Nodes {
		var list []existingPod
		for _, pod := range n.Pods {
			if pods.IsTerminal(pod) {
				continue
			}
			ep := existingPod{pod: pod}
			if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					// Terms the scheduler cannot express cannot bind anything it places either.
					if t, err := s.topology.addAffinityTerm(pod, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], antiAffinityGroup); err == nil {
						ep.owned = append(ep.owned, t.group)
					}
				}
			}
			list = append(list, ep)
		}
		existingPods = append(existingPods, list)
	}
	groups := s.topology.all
	for _, p := range pending {
		s.resolveMatches(p, groups)
	}

	for i, n := range in.Nodes {
		if n.Node.Spec.Unschedulable {
			continue
		}
		en := &node{
			existing: n.Node,
			labels:   n.Node.Labels,
			taints:   n.Node.Spec.Taints,
			alloc:    s.resources.vector(n.Node.Status.Allocatable),
			used:     make(resources, len(s.resources)),
			domain:   s.unknownDomains(),
			counts:   make([]int32, len(groups)),
			owners:   make([]int32, len(groups)),
		}
		s.volumeLimits(en.alloc, csiNodeLimits(n.CSINode))
		if z, ok := n.Node.Labels[corev1.LabelTopologyZone]; ok {
			en.zones = 1 << s.zones.index[z]
		}
		for _, k := range s.keys {
			if v, ok := n.Node.Labels[k.name]; ok {
				en.domain[k.index] = k.values.index[v]
			}
		}
		s.nodes = append(s.nodes, en)
		for _, ep := range existingPods[i] {
			en.used.add(s.resources.podVector(requests[ep.pod]))
			en.ports = append(en.ports, hostPortsOf(ep.pod)...)
			s.count(en, ep.pod, s.matchesOf(ep.pod, groups).all, ep.owned)
		}
	}
	s.existing = len(s.nodes)
	sortPods(pending)
	return pending
}

// indexVolumeDrivers finds, among the registered resources, the CSI drivers whose volumes pods
// attach.
func (s *scheduler) indexVolumeDrivers() {
	s.volumeDrivers = map[string]int{}
	for name, i := range s.resources {
		if driver, ok := strings.CutPrefix(string(name), string(volumeResource(""))); ok {
			s.volumeDrivers[driver] = i
		}
	}
}

func (s *scheduler) newProvisioner(index int, p Pool, daemonSets []*corev1.Pod, requests map[*corev1.Pod]corev1.ResourceList) *provisioner {
	prov := &provisioner{
		index:        index,
		key:          p.Key,
		weight:       p.Weight,
		requirements: scheduling.Requirements{},
		fixedKeys:    sets.New(p.Key.LabelKey),
		labels:       map[string]string{p.Key.LabelKey: p.Key.Name},
		typeKeys:     sets.New(corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, v1alpha5.CapacityTypeLabelKey),
		taints:       p.Taints,
		minValues:    minValuesOf(p),
		// An unset policy is upstream's default.
		minValuesStrict: len(p.MinValues) > 0 && p.MinValuesPolicy != MinValuesBestEffort,
	}
	// Admission validates requirements; one that still fails to parse matches nothing.
	for _, r := range p.Requirements {
		if err := prov.requirements.Add(r.Key, r.Operator, r.Values...); err != nil {
			prov.requirements[r.Key] = scheduling.Unsatisfiable()
		}
	}
	for k, v := range p.Labels {
		_ = prov.requirements.Add(k, corev1.NodeSelectorOpIn, v)
		prov.fixedKeys.Insert(k)
		prov.labels[k] = v
	}
	_ = prov.requirements.Add(p.Key.LabelKey, corev1.NodeSelectorOpIn, p.Key.Name)
	for _, it := range p.InstanceTypes {
		for k := range it.Labels {
			prov.typeKeys.Insert(k)
		}
	}
	prov.chosenKeys, prov.chosenNext = chosenKeys(prov), map[string]int{}
	prov.zones = s.zones.mask(prov.requirements[corev1.LabelTopologyZone])
	prov.capacityTypes = s.capacityTypes.mask(prov.requirements[v1alpha5.CapacityTypeLabelKey])
	for _, it := range p.InstanceTypes {
		t := s.newInstanceType(it)
		price := t.price(prov.zones, prov.capacityTypes)
		if math.IsInf(price, 1) || !prov.compatibleType(t, prov.requirements) {
			continue
		}
		prov.instanceTypes = append(prov.instanceTypes, t)
		prov.prices = append(prov.prices, price)
	}
	s.reserveDaemonSets(prov, daemonSets, requests)
	nw := &narrowing{candidates: prov.instanceTypes, prices: prov.prices}
	sort.Sort(byPrice{nw})
	prov.roomPrice = [2]float64{math.Inf(1), math.Inf(1)}
	for i, t := range prov.instanceTypes {
		for d := range prov.roomPrice {
			if t.capacity[d] > 0 {
				prov.roomPrice[d] = math.Min(prov.roomPrice[d], prov.prices[i]/float64(t.capacity[d]))
			}
		}
	}
	prov.maxAlloc = maxAllocatable(prov.instanceTypes)
	if prov.maxAlloc == nil {
		prov.maxAlloc = make(resources, len(s.resources))
	}
	var reachable uint64
	for _, t := range prov.instanceTypes {
		reachable |= t.zones(prov.capacityTypes)
	}
	prov.zones &= reachable

	if len(p.Limits) > 0 {
		prov.limited = make([]bool, len(s.resources))
		for name := range p.Limits {
			prov.limited[s.resources[name]] = true
		}
		prov.remaining = s.resources.vector(p.Limits)
		prov.remaining.sub(s.resources.vector(p.Used))
	}
	return prov
}

// reserveDaemonSets reserves, on the provisioner's new nodes, the room of the daemonsets that
// would run there: on every node for a daemonset whose node selection the instance type does not
// decide, and otherwise in the allocatable of the instance types it selects (by arch, instance
// type or family, say), so that the types it leaves alone keep their room; its host ports are
// likewise the node's or those types'.
func (s *scheduler) reserveDaemonSets(prov *provisioner, daemonSets []*corev1.Pod, requests map[*corev1.Pod]corev1.ResourceList) {
	prov.daemonSets = make(resources, len(s.resources))
	empty := &node{requirements: prov.requirements, prov: prov}
	for _, ds := range daemonSets {
		if scheduling.UntoleratedTaint(ds.Spec.Tolerations, prov.taints) != nil {
			continue
		}
		attempts, err := buildAttempts(ds, nil)
		if err != nil {
			continue
		}
		// selects are the requirements of the terms by which the daemonset may run on some
		// of the provisioner's nodes, each naming labels the instance type decides; everywhere
		// is whether one names none, so that it runs on every node.
		var selects []scheduling.Requirements
		everywhere := false
		for _, a := range attempts {
			reqs, ok := mergeRequirements(empty, a.base)
			if !ok {
				continue
			}
			if !prov.typeDecided(a.base) {
				everywhere = true
				break
			}
			selects = append(selects, reqs)
		}
		if !everywhere && len(selects) == 0 {
			continue
		}
		dsRequests, ports := s.resources.podVector(requests[ds]), hostPortsOf(ds)
		if everywhere {
			prov.daemonSets.add(dsRequests)
			prov.daemonPorts = append(prov.daemonPorts, ports...)
			continue
		}
		for _, t := range prov.instanceTypes {
			if slices.ContainsFunc(selects, func(r scheduling.Requirements) bool { return prov.compatibleType(t, r) }) {
				t.alloc.sub(dsRequests)
				t.daemonPorts = append(t.daemonPorts, ports...)
				prov.typeDaemonPorts = prov.typeDaemonPorts || len(ports) > 0
			}
		}
	}
}

func (s *scheduler) newPodInfo(pod *corev1.Pod, requests corev1.ResourceList) *podInfo {
	p := &podInfo{pod: pod, requests: s.resources.podVector(requests), hostPorts: hostPortsOf(pod), class: 3}
	// tolerates is indexed by the provisioner's input position.
	tolerates := make([]bool, len(s.provisioners))
	for _, prov := range s.provisioners {
		tolerates[prov.index] = scheduling.UntoleratedTaint(pod.Spec.Tolerations, prov.taints) == nil
	}
	p.tolerates = tolerates
	if len(pod.Spec.Tolerations) > 0 {
		p.tolerationsKey = fmt.Sprint(pod.Spec.Tolerations)
	}
	volumes, err := s.volumes.requirements(pod, true)
	if err != nil {
		p.err = err
		return p
	}
	if p.existingVolumes, err = s.volumes.requirements(pod, false); err != nil {
		p.err = err
		return p
	}
	attempts, err := buildAttempts(pod, volumes)
	if err != nil {
		p.err = err
		return p
	}
	p.attempts = attempts
	if err := s.addTerms(p); err != nil {
		p.err = err
	}
	return p
}

func (s *scheduler) addTerms(p *podInfo) error {
	pod := p.pod
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		// The node's own value for the key decides whether it is a domain, so the key itself
		// need not be part of eligibility.
		var eligibility scheduling.Requirements
		if base := p.attempts[0].base; len(base) > 1 || (len(base) == 1 && base[c.TopologyKey] == nil) {
			eligibility = base.Copy()
			delete(eligibility, c.TopologyKey)
		}
		if eligibility != nil && pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil && pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
			len(pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 1 {
			return fmt.Errorf("topology spread with several required node affinity terms is not supported")
		}
		t, err := s.topology.addSpread(pod, c, eligibility)
		if err != nil {
			return err
		}
		appendByKey(t, &p.domainSpreads, &p.hostSpreads)
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t, err := s.topology.addAffinityTerm(pod, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], affinityGroup)
				if err != nil {
					return err
				}
				appendByKey(t, &p.domainAffinities, &p.hostAffinities)
			}
			for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				// A preference the scheduler cannot express is one it need not honour.
				if t, err := s.topology.addAffinityTerm(pod, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm, affinityGroup); err == nil {
					t.soft = true
					appendByKey(t, &p.domainAffinities, &p.hostAffinities)
				}
			}
		}
		if a.PodAntiAffinity != nil {
			for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t, err := s.topology.addAffinityTerm(pod, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], antiAffinityGroup)
				if err != nil {
					return err
				}
				p.owned = append(p.owned, t.group)
				appendByKey(t, &p.domainAntiAffinities, &p.hostAntiAffinities)
			}
			// Preferred anti-affinity binds only its own pod: kube-scheduler weighs other
			// pods' preferences in scoring, never in filtering.
			for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				if t, err := s.topology.addAffinityTerm(pod, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm, antiAffinityGroup); err == nil {
					t.soft = true
					appendByKey(t, &p.domainAntiAffinities, &p.hostAntiAffinities)
				}
			}
		}
	}
	switch {
	case hasHard(p.hostAntiAffinities):
		p.class = 0
	case hasHard(p.hostSpreads) || hasHard(p.hostAffinities):
		p.class = 1
	case hasHard(p.domainSpreads) || hasHard(p.domainAffinities) || hasHard(p.domainAntiAffinities):
		p.class = 2
	case len(p.hostAffinities)+len(p.domainAffinities) > 0:
		// Preferred affinity is judged once the pods it may be drawn to are placed.
		p.class = 4
	case len(p.hostSpreads)+len(p.domainSpreads)+len(p.hostAntiAffinities)+len(p.domainAntiAffinities) > 0:
		p.class = 2
	}
	return nil
}

func hasHard(terms []ownedTerm) bool {
	for _, t := range terms {
		if !t.soft {
			return true
		}
	}
	return false
}

// labelMatches are the groups whose selectors match pods of one namespace and label set.
type labelMatches struct {
	all, hostAnti, domainAnti, eligibility []*topologyGroup
	// keys are the topology keys other than the hostname whose value decides where such a pod
	// is counted; owns is all false, as a pod only counted over them need not be on a node
	// carrying them.
	keys []*topologyKey
	owns []bool
}

// matchesOf finds the groups that count the pod. Pods of one workload share their namespace
// and labels, and so their matches, which are found once.
func (s *scheduler) matchesOf(pod *corev1.Pod, groups []*topologyGroup) *labelMatches {
	var buf [256]byte
	key := keyBuilder(buf[:0]).str(pod.Namespace).labels(pod.Labels)
	if m, ok := s.labelMatches[string(key)]; ok {
		return m
	}
	m := &labelMatches{}
	for _, g := range groups {
		if !g.matches(pod) {
			continue
		}
		m.all = append(m.all, g)
		if g.kind == antiAffinityGroup {
			if g.key != nil {
				m.domainAnti = append(m.domainAnti, g)
			} else {
				m.hostAnti = append(m.hostAnti, g)
			}
		}
		if g.key != nil && (g.eligibility != nil || g.honorTaints) {
			m.eligibility = append(m.eligibility, g)
		}
		if g.key != nil {
			m.keys = appendNew(m.keys, g.key)
			for _, k := range g.requiredKeys {
				m.keys = appendNew(m.keys, k)
			}
		}
	}
	sortKeys(m.keys)
	m.owns = make([]bool, len(m.keys))
	s.labelMatches[string(key)] = m
	return m
}

// appendNew appends k unless the keys hold it already.
func appendNew(keys []*topologyKey, k *topologyKey) []*topologyKey {
	if slices.Contains(keys, k) {
		return keys
	}
	return append(keys, k)
}

func (s *scheduler) resolveMatches(p *podInfo, groups []*topologyGroup) {
	if p.err != nil {
		return
	}
	m := s.matchesOf(p.pod, groups)
	p.matches, p.matchesHostAnti, p.matchesDomainAnti, p.matchesEligibility = m.all, m.hostAnti, m.domainAnti, m.eligibility
	if len(p.domainSpreads)+len(p.domainAffinities)+len(p.domainAntiAffinities) == 0 {
		p.keys, p.owns = m.keys, m.owns
		return
	}
	p.keys = slices.Clone(m.keys)
	for _, terms := range [][]ownedTerm{p.domainSpreads, p.domainAffinities, p.domainAntiAffinities} {
		for _, t := range terms {
			p.keys = appendNew(p.keys, t.group.key)
		}
	}
	sortKeys(p.keys)
	p.owns = make([]bool, len(p.keys))
	for _, terms := range [][]ownedTerm{p.domainSpreads, p.domainAffinities, p.domainAntiAffinities} {
		for _, t := range terms {
			if !t.soft {
				p.owns[p.slot(t.group.key)] = true
			}
		}
	}
}

// slot is the position of key k in the pod's keys.
func (p *podInfo) slot(k *topologyKey) int {
	for i, pk := range p.keys {
		if pk == k {
			return i
		}
	}
	return -1
}

// buildAttempts lists the requirement sets to try: for each required node affinity term (with
// the nodeSelector) and each alternative the volumes allow, all preferred terms first, then
// fewer, dropping the lightest first.
func buildAttempts(pod *corev1.Pod, volumes []scheduling.Requirements) ([]attempt, error) {
	terms := []*corev1.NodeSelectorTerm{nil}
	var preferred []corev1.PreferredSchedulingTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			terms = nil
			for i := range r.NodeSelectorTerms {
				terms = append(terms, &r.NodeSelectorTerms[i])
			}
		}
		preferred = append(preferred, a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		sort.SliceStable(preferred, func(i, j int) bool { return preferred[i].Weight > preferred[j].Weight })
	}
	hasSoft := false
	for _, c := range pod.Spec.TopologySpreadConstraints {
		hasSoft = hasSoft || c.WhenUnsatisfiable == corev1.ScheduleAnyway
	}
	if a := pod.Spec.Affinity; a != nil {
		hasSoft = hasSoft || (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
			(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
	}
	if volumes == nil {
		volumes = []scheduling.Requirements{nil}
	}
	var attempts []attempt
	var lastErr error
	for _, term := range terms {
		base, err := scheduling.RequirementsFromRequiredTerm(pod.Spec.NodeSelector, term)
		if err != nil {
			lastErr = err
			continue
		}
		if !base.Satisfiable() {
			lastErr = fmt.Errorf("node selector and required node affinity cannot both hold")
			continue
		}
		baseKey := requirementsKey(base)
		for _, volume := range volumes {
			reach, reachKey := base, baseKey
			if volume != nil {
				if reach, _ = base.Intersect(volume); reach == nil {
					lastErr = fmt.Errorf("the pod's volumes need nodes its node selector and required node affinity exclude")
					continue
				}
				reachKey = requirementsKey(reach)
			}
			for k := len(preferred); k >= 0; k-- {
				reqs := reach
				ok := true
				for _, pref := range preferred[:k] {
					prefReqs, err := scheduling.RequirementsFromTerm(nil, &pref.Preference)
					if err != nil {
						ok = false
						break
					}
					if reqs, _ = reqs.Intersect(prefReqs); reqs == nil {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				a := attempt{requirements: reqs, base: base, baseKey: baseKey, reach: reach, reachKey: reachKey}
				if hasSoft && k == len(preferred) {
					soft := a
					soft.soft = true
					attempts = append(attempts, soft)
				}
				attempts = append(attempts, a)
			}
		}
	}
	if len(attempts) == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("no node affinity term can be satisfied")
		}
		return nil, fmt.Errorf("node affinity, %w", lastErr)
	}
	return attempts, nil
}

// requirementsKey renders requirements for caching what depends on them.
func requirementsKey(r scheduling.Requirements) string {
	if len(r) == 0 {
		return ""
	}
	return fmt.Sprint(r.NodeSelectorRequirements())
}

// appendByKey appends t to host if its topology key is the hostname, else to domain.
func appendByKey(t ownedTerm, domain, host *[]ownedTerm) {
	if t.group.key == nil {
		*host = append(*host, t)
	} else {
		*domain = append(*domain, t)
	}
}
