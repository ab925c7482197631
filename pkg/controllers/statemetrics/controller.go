// Package statemetrics exports upstream Karpenter's node and pod families from the cluster's
// state: each node's allocatable, overhead, pod and DaemonSet requests and limits, each pod's
// state, and how long pods took to become ready. Dashboards built for upstream read them as
// they are; nodes a Provisioner launched carry its name in the nodepool label.
package statemetrics

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// served are the series the last pass set, by family, so that the next deletes those gone.
	served map[*prometheus.GaugeVec]map[string]prometheus.Labels
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
		startedPods: map[types.UID]bool{}, served: map[*prometheus.GaugeVec]map[string]prometheus.Labels{}}, nil
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
	nodes := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	series := map[*prometheus.GaugeVec]map[string]sample{}
	set := func(family *prometheus.GaugeVec, labels prometheus.Labels, value float64) {
		if series[family] == nil {
			series[family] = map[string]sample{}
		}
		series[family][key(labels)] = sample{labels: labels, value: value}
	}
	usage := c.nodeUsage(podList.Items)
	for _, node := range nodes {
		labels := nodeLabelsOf(node)
		u := usage[node.Name]
		if u == nil {
			u = newUsage()
		}
		for family, resources := range map[*prometheus.GaugeVec]corev1.ResourceList{
			allocatable:         node.Status.Allocatable,
			systemOverhead:      subtract(node.Status.Capacity, node.Status.Allocatable),
			totalPodRequests:    withCPUAndMemory(u.podRequests),
			totalPodLimits:      withCPUAndMemory(u.podLimits),
			totalDaemonRequests: withCPUAndMemory(u.daemonRequests),
			totalDaemonLimits:   withCPUAndMemory(u.daemonLimits),
		} {
			for name, quantity := range resources {
				set(family, withResource(labels, name), value(name, quantity))
			}
		}
	}
	now := c.clock.Now()
	seen := map[types.UID]bool{}
	for i := range podList.Items {
		pod := &podList.Items[i]
		seen[pod.UID] = true
		set(podState, podLabelsOf(pod, nodes[pod.Spec.NodeName]), 1)
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
	if err := c.nodePools(ctx, set); err != nil {
		return err
	}
	for _, family := range append(append([]*prometheus.GaugeVec{}, nodeFamilies...), podState, nodePoolUsage, nodePoolLimit) {
		c.replace(family, series[family])
	}
	return nil
}

// nodePools sets the usage and limit of every NodePool and Provisioner.
func (c *Controller) nodePools(ctx context.Context, set func(*prometheus.GaugeVec, prometheus.Labels, float64)) error {
	var nodePools v1.NodePoolList
	if err := c.client.List(ctx, &nodePools); err != nil {
		return fmt.Errorf("listing nodepools, %w", err)
	}
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return fmt.Errorf("listing provisioners, %w", err)
	}
	pool := func(name string, usage, limits corev1.ResourceList) {
		labels := prometheus.Labels{metrics.NodePoolLabel: name}
		for resourceName, quantity := range usage {
			set(nodePoolUsage, withResource(labels, resourceName), value(resourceName, quantity))
		}
		for resourceName, quantity := range limits {
			set(nodePoolLimit, withResource(labels, resourceName), value(resourceName, quantity))
		}
	}
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		usage := np.Status.Resources.DeepCopy()
		if np.Status.Nodes != nil {
			if usage == nil {
				usage = corev1.ResourceList{}
			}
			usage[v1.LimitNodes] = *resource.NewQuantity(*np.Status.Nodes, resource.DecimalSI)
		}
		pool(np.Name, usage, corev1.ResourceList(np.Spec.Limits))
	}
	for i := range provisioners.Items {
		p := &provisioners.Items[i]
		var limits corev1.ResourceList
		if p.Spec.Limits != nil {
			limits = p.Spec.Limits.Resources
		}
		pool(p.Name, p.Status.Resources, limits)
	}
	return nil
}

type sample struct {
	labels prometheus.Labels
	value  float64
}

// replace sets the family's series to those given and deletes the ones the last pass set and
// this one did not, so that a scrape never sees the family empty.
func (c *Controller) replace(family *prometheus.GaugeVec, samples map[string]sample) {
	for _, s := range samples {
		family.With(s.labels).Set(s.value)
	}
	for k, labels := range c.served[family] {
		if _, ok := samples[k]; !ok {
			family.Delete(labels)
		}
	}
	served := make(map[string]prometheus.Labels, len(samples))
	for k, s := range samples {
		served[k] = s.labels
	}
	c.served[family] = served
}

func key(labels prometheus.Labels) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "%s=%q,", name, labels[name])
	}
	return b.String()
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

func withResource(labels prometheus.Labels, name corev1.ResourceName) prometheus.Labels {
	out := make(prometheus.Labels, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[metrics.ResourceTypeLabel] = strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
	return out
}

func nodeLabelsOf(node *corev1.Node) prometheus.Labels {
	return prometheus.Labels{
		labelNodeName:             node.Name,
		metrics.NodePoolLabel:     metrics.NodePool(node),
		metrics.ZoneLabel:         metrics.Zone(node),
		labelRegion:               node.Labels[corev1.LabelTopologyRegion],
		labelInstanceType:         node.Labels[corev1.LabelInstanceTypeStable],
		labelArch:                 node.Labels[corev1.LabelArchStable],
		labelOS:                   node.Labels[corev1.LabelOSStable],
		metrics.CapacityTypeLabel: node.Labels[v1alpha5.CapacityTypeLabelKey],
		labelPhase:                string(node.Status.Phase),
		labelManaged:              strconv.FormatBool(metrics.NodePool(node) != ""),
	}
}

// podLabelsOf are a pod's labels, those of its node when it is bound to one Karpenter knows.
func podLabelsOf(pod *corev1.Pod, node *corev1.Node) prometheus.Labels {
	labels := prometheus.Labels{
		labelName: pod.Name, labelNamespace: pod.Namespace, labelOwner: ownerOf(pod), labelNode: pod.Spec.NodeName,
		labelScheduled: conditionStatus(pod, corev1.PodScheduled), labelPhase: string(pod.Status.Phase),
		labelReady: conditionStatus(pod, corev1.PodReady), metrics.NodePoolLabel: "", metrics.ZoneLabel: "",
		labelArch: "", metrics.CapacityTypeLabel: "", labelInstanceType: "", labelManaged: "false",
	}
	if node != nil {
		labels[metrics.NodePoolLabel] = metrics.NodePool(node)
		labels[metrics.ZoneLabel] = metrics.Zone(node)
		labels[labelArch] = node.Labels[corev1.LabelArchStable]
		labels[metrics.CapacityTypeLabel] = node.Labels[v1alpha5.CapacityTypeLabelKey]
		labels[labelInstanceType] = node.Labels[corev1.LabelInstanceTypeStable]
		labels[labelManaged] = strconv.FormatBool(metrics.NodePool(node) != "")
	}
	return labels
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
