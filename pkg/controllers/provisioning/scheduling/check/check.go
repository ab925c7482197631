// Package check re-verifies a scheduling plan against the raw pod, node and provisioner specs.
// It shares no constraint code with the scheduler: it works on realized node labels (every
// instance type and offering a new node may launch as), Kubernetes label selectors and
// resource.Quantity arithmetic, and replays the bindings in order the way kube-scheduler
// evaluates each pod against the cluster at the time it is bound.
package check

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
)

// node is a node as the checker sees it. A new node may launch as any of several instance types
// and offerings; the checker keeps, per label key, every value those realizations give it, so a
// constraint holds only if it holds for all of them.
type node struct {
	name     string
	values   map[string]sets.Set[string]
	absent   sets.Set[string] // keys some realization lacks
	taints   []corev1.Taint
	existing bool
	pods     []*corev1.Pod
	// Per instance type of a new node: cheapest realized price, and the daemonset pods that
	// would run on some realization.
	price      map[*cloudprovider.InstanceType]float64
	daemonSets map[*cloudprovider.InstanceType][]*corev1.Pod
}

func newNode(name string) *node {
	return &node{name: name, values: map[string]sets.Set[string]{}, absent: sets.New[string](),
		price: map[*cloudprovider.InstanceType]float64{}, daemonSets: map[*cloudprovider.InstanceType][]*corev1.Pod{}}
}

func (n *node) realize(l labels.Set, first bool) {
	for k, v := range l {
		if _, ok := n.values[k]; !ok {
			n.values[k] = sets.New[string]()
			if !first {
				n.absent.Insert(k)
			}
		}
		n.values[k].Insert(v)
	}
	for k := range n.values {
		if _, ok := l[k]; !ok {
			n.absent.Insert(k)
		}
	}
}

// label is the node's value for key if every realization agrees on it.
func (n *node) label(key string) (string, bool) {
	values := n.values[key]
	if values.Len() != 1 || n.absent.Has(key) {
		return "", false
	}
	return sets.List(values)[0], true
}

// lacks reports whether no realization of the node carries key: the node is in no domain of it.
func (n *node) lacks(key string) bool { return n.values[key].Len() == 0 }

// meets reports whether every realization meets the selector: each requirement holds for every
// value its key may take.
func (n *node) meets(selector labels.Selector) bool {
	reqs, _ := selector.Requirements()
	for _, r := range reqs {
		if n.absent.Has(r.Key()) || n.values[r.Key()].Len() == 0 {
			if !r.Matches(labels.Set{}) {
				return false
			}
		}
		for v := range n.values[r.Key()] {
			if !r.Matches(labels.Set{r.Key(): v}) {
				return false
			}
		}
	}
	return true
}

