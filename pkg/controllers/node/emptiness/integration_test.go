package emptiness_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/node/emptiness"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestEmptyNodes runs the controller and the disruption pass in the operator against a real
// control plane, with kwok playing the kubelets: an empty node is marked and deleted after its
// Provisioner's TTL, and a pod arriving first clears the mark.
func TestEmptyNodes(t *testing.T) {
	// kube-controller-manager lifts the not-ready taint the API server puts on every new node.
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, ControllerManager: true, Kwok: true})
	ctx := t.Context()
	short := builders.Provisioner(builders.ProvisionerOptions{Name: "short"})
	short.Spec.TTLSecondsAfterEmpty = ptr.To[int64](2)
	long := builders.Provisioner(builders.ProvisionerOptions{Name: "long"})
	long.Spec.TTLSecondsAfterEmpty = ptr.To[int64](3600)
	kept := builders.Provisioner(builders.ProvisionerOptions{Name: "kept"})
	for _, p := range []*v1alpha5.Provisioner{short, long, kept} {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// The controller marks; the disruption pass deletes.
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{emptiness.Name, disruption.Name}, Clock: clock.RealClock{},
		CloudProvider: cloudprovider.NewRegistry(), InstanceProvider: fake.NewInstanceProvider(fake.InstanceProviderOptions{}),
		DisruptionPeriod: 200 * time.Millisecond,
	}})
	node := func(name, provisioner string) *corev1.Node {
		n := environment.KwokNode(name, map[string]string{v1alpha5.ProvisionerNameLabelKey: provisioner}, builders.Resources("cpu", "4", "memory", "16Gi"))
		n.Finalizers = []string{v1alpha5.TerminationFinalizer}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	annotation := func(n *corev1.Node) (string, bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(n), n)
		stamp, ok := n.Annotations[v1alpha5.EmptinessTimestampAnnotationKey]
		return stamp, ok, err
	}

	t.Run("an empty node is deleted after the TTL, a busy one kept", func(t *testing.T) {
		disruptedLabels := map[string]string{"reason": "empty", "nodepool": "short", "capacity_type": ""}
		disrupted := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", disruptedLabels)
		empty := node("empty", "short")
		busy := node("busy", "short")
		pod := builders.Pod(builders.PodOptions{Name: "busy-app", NodeName: busy.Name})
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		// No termination controller runs: the finalizer holds the deleted node.
		eventually.Holds(t, "the empty node is deleted", func() (bool, string, error) {
			stored := &corev1.Node{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(empty), stored)
			if err != nil && !apierrors.IsNotFound(err) {
				return false, "", err
			}
			return apierrors.IsNotFound(err) || stored.DeletionTimestamp != nil, "", nil
		})
		if _, marked, err := annotation(busy); err != nil || marked {
			t.Errorf("the busy node: marked %t (%v)", marked, err)
		}
		expectEvent(t, env, empty.Name, emptiness.ReasonEmptyDeleted)
		// Reconciled again while its finalizer holds it, the deleted node counts once.
		if got := disrupted.Increase(); got != 1 {
			t.Errorf("karpenter_nodeclaims_disrupted_total %v grew by %v, want 1", disruptedLabels, got)
		}
	})

	t.Run("a pod arriving before the TTL clears the mark", func(t *testing.T) {
		n := node("waiting", "long")
		eventually.Holds(t, "the node is marked empty", func() (bool, string, error) {
			stamp, ok, err := annotation(n)
			return ok, stamp, err
		})
		pod := builders.Pod(builders.PodOptions{Name: "arrives", NodeName: n.Name})
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "the mark is cleared", func() (bool, string, error) {
			stamp, ok, err := annotation(n)
			return !ok, stamp, err
		})
		expectEvent(t, env, n.Name, emptiness.ReasonNotEmpty)
	})

	// Finding 34.5: a pod with a WaitForFirstConsumer claim, resource claims or another
	// scheduler is only nominated to the node launched for it, and a node opening to its pods
	// has none bound yet: deleted as empty, its pods are planned again and a node relaunched.
	t.Run("a pod nominated to a node, and a node still awaiting its pods, keep it from being empty", func(t *testing.T) {
		waiting := builders.Pod(builders.PodOptions{Name: "nominated"})
		if err := env.Client.Create(ctx, waiting); err != nil {
			t.Fatal(err)
		}
		stored := waiting.DeepCopy()
		waiting.Status.NominatedNodeName = "nominated"
		if err := env.Client.Status().Patch(ctx, waiting, client.MergeFrom(stored)); err != nil {
			t.Fatal(err)
		}
		nominated := node("nominated", "short")
		awaiting := environment.KwokNode("awaiting", map[string]string{v1alpha5.ProvisionerNameLabelKey: "short"}, builders.Resources("cpu", "4", "memory", "16Gi"))
		awaiting.Finalizers = []string{v1alpha5.TerminationFinalizer}
		awaiting.Spec.Taints = []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		if err := env.Client.Create(ctx, awaiting); err != nil {
			t.Fatal(err)
		}
		// Created last and empty, it is deleted after the same TTL: by then the others would
		// have been marked, and deleted.
		marker := node("empty-marker", "short")
		eventually.Holds(t, "the empty node created after them is deleted", func() (bool, string, error) {
			stored := &corev1.Node{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(marker), stored)
			if err != nil && !apierrors.IsNotFound(err) {
				return false, "", err
			}
			return apierrors.IsNotFound(err) || stored.DeletionTimestamp != nil, "", nil
		})
		for _, n := range []*corev1.Node{nominated, awaiting} {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(n), n)
			if _, marked := n.Annotations[v1alpha5.EmptinessTimestampAnnotationKey]; err != nil || marked || n.DeletionTimestamp != nil {
				t.Errorf("node %s: marked empty %t, deletion %v (%v)", n.Name, marked, n.DeletionTimestamp, err)
			}
		}
	})

	t.Run("a Provisioner without a TTL keeps its empty nodes", func(t *testing.T) {
		n := node("kept", "kept")
		other := node("marker", "long")
		// One worker takes nodes in the order their creation was seen: once the node created
		// after it is marked, this one has been reconciled.
		eventually.Holds(t, "a node with a TTL is marked", func() (bool, string, error) {
			stamp, ok, err := annotation(other)
			return ok, stamp, err
		})
		if _, marked, err := annotation(n); err != nil || marked {
			t.Errorf("marked %t (%v)", marked, err)
		}
	})
}

func expectEvent(t *testing.T, env *environment.Environment, node, reason string) {
	t.Helper()
	eventually.Holds(t, "a "+reason+" event on node "+node, func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(t.Context(), events); err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Reason == reason
		}), "", nil
	})
}
