// Package statemetrics exports upstream Karpenter's node and pod families from the cluster's
// state: each node's allocatable, overhead, pod and DaemonSet requests and limits, each pod's
// state, and how long pods took to become ready. Dashboards built for upstream read them as
// they are; nodes a Provisioner launched carry its name in the nodepool label.
package statemetrics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/periodic"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/pods"
)

// Name identifies the controller.
const Name = "statemetrics"

// DefaultPeriod is how often the families are recomputed, as upstream's.
const DefaultPeriod = 5 * time.Second

// Options configure the controller.
type Options struct {
	Client client.Reader
	Clock  clock.Clock
	// Period is how often the families are recomputed; DefaultPeriod when zero.
	Period time.Duration
}

// Controller recomputes the families periodically, on the leader only.
type Controller struct {
	client client.Reader
	clock  clock.Clock
	period time.Duration
	// since is when this replica started: only pods ready after it count in the startup
	// duration, so that a new leader does not count the whole cluster again.
	since time.Time
	// startedPods are the pods whose startup was counted, pruned as pods go.
	startedPods map[types.UID]bool
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client and a clock", Name)
	}
	if options.Period <= 0 {
		options.Period = DefaultPeriod
	}
	return &Controller{client: options.Client, clock: options.Clock, period: options.Period, since: options.Clock.Now(),
		startedPods: map[types.UID]bool{}}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools;provisioners,verbs=get;list;watch

// SetupWithManager recomputes the families at once and then every period, on the leader only.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return periodic.Add(mgr, &periodic.Loop{Name: Name, Clock: c.clock, Pass: c.Export, Period: c.period})
}

