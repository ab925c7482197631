// Package oracle replays the provisioning scheduler's plans through kube-scheduler's own filter
// plugins: every pod the scheduler places must pass them on its node, with the pods placed
// before it already bound, as kube-scheduler would see the cluster once the plan's nodes exist.
package oracle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/workloads"
)

// filters are the kube-scheduler plugins whose Filter every placement must pass, after the
// PreFilter of those that have one (all but TaintToleration).
var filters = []string{
	names.NodeAffinity, names.TaintToleration, names.NodeResourcesFit, names.PodTopologySpread,
	names.InterPodAffinity, names.VolumeZone, names.VolumeBinding, names.NodeVolumeLimits, names.NodePorts,
}

var preFilters = slices.DeleteFunc(slices.Clone(filters), func(name string) bool { return name == names.TaintToleration })

func TestMain(m *testing.M) {
	// The framework records into kube-scheduler's metrics, which must exist first.
	metrics.Register()
	os.Exit(m.Run())
}

// TestPlacementsPassKubeSchedulerFilters replays the seeded mixed workloads that
// scheduling/check verifies, realizing each new node as the first and as the last instance type
// it may launch as.
func TestPlacementsPassKubeSchedulerFilters(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := workloads.Mixed(seed)
			r := scheduling.Schedule(in)
			if len(r.Bindings) == 0 {
				t.Fatal("no pod placed")
			}
			for _, realization := range []struct {
				name string
				pick func([]*cloudprovider.InstanceType) *cloudprovider.InstanceType
			}{
				{"first", func(types []*cloudprovider.InstanceType) *cloudprovider.InstanceType { return types[0] }},
				{"last", func(types []*cloudprovider.InstanceType) *cloudprovider.InstanceType { return types[len(types)-1] }},
			} {
				errs, err := replay(t.Context(), in, r, realization.pick)
				if err != nil {
					t.Fatalf("%s instance types: %v", realization.name, err)
				}
				for i, err := range errs {
					if i == 10 {
						t.Errorf("%s instance types: and %d more", realization.name, len(errs)-i)
						break
					}
					t.Errorf("%s instance types: %v", realization.name, err)
				}
			}
		})
	}
}

// TestChosenLabelsPassKubeSchedulerFilters replays upstream's capacity-spread pattern: the
// labels the NodePools chose are on the nodes, and kube-scheduler's spread filter admits every
// pod where the plan put it.
func TestChosenLabelsPassKubeSchedulerFilters(t *testing.T) {
	for _, pods := range []int{5, 23} {
		t.Run(fmt.Sprint(pods), func(t *testing.T) {
			in := workloads.CapacitySpread(pods)
			r := scheduling.Schedule(in)
			if len(r.Bindings) != 2*pods {
				t.Fatalf("%d pods placed of %d", len(r.Bindings), 2*pods)
			}
			errs, err := replay(t.Context(), in, r, func(types []*cloudprovider.InstanceType) *cloudprovider.InstanceType { return types[0] })
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}

// replay binds the plan's pods in order on the cluster the plan makes, new nodes launched as
// pick chooses, and returns each placement kube-scheduler's filters refuse.
func replay(ctx context.Context, in scheduling.Input, r *scheduling.Results, pick func([]*cloudprovider.InstanceType) *cloudprovider.InstanceType) ([]error, error) {
	var nodes []*corev1.Node
	var placed []*corev1.Pod
	objects := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}}}
	for _, n := range in.Nodes {
		nodes = append(nodes, n.Node)
		if n.CSINode != nil {
			objects = append(objects, n.CSINode)
		}
		for _, pod := range n.Pods {
			placed = append(placed, bound(pod, n.Node.Name))
		}
	}
	for _, nn := range r.NewNodes {
		node, csiNode, err := realize(in, nn, pick(nn.InstanceTypes))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, node)
		objects = append(objects, csiNode)
		placed = append(placed, daemonPods(in, node)...)
	}
	for _, pv := range in.PersistentVolumes {
		pv = pv.DeepCopy()
		if pv.Spec.ClaimRef != nil {
			pv.Status.Phase = corev1.VolumeBound
		}
		objects = append(objects, pv)
	}
	for _, pvc := range in.PersistentVolumeClaims {
		pvc = pvc.DeepCopy()
		if pvc.Spec.VolumeName != "" {
			// The PV controller's mark of a completed binding, which VolumeBinding waits for.
			metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
			pvc.Status.Phase = corev1.ClaimBound
		}
		objects = append(objects, pvc)
	}
	for _, sc := range in.StorageClasses {
		objects = append(objects, sc)
	}

	lister := &snapshotLister{}
	fwk, err := newFramework(ctx, fake.NewClientset(objects...), lister)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, b := range r.Bindings {
		lister.Snapshot = cache.NewSnapshot(placed, nodes)
		if err := admits(ctx, fwk, lister.Snapshot, b.Pod, b.NodeName); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s on node %s: %w", b.Pod.Namespace, b.Pod.Name, b.NodeName, err))
		}
		placed = append(placed, bound(b.Pod, b.NodeName))
	}
	return errs, nil
}

