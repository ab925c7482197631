package expiration_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/controllers/disruption"
	nodeclaimlifecycle "karpenter.sh/karpenter/pkg/controllers/nodeclaim/lifecycle"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/counters"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestExpiryReplacesBeforeRemoving runs expiry with the termination and readiness controllers
// on a real control plane: the expired node's pod fits nowhere else, so a node is launched for
// it first, and the expired node is deleted only once that node is Ready.
func TestExpiryReplacesBeforeRemoving(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring-replaced", Labels: map[string]string{"pool": "expiring"}, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
	}})
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	createdLabels := map[string]string{"reason": "expired", "nodepool": p.Name}
	created := counters.MarkNow(t, "karpenter_nodeclaims_created_total", createdLabels)
	it := fake.DefaultInstanceTypes()[3]
	instances, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: p.Name, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	instance := instances[0]
	disruptedLabels := map[string]string{"reason": "expired", "nodepool": p.Name, "capacity_type": instance.CapacityType}
	disrupted := counters.MarkNow(t, "karpenter_nodeclaims_disrupted_total", disruptedLabels)
	old := environment.KwokNode("old", map[string]string{
		v1alpha5.ProvisionerNameLabelKey: p.Name, "pool": "expiring", corev1.LabelInstanceTypeStable: it.Name,
		corev1.LabelTopologyZone: instance.Zone, v1alpha5.CapacityTypeLabelKey: instance.CapacityType,
	}, it.Allocatable())
	old.Spec.ProviderID = instance.ProviderID
	old.Finalizers = []string{v1alpha5.TerminationFinalizer}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	app := builders.Deployment(builders.DeploymentOptions{Name: "app", Replicas: 1, Pod: builders.PodOptions{
		Requests: builders.Resources("cpu", "1"), NodeSelector: map[string]string{"pool": "expiring"}}})
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	podOn := func() (string, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{"app": "app"}); err != nil {
			return "", err
		}
		for _, pod := range list.Items {
			if pod.DeletionTimestamp == nil && pod.Spec.NodeName != "" {
				return pod.Spec.NodeName, nil
			}
		}
		return "", nil
	}
	eventually.Holds(t, "the app runs on the old node", func() (bool, string, error) {
		on, err := podOn()
		return on == old.Name, on, err
	})
	// The node expires as soon as the TTL is set.
	stored := p.DeepCopy()
	p.Spec.TTLSecondsUntilExpired = ptr.To[int64](1)
	if err := env.Client.Patch(ctx, p, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:          []string{disruption.Name, termination.Name, readiness.Name, nodeclaimlifecycle.Name},
		CloudProvider:    cloudprovider.NewRegistry(),
		InstanceProvider: cloud,
		Clock:            clock.RealClock{},
		ExpirationPeriod: 200 * time.Millisecond,
	}})

	var replacement corev1.Node
	eventually.Holds(t, "a node is launched for the expired node's pod", func() (bool, string, error) {
		list := &corev1.NodeList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: p.Name}); err != nil {
			return false, "", err
		}
		for _, n := range list.Items {
			if n.Name != old.Name {
				replacement = n
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d nodes", len(list.Items)), nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil || old.DeletionTimestamp != nil {
		t.Fatalf("the expired node went before its replacement was Ready (%v)", err)
	}
	if !nodes.IsLaunching(&replacement) {
		t.Fatalf("the new node is not launching: taints %v", replacement.Spec.Taints)
	}
	// The test plays the new instance's kubelet (kwok takes only nodes created for it).
	launched := replacement.DeepCopy()
	replacement.Status.Capacity = it.Capacity
	replacement.Status.Allocatable = it.Allocatable()
	replacement.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Patch(ctx, &replacement, client.MergeFrom(launched)); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the expired node is deleted, its instance terminated and its pod moved", func() (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Node{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		on, listErr := podOn()
		return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), instance.ProviderID) && on == replacement.Name, "pod on " + on, listErr
	})
	// Upstream's families count the replacement created for expiry, and the expired node deleted
	// once.
	if got := created.Increase(); got < 1 {
		t.Errorf("karpenter_nodeclaims_created_total %v grew by %v, want the replacement counted", createdLabels, got)
	}
	if got := disrupted.Increase(); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total %v grew by %v, want 1", disruptedLabels, got)
	}
	for _, reason := range []string{expiration.ReasonExpired, expiration.ReasonExpiredDeleted} {
		eventually.Holds(t, "a "+reason+" event on the expired node", func() (bool, string, error) {
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events); err != nil {
				return false, "", err
			}
			return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == old.Name && e.Reason == reason
			}), "", nil
		})
	}
}