// Export recomputes every family from the cluster's nodes and pods. It only reads them, so it
// reads the cache's objects without copying them: every period, a copy of every pod was the
// largest of the controller's allocations with 5,000 pods.
func (c *Controller) Export(ctx context.Context) error {
	var nodeList corev1.NodeList
	if err := c.client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	var podList corev1.PodList
	if err := c.client.List(ctx, &podList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing pods, %w", err)
	}
	nodes := make(map[string]*corev1.Node, len(nodeList.Items))
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	p := newPass()
	usage := c.nodeUsage(podList.Items)
	for _, node := range nodes {
		// The node's labels, shared by its series of every family and resource.
		labels, err := p.labelPairs(nodeLabels, nodeLabelsOf(node))
		if err != nil {
			p.error(fmt.Errorf("node %s, %w", node.Name, err))
			continue
		}
		u := usage[node.Name]
		if u == nil {
			u = newUsage()
		}
		for _, f := range []familyResources{
			{allocatable, node.Status.Allocatable},
			{systemOverhead, subtract(node.Status.Capacity, node.Status.Allocatable)},
			{totalPodRequests, withCPUAndMemory(u.podRequests)},
			{totalPodLimits, withCPUAndMemory(u.podLimits)},
			{totalDaemonRequests, withCPUAndMemory(u.daemonRequests)},
			{totalDaemonLimits, withCPUAndMemory(u.daemonLimits)},
		} {
			for _, r := range byResourceType(f.resources) {
				resource, err := p.pair(metrics.ResourceTypeLabel, r.label)
				if err != nil {
					p.error(fmt.Errorf("%s of node %s, %w", f.family.name, node.Name, err))
					continue
				}
				p.set(f.family, r.value, withPair(labels, resource))
			}
		}
	}
	now := c.clock.Now()
	seen := make(map[types.UID]bool, len(podList.Items))
	for i := range podList.Items {
		pod := &podList.Items[i]
		seen[pod.UID] = true
		if err := p.setValues(podState, 1, podLabelsOf(pod, nodes[pod.Spec.NodeName])...); err != nil {
			p.error(fmt.Errorf("pod %s/%s, %w", pod.Namespace, pod.Name, err))
		}
		if ready := condition(pod, corev1.PodReady); ready != nil && ready.Status == corev1.ConditionTrue && !pods.IsTerminal(pod) &&
			!c.startedPods[pod.UID] && ready.LastTransitionTime.After(c.since) && !ready.LastTransitionTime.After(now) {
			startupDuration.Observe(ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
			c.startedPods[pod.UID] = true
		}
	}
	for uid := range c.startedPods {
		if !seen[uid] {
			delete(c.startedPods, uid)
		}
	}
	if err := c.nodePools(ctx, p); err != nil {
		return err
	}
	for _, family := range stateFamilies {
		family.replace(p.series[family])
	}
	if len(p.errs) > 0 {
		return fmt.Errorf("series left out, %w", errors.Join(p.errs...))
	}
	return nil
}

// nodePools sets the usage and limit of every NodePool and Provisioner. A NodePool and a
// Provisioner of one name are one pool to the families, the Provisioner's value where both
// have one, as when each set its series in turn.
func (c *Controller) nodePools(ctx context.Context, p *pass) error {
	var nodePools v1.NodePoolList
	if err := c.client.List(ctx, &nodePools); err != nil {
		return fmt.Errorf("listing nodepools, %w", err)
	}
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return fmt.Errorf("listing provisioners, %w", err)
	}
	type bounds struct{ usage, limits corev1.ResourceList }
	pools := map[string]bounds{}
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		usage := np.Status.Resources.DeepCopy()
		if np.Status.Nodes != nil {
			if usage == nil {
				usage = corev1.ResourceList{}
			}
			usage[v1.LimitNodes] = *resource.NewQuantity(*np.Status.Nodes, resource.DecimalSI)
		}
		pools[np.Name] = bounds{usage: usage, limits: corev1.ResourceList(np.Spec.Limits)}
	}
	for i := range provisioners.Items {
		provisioner := &provisioners.Items[i]
		var limits corev1.ResourceList
		if provisioner.Spec.Limits != nil {
			limits = provisioner.Spec.Limits.Resources
		}
		nodePool := pools[provisioner.Name]
		pools[provisioner.Name] = bounds{usage: merged(nodePool.usage, provisioner.Status.Resources), limits: merged(nodePool.limits, limits)}
	}
	for name, b := range pools {
		for _, f := range []familyResources{{nodePoolUsage, b.usage}, {nodePoolLimit, b.limits}} {
			for _, r := range byResourceType(f.resources) {
				if err := p.setValues(f.family, r.value, name, r.label); err != nil {
					p.error(fmt.Errorf("nodepool %s, %w", name, err))
				}
			}
		}
	}
	return nil
}

// familyResources are the resources a family has a series of, by resource type, for one node or
// pool.
type familyResources struct {
	family    *gaugeFamily
	resources corev1.ResourceList
}

// merged is a new list of a's resources and b's, b's where both have one.
func merged(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// resourceValue is a resource's value under its resource_type label.
type resourceValue struct {
	label string
	value float64
}

// byResourceType are the values of resources by their resource_type label, in the order of
// their names. Names the label spells alike (example.com/foo-bar and example.com/foo_bar, or two
// cases) give the first name's series only: two series of one label set fail every scrape.
func byResourceType(resources corev1.ResourceList) []resourceValue {
	out := make([]resourceValue, 0, len(resources))
	for _, name := range slices.Sorted(maps.Keys(resources)) {
		label := resourceType(name)
		if !slices.ContainsFunc(out, func(r resourceValue) bool { return r.label == label }) {
			out = append(out, resourceValue{label: label, value: value(name, resources[name])})
		}
	}
	return out
}

// usage is what the pods bound to one node request and limit.
type usage struct {
	podRequests, podLimits, daemonRequests, daemonLimits corev1.ResourceList
}

func newUsage() *usage {
	return &usage{podRequests: corev1.ResourceList{}, podLimits: corev1.ResourceList{}, daemonRequests: corev1.ResourceList{}, daemonLimits: corev1.ResourceList{}}
}

// nodeUsage sums the requests and limits of the pods bound to each node and not done.
func (c *Controller) nodeUsage(podList []corev1.Pod) map[string]*usage {
	out := map[string]*usage{}
	for i := range podList {
		pod := &podList[i]
		if pod.Spec.NodeName == "" || pods.IsTerminal(pod) {
			continue
		}
		u := out[pod.Spec.NodeName]
		if u == nil {
			u = newUsage()
			out[pod.Spec.NodeName] = u
		}
		requests, limits := pods.Requests(pod), pods.Limits(pod)
		add(u.podRequests, requests)
		add(u.podLimits, limits)
		if pods.IsOwnedByDaemonSet(pod) {
			add(u.daemonRequests, requests)
			add(u.daemonLimits, limits)
		}
	}
	return out
}

func add(into, more corev1.ResourceList) {
	for name, quantity := range more {
		sum := into[name]
		sum.Add(quantity)
		into[name] = sum
	}
}

// subtract is a - b for the resources of a.
func subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, quantity := range a {
		difference := quantity.DeepCopy()
		if other, ok := b[name]; ok {
			difference.Sub(other)
		}
		out[name] = difference
	}
	return out
}