// selects reports whether every realization of the node meets the pod's nodeSelector and one
// of its required node affinity terms.
func (n *node) selects(pod *corev1.Pod) (bool, error) {
	if !n.meets(labels.SelectorFromSet(pod.Spec.NodeSelector)) {
		return false, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true, nil
	}
	var errs []error
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchFields) > 0 {
			errs = append(errs, errors.New("matchFields cannot select a new node"))
			continue
		}
		selector, err := requirementsSelector(term.MatchExpressions)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(term.MatchExpressions) > 0 && n.meets(selector) {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

// Verify returns every violation it finds; none means the plan is valid.
func Verify(in scheduling.Input, r *scheduling.Results) []error {
	c := &checker{in: in, r: r, nodes: map[string]*node{}}
	c.verifyAccounting()
	c.buildNodes()
	c.verifyNewNodes()
	c.verifyMinValues()
	c.verifyPlacements()
	c.verifyVolumes()
	c.verifyAttachLimits()
	c.verifyHostPorts()
	c.verifyReadWriteOncePod()
	c.replayTopology()
	return c.errs
}

type checker struct {
	in    scheduling.Input
	r     *scheduling.Results
	nodes map[string]*node
	order []*node
	errs  []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *checker) verifyAccounting() {
	seen := map[*corev1.Pod]int{}
	for _, b := range c.r.Bindings {
		seen[b.Pod]++
	}
	for _, e := range c.r.Unschedulable {
		seen[e.Pod]++
		if e.Reason == "" {
			c.fail("pod %s/%s: unschedulable without a reason", e.Pod.Namespace, e.Pod.Name)
		}
	}
	for _, pod := range c.in.Pods {
		if seen[pod] != 1 {
			c.fail("pod %s/%s: bound or reported %d times, want exactly once", pod.Namespace, pod.Name, seen[pod])
		}
	}
	if len(seen) != len(c.in.Pods) {
		c.fail("results mention %d pods, input has %d", len(seen), len(c.in.Pods))
	}
}

func (c *checker) pool(key pools.Key) *scheduling.Pool {
	for i := range c.in.Pools {
		if c.in.Pools[i].Key == key {
			return &c.in.Pools[i]
		}
	}
	return nil
}

func (c *checker) buildNodes() {
	for _, en := range c.in.Nodes {
		n := newNode(en.Node.Name)
		n.realize(labels.Set(en.Node.Labels), true)
		n.taints, n.existing = en.Node.Spec.Taints, true
		for _, pod := range en.Pods {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				n.pods = append(n.pods, pod)
			}
		}
		c.nodes[n.name] = n
		c.order = append(c.order, n)
	}
	for _, nn := range c.r.NewNodes {
		if _, dup := c.nodes[nn.Hostname]; dup || nn.Hostname == "" {
			c.fail("new node %q: hostname empty or not unique", nn.Hostname)
			continue
		}
		n := newNode(nn.Hostname)
		n.taints = nn.Taints
		prov := c.pool(nn.Pool)
		if prov == nil {
			c.fail("new node %s: unknown pool %s", nn.Hostname, nn.Pool)
			continue
		}
		selector, err := requirementsSelector(nn.Requirements)
		if err != nil {
			c.fail("new node %s: requirements, %v", nn.Hostname, err)
			continue
		}
		provSelector, err := requirementsSelector(prov.Requirements)
		if err != nil {
			c.fail("new node %s: %s's requirements, %v", nn.Hostname, prov.Key, err)
			continue
		}
		for _, it := range nn.InstanceTypes {
			realized := 0
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				l := labels.Set{}
				for k, v := range it.Labels {
					l[k] = v
				}
				for k, v := range prov.Labels {
					l[k] = v
				}
				for k, v := range nn.Labels {
					l[k] = v
				}
				l[corev1.LabelInstanceTypeStable] = it.Name
				l[corev1.LabelTopologyZone] = o.Zone
				l[v1alpha5.CapacityTypeLabelKey] = o.CapacityType
				l[prov.Key.LabelKey] = prov.Key.Name
				l[corev1.LabelHostname] = nn.Hostname
				if !selector.Matches(l) || !provSelector.Matches(l) {
					continue
				}
				n.realize(l, len(n.price) == 0 && realized == 0)
				realized++
				if p, ok := n.price[it]; !ok || o.Price < p {
					n.price[it] = o.Price
				}
				for _, ds := range c.in.DaemonSetPods {
					if !contains(n.daemonSets[it], ds) && toleratesNoScheduleTaints(ds, nn.Taints) && podSelectsLabels(ds, l) {
						n.daemonSets[it] = append(n.daemonSets[it], ds)
					}
				}
			}
			if realized == 0 {
				c.fail("new node %s: instance type %s has no available offering meeting the node's and provisioner's requirements", nn.Hostname, it.Name)
			}
		}
		if len(n.price) == 0 {
			c.fail("new node %s: no instance type can launch it", nn.Hostname)
		}
		c.verifyChosenLabels(nn, prov)
		if !equalTaints(nn.Taints, prov.Taints) {
			c.fail("new node %s: taints %v differ from %s's %v", nn.Hostname, nn.Taints, prov.Key, prov.Taints)
		}
		c.nodes[n.name] = n
		c.order = append(c.order, n)
	}
}

// verifyChosenLabels checks the labels the pool chose for a new node: each on a key the pool
// requires and gives no value of its own, which none of the node's instance types carries.
func (c *checker) verifyChosenLabels(nn *scheduling.NewNode, prov *scheduling.Pool) {
	for k := range nn.Labels {
		_, labelled := prov.Labels[k]
		if labelled || k == prov.Key.LabelKey || !slices.ContainsFunc(prov.Requirements, func(r corev1.NodeSelectorRequirement) bool { return r.Key == k }) {
			c.fail("new node %s: label %s is not one %s chooses", nn.Hostname, k, prov.Key)
		}
		for _, it := range nn.InstanceTypes {
			if _, ok := it.Labels[k]; ok {
				c.fail("new node %s: label %s is chosen, but instance type %s carries it", nn.Hostname, k, it.Name)
			}
		}
	}
}