// TestExpiryKeepsADoNotEvictPodThatToleratesTheCordon is finding 34.3: the drain leaves a pod
// that tolerates the cordon on its node, but its do-not-evict annotation must hold the drain
// of an expired node all the same, or the instance takes the Job with it.
func TestExpiryKeepsADoNotEvictPodThatToleratesTheCordon(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	ctx := t.Context()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring"})
	p.Spec.TTLSecondsUntilExpired = ptr.To[int64](1)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	it := fake.DefaultInstanceTypes()[3]
	launch := func(name string) (*corev1.Node, *cloudprovider.Instance) {
		instances, err := cloud.Create(ctx, cloudprovider.LaunchRequest{ProvisionerName: p.Name, Candidates: []cloudprovider.Candidate{{InstanceType: it, Offering: it.Offerings[0]}}})
		if err != nil {
			t.Fatal(err)
		}
		instance := instances[0]
		node := environment.KwokNode(name, map[string]string{
			v1alpha5.ProvisionerNameLabelKey: p.Name, corev1.LabelInstanceTypeStable: it.Name,
			corev1.LabelTopologyZone: instance.Zone, v1alpha5.CapacityTypeLabelKey: instance.CapacityType,
		}, it.Allocatable())
		node.Spec.ProviderID = instance.ProviderID
		node.Finalizers = []string{v1alpha5.TerminationFinalizer}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		eventually.Holds(t, "node "+name+" is Ready and open", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
			return err == nil && nodes.IsReady(node) && !nodes.AwaitsItsPods(node), fmt.Sprintf("taints %v", node.Spec.Taints), err
		})
		return node, instance
	}
	// The oldest expires first; its pod fits on the other.
	old, instance := launch("old")
	launch("spare")
	job := builders.Pod(builders.PodOptions{Name: "job", NodeName: old.Name, Requests: builders.Resources("cpu", "100m"),
		Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"}, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}})
	if err := env.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the job runs", func() (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)
		return err == nil && job.Status.Phase == corev1.PodRunning, string(job.Status.Phase), err
	})
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:          []string{disruption.Name, termination.Name, readiness.Name, nodeclaimlifecycle.Name},
		CloudProvider:    cloudprovider.NewRegistry(),
		InstanceProvider: cloud,
		Clock:            clock.RealClock{},
		ExpirationPeriod: 200 * time.Millisecond,
	}})

	for _, reason := range []string{expiration.ReasonExpiredDeleted, termination.ReasonDrainBlocked} {
		eventually.Holds(t, "a "+reason+" event on the expired node", func() (bool, string, error) {
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events); err != nil {
				return false, "", err
			}
			var seen []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == old.Name {
					if e.Reason == reason {
						return true, "", nil
					}
					seen = append(seen, e.Reason+": "+e.Message)
				}
			}
			return false, strings.Join(seen, "; "), nil
		})
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil || job.DeletionTimestamp != nil {
		t.Fatalf("the job was deleted while it holds the drain (%v)", err)
	}
	if slices.Contains(cloud.DeleteCalls(), instance.ProviderID) {
		t.Fatalf("instance %s terminated under the job", instance.ProviderID)
	}
}