// withCPUAndMemory reports a node whose pods request (or limit) no CPU or memory as 0 rather
// than no series, so that sums by node pool and dashboards always have both.
func withCPUAndMemory(resources corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourceCPU: resource.Quantity{}, corev1.ResourceMemory: resource.Quantity{}}
	for name, quantity := range resources {
		out[name] = quantity
	}
	return out
}

// value is a quantity in cores for CPU, else in its unit.
func value(name corev1.ResourceName, quantity resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(quantity.MilliValue()) / 1000
	}
	return float64(quantity.Value())
}

// resourceType is a resource's name as the resource_type label gives it.
func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// nodeLabelsOf are the values of a node's labels, in the order of nodeLabels.
func nodeLabelsOf(node *corev1.Node) []string {
	pool := metrics.NodePool(node)
	return []string{node.Name, pool, metrics.Zone(node), node.Labels[corev1.LabelTopologyRegion],
		node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelArchStable], node.Labels[corev1.LabelOSStable],
		node.Labels[v1alpha5.CapacityTypeLabelKey], string(node.Status.Phase), strconv.FormatBool(pool != "")}
}

// podLabelsOf are the values of a pod's labels, in the order of podState's, those of its node
// when it is bound to one Karpenter knows.
func podLabelsOf(pod *corev1.Pod, node *corev1.Node) []string {
	var pool, zone, arch, capacityType, instanceType string
	if node != nil {
		pool, zone = metrics.NodePool(node), metrics.Zone(node)
		arch, capacityType, instanceType = node.Labels[corev1.LabelArchStable], node.Labels[v1alpha5.CapacityTypeLabelKey], node.Labels[corev1.LabelInstanceTypeStable]
	}
	return []string{pod.Name, pod.Namespace, ownerOf(pod), pod.Spec.NodeName, conditionStatus(pod, corev1.PodScheduled), pool, zone, arch,
		capacityType, instanceType, string(pod.Status.Phase), conditionStatus(pod, corev1.PodReady), strconv.FormatBool(pool != "")}
}

// ownerOf is the API path of the pod's controller, as upstream's owner label: "" for none.
func ownerOf(pod *corev1.Pod) string {
	for _, owner := range pod.OwnerReferences {
		if owner.Controller == nil || !*owner.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(owner.APIVersion)
		if err != nil {
			return ""
		}
		resource := strings.ToLower(owner.Kind) + "s"
		if gv.Group == "" {
			return fmt.Sprintf("/api/%s/namespaces/%s/%s/%s", gv.Version, pod.Namespace, resource, owner.Name)
		}
		return fmt.Sprintf("/apis/%s/namespaces/%s/%s/%s", gv.String(), pod.Namespace, resource, owner.Name)
	}
	return ""
}

func conditionStatus(pod *corev1.Pod, conditionType corev1.PodConditionType) string {
	if c := condition(pod, conditionType); c != nil {
		return string(c.Status)
	}
	return ""
}

func condition(pod *corev1.Pod, conditionType corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == conditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