// admits runs the PreFilter and Filter plugins for the pod against its node.
func admits(ctx context.Context, fwk framework.Framework, snapshot *cache.Snapshot, pod *corev1.Pod, nodeName string) error {
	state := framework.NewCycleState()
	result, status, _ := fwk.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		return fmt.Errorf("prefilter %s: %w", status.Plugin(), status.AsError())
	}
	if !result.AllNodes() && !result.NodeNames.Has(nodeName) {
		return errors.New("prefilter excludes the node")
	}
	info, err := snapshot.NodeInfos().Get(nodeName)
	if err != nil {
		return err
	}
	if status := fwk.RunFilterPlugins(ctx, state, pod, info); !status.IsSuccess() {
		return fmt.Errorf("filter %s: %w", status.Plugin(), status.AsError())
	}
	return nil
}

// newFramework builds kube-scheduler's framework with the default plugin arguments and only the
// filters enabled, its listers reading client's objects and the snapshot lister serves.
func newFramework(ctx context.Context, client *fake.Clientset, lister *snapshotLister) (framework.Framework, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's default configuration, %w", err)
	}
	profile := cfg.Profiles[0]
	enabled := func(names ...string) config.PluginSet {
		var set config.PluginSet
		for _, name := range names {
			set.Enabled = append(set.Enabled, config.Plugin{Name: name})
		}
		return set
	}
	profile.Plugins = &config.Plugins{
		QueueSort: enabled(names.PrioritySort),
		PreFilter: enabled(preFilters...),
		Filter:    enabled(filters...),
		Bind:      enabled(names.DefaultBinder),
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	fwk, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &profile,
		frameworkruntime.WithClientSet(client), frameworkruntime.WithInformerFactory(factory), frameworkruntime.WithSnapshotSharedLister(lister))
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's framework, %w", err)
	}
	factory.Start(ctx.Done())
	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil, fmt.Errorf("informer %v did not sync", informer)
		}
	}
	return fwk, nil
}

// snapshotLister serves the snapshot of the moment, which changes after every binding while the
// framework keeps the lister it was built with.
type snapshotLister struct{ *cache.Snapshot }

// realize is the node and CSINode a new node becomes when it launches as instance type it, in
// its cheapest offering that meets the node's requirements.
func realize(in scheduling.Input, nn *scheduling.NewNode, it *cloudprovider.InstanceType) (*corev1.Node, *storagev1.CSINode, error) {
	var prov *scheduling.Pool
	for i := range in.Pools {
		if in.Pools[i].Key == nn.Pool {
			prov = &in.Pools[i]
		}
	}
	if prov == nil {
		return nil, nil, fmt.Errorf("new node %s: unknown pool %s", nn.Hostname, nn.Pool)
	}
	requirements := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: nn.Requirements}}}
	var node *corev1.Node
	best := math.Inf(1)
	for _, o := range it.Offerings {
		if !o.Available || o.Price >= best {
			continue
		}
		labels := map[string]string{}
		for k, v := range it.Labels {
			labels[k] = v
		}
		for k, v := range prov.Labels {
			labels[k] = v
		}
		for k, v := range nn.Labels {
			labels[k] = v
		}
		labels[prov.Key.LabelKey] = prov.Key.Name
		labels[corev1.LabelInstanceTypeStable] = it.Name
		labels[corev1.LabelTopologyZone] = o.Zone
		labels[v1alpha5.CapacityTypeLabelKey] = o.CapacityType
		labels[corev1.LabelHostname] = nn.Hostname
		// The EBS CSI driver's node plugin labels the node with its zone when it registers;
		// the plan counts on it running on every launched node.
		labels["topology.ebs.csi.aws.com/zone"] = o.Zone
		candidate := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nn.Hostname, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: slices.Clone(nn.Taints)},
			Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
		}
		if len(nn.Requirements) > 0 {
			if ok, err := corev1helpers.MatchNodeSelectorTerms(candidate, requirements); err != nil || !ok {
				continue
			}
		}
		node, best = candidate, o.Price
	}
	if node == nil {
		return nil, nil, fmt.Errorf("new node %s: no offering of %s meets its requirements %v", nn.Hostname, it.Name, nn.Requirements)
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: nn.Hostname}}
	for _, driver := range slices.Sorted(maps.Keys(it.VolumeLimits)) {
		csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, storagev1.CSINodeDriver{Name: driver, NodeID: nn.Hostname,
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(int32(it.VolumeLimits[driver]))}})
	}
	return node, csiNode, nil
}

// daemonPods are the pods the DaemonSet controller runs on a new node, by its own decision
// (node affinity, taints against the tolerations it adds) and as it builds them.
func daemonPods(in scheduling.Input, node *corev1.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, template := range in.DaemonSetPods {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: template.Name, Namespace: template.Namespace},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta, Spec: template.Spec}}}
		if run, _ := daemon.NodeShouldRunDaemonPod(node, ds); !run {
			continue
		}
		pod := daemon.NewPod(ds, node.Name)
		pod.Name = ds.Name + "-" + node.Name
		out = append(out, pod)
	}
	return out
}

// bound is a copy of the pod bound to the node.
func bound(pod *corev1.Pod, nodeName string) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.NodeName = nodeName
	return pod
}
