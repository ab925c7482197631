package consolidation_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestConsolidation runs the reallocator with the termination and readiness controllers on a
// real control plane: kube-scheduler and kube-controller-manager run the workloads, kwok plays
// the kubelets and the fake cloud holds the instances.
func TestConsolidation(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	for _, name := range []string{"general", "replaced"} {
		p := builders.Provisioner(builders.ProvisionerOptions{Name: name, Labels: map[string]string{"pool": name}, Requirements: []v1alpha5.NodeSelectorRequirement{
			{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
			{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
		}})
		p.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true), Budget: ptr.To(intstr.FromString("100%"))}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// launch makes a Ready node of the instance type as the provisioner launched it.
	launch := func(name, provisioner, typeName string) (*corev1.Node, *cloudprovider.Instance) {
		it := instanceType(typeName)
		instance, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: provisioner,
			Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		n := environment.KwokNode(name, map[string]string{
			v1alpha5.ProvisionerNameLabelKey: provisioner, "pool": provisioner, corev1.LabelInstanceTypeStable: typeName,
			corev1.LabelTopologyZone: instance.Zone, v1alpha5.CapacityTypeLabelKey: instance.CapacityType,
		}, it.Allocatable())
		n.Spec.ProviderID = instance.ProviderID
		n.Finalizers = []string{v1alpha5.TerminationFinalizer}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "node "+name+" is Ready", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(n), n)
			return err == nil && nodes.IsReady(n), "", err
		})
		return n, instance
	}
	deploy := func(name, pool, cpu string, mutate func(*builders.PodOptions)) {
		options := builders.PodOptions{Requests: builders.Resources("cpu", cpu, "memory", "1Gi"), NodeSelector: map[string]string{"pool": pool}}
		if mutate != nil {
			mutate(&options)
		}
		if err := env.Client.Create(ctx, builders.Deployment(builders.DeploymentOptions{Name: name, Replicas: 1, Pod: options})); err != nil {
			t.Fatal(err)
		}
	}
	running := func(app string) (string, bool, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{"app": app}); err != nil {
			return "", false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				return p.Spec.NodeName, true, nil
			}
		}
		return "", false, nil
	}
	waitRunning := func(app, node string) {
		eventually.Holds(t, app+" runs on "+node, func() (bool, string, error) {
			on, ok, err := running(app)
			return ok && (node == "" || on == node), "on " + on, err
		})
	}
	gone := func(n *corev1.Node, instance *cloudprovider.Instance) {
		eventually.Holds(t, "node "+n.Name+" is deleted and its instance terminated", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(n), &corev1.Node{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, "", err
			}
			return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), instance.ProviderID), "", nil
		})
	}

	// The cluster is set up before the operator starts, so that no pass sees it half built.
	// The underused node is the only one of its pool when web is placed; db is pinned to its node.
	underused, underusedInstance := launch("underused", "general", "m5.xlarge")
	deploy("web", "general", "1", nil)
	waitRunning("web", underused.Name)
	pinned, pinnedInstance := launch("pinned", "general", "m5.xlarge")
	deploy("db", "general", "2", func(o *builders.PodOptions) { o.NodeSelector[corev1.LabelHostname] = pinned.Name })
	waitRunning("db", pinned.Name)
	oversized, oversizedInstance := launch("oversized", "replaced", "m5.2xlarge")
	deploy("batch", "replaced", "1", nil)
	waitRunning("batch", oversized.Name)
	start := func(t *testing.T) (stop func()) {
		return operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
			Enabled:                 []string{consolidation.Name, termination.Name, readiness.Name},
			CloudProvider:           cloudprovider.NewRegistry(),
			InstanceProvider:        cloud,
			Clock:                   clock.RealClock{},
			ConsolidationPeriod:     200 * time.Millisecond,
			ConsolidationMinNodeAge: time.Millisecond,
		}})
	}

	// The controller dies once the replacement is launched, and the replacement becomes Ready
	// while none runs: a new one knows only what the cluster holds.
	t.Run("an oversized node is replaced by a cheaper one once it is Ready, across a crash", func(t *testing.T) {
		launchedBefore := len(cloud.CreateCalls())
		stop := start(t)
		var replacement corev1.Node
		eventually.Holds(t, "a replacement node is launched for provisioner replaced", func() (bool, string, error) {
			list := &corev1.NodeList{}
			if err := env.Client.List(ctx, list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: "replaced"}); err != nil {
				return false, "", err
			}
			for _, n := range list.Items {
				if n.Name != oversized.Name {
					replacement = n
					return true, "", nil
				}
			}
			return false, fmt.Sprintf("%d nodes", len(list.Items)), nil
		})
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(oversized), &corev1.Node{}); err != nil {
			t.Fatalf("the oversized node went before its replacement was Ready: %v", err)
		}
		stop()
		if got := replacement.Annotations[v1alpha5.ReplacesAnnotationKey]; got != oversized.Name {
			t.Errorf("the replacement is annotated %s=%q, want %q", v1alpha5.ReplacesAnnotationKey, got, oversized.Name)
		}
		it := instanceType(replacement.Labels[corev1.LabelInstanceTypeStable])
		if onDemandPrice(it) >= onDemandPrice(instanceType("m5.2xlarge")) {
			t.Errorf("replaced m5.2xlarge with %s, no cheaper", it.Name)
		}
		// The test plays the kubelet of the new instance (kwok takes only nodes created for it):
		// it reports the node's allocatable and Ready.
		stored := replacement.DeepCopy()
		replacement.Status.Capacity, replacement.Status.Allocatable = it.Capacity, it.Allocatable()
		replacement.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Patch(ctx, &replacement, client.MergeFrom(stored)); err != nil {
			t.Fatal(err)
		}
		start(t)
		expectEvent(t, env, oversized.Name, consolidation.ReasonReplacing)
		gone(oversized, oversizedInstance)
		eventually.Holds(t, "the batch pod is bound to the replacement", func() (bool, string, error) {
			list := &corev1.PodList{}
			if err := env.Client.List(ctx, list, client.MatchingLabels{"app": "batch"}); err != nil {
				return false, "", err
			}
			return len(list.Items) == 1 && list.Items[0].Spec.NodeName == replacement.Name, fmt.Sprintf("%d pods", len(list.Items)), nil
		})
		// One replacement was launched, and no instance is left without its node.
		if launches := len(cloud.CreateCalls()) - launchedBefore; launches != 1 {
			t.Errorf("consolidation launched %d instances, want 1", launches)
		}
		instances, err := cloud.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, instance := range instances {
			if instance.ProviderID != underusedInstance.ProviderID && instance.ProviderID != pinnedInstance.ProviderID {
				left = append(left, instance.ProviderID)
			}
		}
		if !slices.Equal(left, []string{replacement.Spec.ProviderID}) {
			t.Errorf("instances besides provisioner general's %v, want only the replacement's %s", left, replacement.Spec.ProviderID)
		}
	})

	t.Run("a node whose pods fit elsewhere is deleted, its pods move", func(t *testing.T) {
		start(t)
		gone(underused, underusedInstance)
		waitRunning("web", pinned.Name)
		waitRunning("db", pinned.Name)
		expectEvent(t, env, pinned.Name, string(consolidation.ReasonPodsDoNotFit))
		expectEvent(t, env, underused.Name, consolidation.ReasonDeleted)
	})
}

// onDemandPrice is the on-demand price of the instance type in its first zone.
func onDemandPrice(it *cloudprovider.InstanceType) float64 {
	for _, o := range it.Offerings {
		if o.CapacityType == v1alpha5.CapacityTypeOnDemand {
			return o.Price
		}
	}
	return 0
}

func expectEvent(t *testing.T, env *environment.Environment, node, reason string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("a %s event on node %s", reason, node), func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(t.Context(), events); err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Reason == reason
		}), "", nil
	})
}