// verifyNewNodes checks each new node's instance types: offered by its provisioner, fitting
// its pods and daemonsets, cheapest first at the stated price, and within limits.
func (c *checker) verifyNewNodes() {
	launched := map[pools.Key]corev1.ResourceList{}
	for _, nn := range c.r.NewNodes {
		n := c.nodes[nn.Hostname]
		prov := c.pool(nn.Pool)
		if n == nil || prov == nil || len(nn.InstanceTypes) == 0 {
			if len(nn.InstanceTypes) == 0 {
				c.fail("new node %s: no instance types", nn.Hostname)
			}
			continue
		}
		offered := map[*cloudprovider.InstanceType]bool{}
		for _, it := range prov.InstanceTypes {
			offered[it] = true
		}
		previous := -1.0
		for i, it := range nn.InstanceTypes {
			if !offered[it] {
				c.fail("new node %s: instance type %s is not offered for %s", nn.Hostname, it.Name, prov.Key)
			}
			price, ok := n.price[it]
			if !ok {
				price = math.Inf(1)
			}
			if price < previous {
				c.fail("new node %s: instance types not cheapest first (%s at %v after %v)", nn.Hostname, it.Name, price, previous)
			}
			previous = price
			if i == 0 && math.Abs(price-nn.Price) > 1e-9 {
				c.fail("new node %s: price %v, cheapest offering of %s is %v", nn.Hostname, nn.Price, it.Name, price)
			}
			c.verifyFit(nn, it, n)
		}
		used := launched[prov.Key]
		if used == nil {
			used = prov.Used.DeepCopy()
			if used == nil {
				used = corev1.ResourceList{}
			}
			launched[prov.Key] = used
		}
		for name, q := range nodeCount(nn.InstanceTypes[0]) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	for _, nn := range c.r.NewNodes {
		prov := c.pool(nn.Pool)
		if prov == nil || len(prov.Limits) == 0 || len(nn.InstanceTypes) == 0 {
			continue
		}
		for _, it := range nn.InstanceTypes {
			for name, limit := range prov.Limits {
				total := launched[prov.Key][name]
				total.Sub(nodeCount(nn.InstanceTypes[0])[name])
				total.Add(nodeCount(it)[name])
				if total.Cmp(limit) > 0 {
					c.fail("new node %s: launching %s would take %s to %s %s, over its limit %s", nn.Hostname, it.Name, prov.Key, total.String(), name, limit.String())
				}
			}
		}
	}
}

// verifyMinValues checks that a new node is marked relaxed exactly when its realizations give
// fewer distinct values of a key than its pool's minValues, and that under the Strict policy
// only a pool's limits, which leave a node fewer instance types to grow into, relax one.
func (c *checker) verifyMinValues() {
	for _, nn := range c.r.NewNodes {
		n, prov := c.nodes[nn.Hostname], c.pool(nn.Pool)
		if n == nil || prov == nil {
			continue
		}
		short := ""
		for _, key := range slices.Sorted(maps.Keys(prov.MinValues)) {
			if have, want := n.values[key].Len(), prov.MinValues[key]; have < want {
				short = fmt.Sprintf("%d values of %s, minValues %d", have, key, want)
				break
			}
		}
		switch {
		case short != "" && !nn.MinValuesRelaxed:
			c.fail("new node %s: %s, and not marked relaxed", nn.Hostname, short)
		case short == "" && nn.MinValuesRelaxed:
			c.fail("new node %s: marked relaxed, but its instance types meet %s's minValues", nn.Hostname, prov.Key)
		case short != "" && prov.MinValuesPolicy != scheduling.MinValuesBestEffort && len(prov.Limits) == 0:
			c.fail("new node %s: %s under the Strict policy", nn.Hostname, short)
		}
	}
}

func (c *checker) verifyFit(nn *scheduling.NewNode, it *cloudprovider.InstanceType, n *node) {
	total := corev1.ResourceList{}
	count := int64(0)
	for _, pod := range nn.Pods {
		addInto(total, effectiveRequests(pod))
		count++
	}
	// A daemonset counts if it would run on any realization of this instance type.
	for _, ds := range n.daemonSets[it] {
		addInto(total, effectiveRequests(ds))
		count++
	}
	allocatable := it.Allocatable()
	for name, q := range total {
		if name == corev1.ResourcePods {
			continue
		}
		if a := allocatable[name]; q.Cmp(a) > 0 {
			c.fail("new node %s as %s: %s requested %s, allocatable %s", nn.Hostname, it.Name, name, q.String(), a.String())
		}
	}
	if pods := allocatable[corev1.ResourcePods]; count > pods.Value() {
		c.fail("new node %s as %s: %d pods, room for %d", nn.Hostname, it.Name, count, pods.Value())
	}
}

// verifyPlacements checks node selection, taints and, on existing nodes, room.
func (c *checker) verifyPlacements() {
	existingUse := map[string]corev1.ResourceList{}
	for _, b := range c.r.Bindings {
		n := c.nodes[b.NodeName]
		if n == nil {
			c.fail("pod %s/%s: bound to unknown node %q", b.Pod.Namespace, b.Pod.Name, b.NodeName)
			continue
		}
		if ok, err := n.selects(b.Pod); err != nil || !ok {
			c.fail("pod %s/%s: node %s does not meet its nodeSelector or required node affinity (%v)", b.Pod.Namespace, b.Pod.Name, n.name, err)
		}
		if !toleratesNoScheduleTaints(b.Pod, n.taints) {
			c.fail("pod %s/%s: does not tolerate the taints of node %s", b.Pod.Namespace, b.Pod.Name, n.name)
		}
		if n.existing {
			use := existingUse[n.name]
			if use == nil {
				use = corev1.ResourceList{}
				for _, pod := range n.pods {
					addInto(use, effectiveRequests(pod))
				}
				existingUse[n.name] = use
			}
			addInto(use, effectiveRequests(b.Pod))
		}
	}
	for _, en := range c.in.Nodes {
		use, ok := existingUse[en.Node.Name]
		if !ok {
			continue
		}
		if en.Node.Spec.Unschedulable {
			c.fail("node %s: cordoned but given pods", en.Node.Name)
		}
		for name, q := range use {
			if a := en.Node.Status.Allocatable[name]; q.Cmp(a) > 0 {
				c.fail("node %s: %s requested %s, allocatable %s", en.Node.Name, name, q.String(), a.String())
			}
		}
	}
}

func addInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// effectiveRequests follows the Kubernetes definition: per resource, the larger of the
// long-running containers (app containers and restartable init containers) and the peak of the
// init sequence, where each init container runs beside the restartable ones started before it;
// plus pod overhead; plus one pod.
func effectiveRequests(pod *corev1.Pod) corev1.ResourceList {
	names := map[corev1.ResourceName]bool{}
	for _, c := range pod.Spec.Containers {
		for n := range c.Resources.Requests {
			names[n] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for n := range c.Resources.Requests {
			names[n] = true
		}
	}
	out := corev1.ResourceList{}
	for name := range names {
		longRunning := resource.Quantity{}
		for _, c := range pod.Spec.Containers {
			longRunning.Add(c.Resources.Requests[name])
		}
		started := resource.Quantity{}
		peak := resource.Quantity{}
		for _, c := range pod.Spec.InitContainers {
			step := started.DeepCopy()
			step.Add(c.Resources.Requests[name])
			if step.Cmp(peak) > 0 {
				peak = step
			}
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				started.Add(c.Resources.Requests[name])
			}
		}
		longRunning.Add(started)
		if peak.Cmp(longRunning) > 0 {
			longRunning = peak
		}
		out[name] = longRunning
	}
	for name, q := range pod.Spec.Overhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	out[corev1.ResourcePods] = resource.MustParse("1")
	return out
}

func toleratesNoScheduleTaints(pod *corev1.Pod, taints []corev1.Taint) bool {
	for i := range taints {
		if taints[i].Effect != corev1.TaintEffectNoSchedule && taints[i].Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			tolerated = tolerated || pod.Spec.Tolerations[j].ToleratesTaint(&taints[i])
		}
		if !tolerated {
			return false
		}
	}
	return true
}

func equalTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

// nodeCount is what a node of the type counts against its pool's limits: its capacity, and
// one node.
func nodeCount(it *cloudprovider.InstanceType) corev1.ResourceList {
	out := it.Capacity.DeepCopy()
	out[v1.LimitNodes] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

var operators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func requirementsSelector(reqs []corev1.NodeSelectorRequirement) (labels.Selector, error) {
	selector := labels.NewSelector()
	for _, r := range reqs {
		op, ok := operators[r.Operator]
		if !ok {
			return nil, fmt.Errorf("unknown operator %q", r.Operator)
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, err
		}
		selector = selector.Add(*req)
	}
	return selector, nil
}

// podSelectsLabels evaluates a pod's nodeSelector and required node affinity on node labels.
func podSelectsLabels(pod *corev1.Pod, l labels.Set) bool {
	if !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(l) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		selector, err := requirementsSelector(term.MatchExpressions)
		if err == nil && len(term.MatchFields) == 0 && len(term.MatchExpressions) > 0 && selector.Matches(l) {
			return true
		}
	}
	return false
}

func contains(pods []*corev1.Pod, pod *corev1.Pod) bool {
	for _, p := range pods {
		if p == pod {
			return true
		}
	}
	return false
}
