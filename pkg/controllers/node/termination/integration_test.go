package termination_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/node/readiness"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/pkg/test/watchcount"
)

const (
	provisionerName = "default"
	// deadlineProvisioner's nodes are drained for at most drainDeadline.
	deadlineProvisioner = "deadline"
	drainDeadline       = 3
	// readyTimeout is how long the test's nodes may take to become Ready: long for kwok on a
	// loaded machine, short for a test that waits it out.
	readyTimeout = 15 * time.Second
	// statefulGrace is the termination grace period of the StatefulSet's pods.
	statefulGrace = 3
	// orphanedPodCollection bounds how long kube-controller-manager's pod garbage collector
	// takes to delete the pods of a node that is gone: it holds a deleted node's name for 40 s
	// before it deletes them, and looks every 20 s.
	orphanedPodCollection = 2 * time.Minute
)

type suite struct {
	env   *environment.Environment
	cloud *fake.InstanceProvider
	start func(t *testing.T) (stop func())
}

// TestTermination drains and terminates nodes on a real control plane: kube-scheduler and
// kube-controller-manager run the workloads and enforce PodDisruptionBudgets in the eviction
// API, kwok plays the kubelets and the fake cloud holds the instances.
func TestTermination(t *testing.T) {
	env := environment.New(t, environment.Options{
		AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Scheduler: true, ControllerManager: true, Kwok: true,
	})
	s := &suite{env: env, cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{})}
	s.start = func(t *testing.T) func() {
		return operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
			Enabled:          []string{termination.Name, readiness.Name},
			CloudProvider:    cloudprovider.NewRegistry(),
			InstanceProvider: s.cloud,
			NodeReadyTimeout: readyTimeout,
		}})
	}
	ctx := t.Context()
	for _, p := range []*v1alpha5.Provisioner{
		builders.Provisioner(builders.ProvisionerOptions{Name: provisionerName}),
		builders.Provisioner(builders.ProvisionerOptions{Name: deadlineProvisioner}),
	} {
		if p.Name == deadlineProvisioner {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](drainDeadline)
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	stop := s.start(t)
	// Its timeout runs out while the other cases run.
	neverReady, neverReadyInstance := s.node(t, "never-ready", provisionerName, nil)

	t.Run("a node is opened to pods once Ready", func(t *testing.T) {
		node, _ := s.node(t, "joining", provisionerName, nil)
		events.Wait(t, s.env.Client, node.Name, readiness.ReasonReady, v1alpha5.NotReadyTaintKey)
	})

	t.Run("an empty node's instance is terminated and its finalizer removed", func(t *testing.T) {
		node, instance := s.node(t, "empty", provisionerName, nil)
		s.delete(t, node)
		s.expectTerminated(t, node, instance)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonTerminated, instance.ProviderID)
	})

	t.Run("critical pods are evicted after every other pod is gone", func(t *testing.T) {
		node, instance := s.node(t, "ordered", provisionerName, nil)
		recorder := s.watchPods(t, node.Name)
		app := s.pod(t, builders.PodOptions{Name: "app", NodeName: node.Name})
		web := s.pod(t, builders.PodOptions{Name: "web", NodeName: node.Name})
		dnsOptions := builders.PodOptions{Name: "dns", Namespace: metav1.NamespaceSystem, NodeName: node.Name}
		dns := builders.Pod(dnsOptions)
		dns.Spec.PriorityClassName = "system-cluster-critical"
		s.create(t, dns)
		s.waitRunning(t, app, web, dns)
		s.delete(t, node)
		s.expectTerminated(t, node, instance)
		seen := recorder()
		first := slices.IndexFunc(seen, func(e string) bool { return strings.HasPrefix(e, "dns ") })
		if first < 0 {
			t.Fatalf("pod events %v: the critical pod was never evicted", seen)
		}
		for _, gone := range []string{"app DELETED", "web DELETED"} {
			if i := slices.Index(seen, gone); i < 0 || i > first {
				t.Errorf("pod events %v: want %q before any of the critical pod", seen, gone)
			}
		}
	})

	t.Run("a do-not-evict pod blocks the drain, saying which, until it is annotated otherwise", func(t *testing.T) {
		node, instance := s.node(t, "protected", provisionerName, nil)
		app := s.pod(t, builders.PodOptions{Name: "other", NodeName: node.Name})
		precious := s.pod(t, builders.PodOptions{Name: "precious", NodeName: node.Name, Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"}})
		s.waitRunning(t, app, precious)
		s.delete(t, node)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonDrainBlocked, "default/precious")
		for _, pod := range []*corev1.Pod{app, precious} {
			if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp != nil {
				t.Fatalf("pod %s evicted while the drain is blocked (%v)", pod.Name, err)
			}
		}
		if slices.Contains(s.cloud.DeleteCalls(), instance.ProviderID) {
			t.Fatal("the instance was terminated while the drain is blocked")
		}
		stored := precious.DeepCopy()
		precious.Annotations[pods.DoNotEvictAnnotationKey] = "false"
		if err := s.env.Client.Patch(ctx, precious, client.MergeFrom(stored)); err != nil {
			t.Fatal(err)
		}
		s.expectTerminated(t, node, instance)
	})

	// Finding 34.3: a Job that tolerates every taint is not evicted by the drain, but its
	// annotation must hold the drain all the same, or the instance takes the Job with it.
	t.Run("a do-not-evict pod that tolerates the cordon holds the drain of a deleted node", func(t *testing.T) {
		node, instance := s.node(t, "tolerant-protected", provisionerName, nil)
		job := s.pod(t, doNotEvictTolerating("tolerant-job", node.Name))
		s.waitRunning(t, job)
		s.delete(t, node)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonDrainBlocked, "default/tolerant-job")
		s.expectHeld(t, node, instance, job)
		s.release(t, job)
		s.expectTerminated(t, node, instance)
	})

	t.Run("a do-not-evict pod that tolerates the cordon holds the drain of a node that never became Ready", func(t *testing.T) {
		node, instance := s.node(t, "never-ready-protected", provisionerName, nil)
		job := s.pod(t, doNotEvictTolerating("bound-job", node.Name))
		events.Wait(t, s.env.Client, node.Name, readiness.ReasonNeverReady, "did not become Ready")
		events.Wait(t, s.env.Client, node.Name, termination.ReasonDrainBlocked, "default/bound-job")
		s.expectHeld(t, node, instance, job)
	})

	t.Run("daemonset pods and pods that tolerate the cordon stay, even under a PDB that allows nothing", func(t *testing.T) {
		node, instance := s.node(t, "daemons", provisionerName, map[string]string{"daemons": "here"})
		daemonSet := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: metav1.NamespaceDefault},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{"daemons": "here"},
						Containers:   []corev1.Container{{Name: "agent", Image: builders.PauseImage}},
					},
				},
			},
		}
		s.create(t, daemonSet)
		tolerant := builders.Pod(builders.PodOptions{Name: "tolerant", NodeName: node.Name, Labels: map[string]string{"app": "tolerant"},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}})
		s.create(t, tolerant)
		// Were either evicted, the budget would refuse it and the node would never go.
		s.pdb(t, "agent", map[string]string{"app": "agent"})
		s.pdb(t, "tolerant", map[string]string{"app": "tolerant"})
		eventually.Holds(t, "the daemonset pod runs on the node", func() (bool, string, error) {
			list := &corev1.PodList{}
			if err := s.env.Client.List(ctx, list, client.MatchingLabels{"app": "agent"}); err != nil {
				return false, "", err
			}
			return len(list.Items) == 1 && list.Items[0].Status.Phase == corev1.PodRunning, fmt.Sprintf("%d pods", len(list.Items)), nil
		})
		s.waitRunning(t, tolerant)
		s.delete(t, node)
		s.expectTerminated(t, node, instance)
	})

	t.Run("past the Provisioner's drain deadline the pods a PDB protects are deleted", func(t *testing.T) {
		node, instance := s.node(t, "deadline", deadlineProvisioner, nil)
		// Its grace period shorter than the deadline, it is evicted first (and refused), then
		// deleted a second before the deadline.
		guarded := builders.Pod(builders.PodOptions{Name: "guarded", NodeName: node.Name, Labels: map[string]string{"app": "guarded"}})
		guarded.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
		s.create(t, guarded)
		pod := guarded
		s.pdb(t, "guarded", map[string]string{"app": "guarded"})
		s.waitRunning(t, pod)
		s.delete(t, node)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonEvictionBlocked, "guarded")
		events.Wait(t, s.env.Client, node.Name, termination.ReasonDrainDeadline, "default/guarded")
		s.expectTerminated(t, node, instance)
	})

	t.Run("a node whose instance is gone is released without waiting for its pods", func(t *testing.T) {
		node, instance := s.node(t, "lost", provisionerName, nil)
		pod := s.pod(t, builders.PodOptions{Name: "stranded", NodeName: node.Name, Labels: map[string]string{"app": "stranded"}})
		s.pdb(t, "stranded", map[string]string{"app": "stranded"})
		s.waitRunning(t, pod)
		if err := s.cloud.Delete(ctx, instance.ProviderID); err != nil {
			t.Fatal(err)
		}
		s.delete(t, node)
		s.expectTerminated(t, node, instance)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonTerminated, "released the node without draining")
	})

	t.Run("a node that never becomes Ready is deleted and its instance terminated", func(t *testing.T) {
		s.expectTerminated(t, neverReady, neverReadyInstance)
		events.Wait(t, s.env.Client, neverReady.Name, readiness.ReasonNeverReady, "did not become Ready")
	})

	// Finding 34.2: with --bind-pods a pod is bound to its node as soon as the Node exists. When
	// the node never joins, the drain evicts the pod and no kubelet ever confirms it: the drain
	// must not wait past the pod's grace period, or the instance leaks and the StatefulSet,
	// which recreates a pod only once the old one is gone, never gets it back.
	t.Run("a StatefulSet pod bound to a node that never became Ready is recreated elsewhere once the node and its instance are gone", func(t *testing.T) {
		labels := map[string]string{"group": "stateful"}
		node, instance := s.node(t, "never-ready-stateful", provisionerName, labels)
		statefulSet := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: metav1.NamespaceDefault},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](1),
				ServiceName: "db",
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
					Spec: corev1.PodSpec{
						NodeSelector:                  labels,
						TerminationGracePeriodSeconds: ptr.To[int64](statefulGrace),
						Containers:                    []corev1.Container{{Name: "db", Image: builders.PauseImage}},
					},
				},
			},
		}
		s.create(t, statefulSet)
		// The allocator binds the pod as the Node is created; kube-scheduler finds no node for it.
		bound := &corev1.Pod{}
		eventually.Holds(t, "the StatefulSet's pod exists", func() (bool, string, error) {
			err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "db-0"}, bound)
			return err == nil, "", client.IgnoreNotFound(err)
		})
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: bound.Name, Namespace: bound.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
		if err := s.env.Client.SubResource("binding").Create(ctx, bound, binding); err != nil {
			t.Fatal(err)
		}
		spare := environment.KwokNode("stateful-spare", labels, builders.Resources("cpu", "4", "memory", "16Gi"))
		s.create(t, spare)

		events.Wait(t, s.env.Client, node.Name, readiness.ReasonNeverReady, "did not become Ready")
		eventually.Holds(t, "the bound pod is evicted", func() (bool, string, error) {
			pod := &corev1.Pod{}
			err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(bound), pod)
			return apierrors.IsNotFound(err) || err == nil && (pod.UID != bound.UID || pod.DeletionTimestamp != nil), "", client.IgnoreNotFound(err)
		})
		// The eviction gave the pod its grace period; the drain waits no longer than that.
		s.expectTerminated(t, node, instance)
		eventually.Holds(t, "the StatefulSet's pod runs again, on the spare node", func() (bool, string, error) {
			pod := &corev1.Pod{}
			if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(bound), pod); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			return pod.UID != bound.UID && pod.Spec.NodeName == spare.Name && pod.Status.Phase == corev1.PodRunning,
				fmt.Sprintf("%s on %q, %s", pod.UID, pod.Spec.NodeName, pod.Status.Phase), nil
		}, eventually.Timeout(orphanedPodCollection))
	})

	t.Run("a pod a PDB protects is evicted only once its replacement runs elsewhere", func(t *testing.T) {
		node, instance := s.node(t, "minavailable", provisionerName, map[string]string{"group": "minavailable"})
		deployment := builders.Deployment(builders.DeploymentOptions{Name: "api", Replicas: 2, Pod: builders.PodOptions{
			NodeSelector: map[string]string{"group": "minavailable"},
			Tolerations:  []corev1.Toleration{{Key: v1alpha5.NotReadyTaintKey, Operator: corev1.TolerationOpExists}},
		}})
		s.create(t, deployment)
		s.pdb(t, "api", map[string]string{"app": "api"})
		s.waitForDeployment(t, deployment, 2, node.Name)
		// One eviction is allowed: the second is refused until the first pod's replacement runs.
		eventually.Holds(t, "the budget allows one disruption", func() (bool, string, error) {
			pdb := &policyv1.PodDisruptionBudget{}
			err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "api"}, pdb)
			return err == nil && pdb.Status.DisruptionsAllowed == 1, fmt.Sprintf("%d allowed", pdb.Status.DisruptionsAllowed), err
		})
		fewest := watchcount.Available(t, s.env.Config, metav1.NamespaceDefault, "app=api", 2)
		spare := environment.KwokNode("minavailable-spare", map[string]string{"group": "minavailable"}, builders.Resources("cpu", "4", "memory", "16Gi"))
		s.create(t, spare)

		s.delete(t, node)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonEvictionBlocked, "default/api-")
		s.expectTerminated(t, node, instance)
		s.waitForDeployment(t, deployment, 2, spare.Name)
		if n := fewest(); n < 1 {
			t.Errorf("%d pods of the budget's minAvailable 1 ran at one point of the drain", n)
		}
	})

	// Last: it restarts the operator.
	// The controller dies mid-drain: one pod evicted, another held by its budget.
	t.Run("a drain interrupted by a crash resumes: the instance is terminated once, no pod is lost", func(t *testing.T) {
		node, instance := s.node(t, "budgeted", provisionerName, map[string]string{"group": "budgeted"})
		podOptions := builders.PodOptions{
			NodeSelector: map[string]string{"group": "budgeted"},
			Tolerations:  []corev1.Toleration{{Key: v1alpha5.NotReadyTaintKey, Operator: corev1.TolerationOpExists}},
		}
		deployment := builders.Deployment(builders.DeploymentOptions{Name: "web", Replicas: 1, Pod: podOptions})
		worker := builders.Deployment(builders.DeploymentOptions{Name: "worker", Replicas: 1, Pod: podOptions})
		s.create(t, deployment)
		s.create(t, worker)
		s.pdb(t, "web", map[string]string{"app": "web"})
		s.waitForDeployment(t, deployment, 1, node.Name)
		s.waitForDeployment(t, worker, 1, node.Name)
		spare := environment.KwokNode("spare", map[string]string{"group": "budgeted"}, builders.Resources("cpu", "4", "memory", "16Gi"))
		s.create(t, spare)

		s.delete(t, node)
		events.Wait(t, s.env.Client, node.Name, termination.ReasonEvictionBlocked, "PodDisruptionBudget")
		s.waitForDeployment(t, worker, 1, spare.Name)
		if slices.Contains(s.cloud.DeleteCalls(), instance.ProviderID) {
			t.Fatal("the instance was terminated while the budget refuses the eviction")
		}
		// A new operator knows only what the cluster holds.
		stop()
		s.start(t)
		// The budget allows one disruption once a second replica runs, on the spare node.
		scaled := deployment.DeepCopy()
		scaled.Spec.Replicas = ptr.To[int32](2)
		if err := s.env.Client.Patch(ctx, scaled, client.MergeFrom(deployment)); err != nil {
			t.Fatal(err)
		}
		s.expectTerminated(t, node, instance)
		s.waitForDeployment(t, deployment, 2, spare.Name)
		s.waitForDeployment(t, worker, 1, spare.Name)
		terminations := 0
		for _, id := range s.cloud.DeleteCalls() {
			if id == instance.ProviderID {
				terminations++
			}
		}
		if terminations != 1 {
			t.Errorf("instance %s terminated %d times, want once", instance.ProviderID, terminations)
		}
	})
}

// node creates a node as Karpenter launches it, for an instance of the fake cloud, and waits
// until kwok, which runs it unless its name starts with never-ready, made it Ready and the
// readiness controller removed its not-ready taint.
func (s *suite) node(t *testing.T, name, provisioner string, labels map[string]string) (*corev1.Node, *cloudprovider.Instance) {
	t.Helper()
	instanceType := fake.DefaultInstanceTypes()[0]
	launched, err := s.cloud.Create(t.Context(), cloudprovider.LaunchRequest{
		ProvisionerName: provisioner,
		Candidates:      []cloudprovider.Candidate{{InstanceType: instanceType, Offering: instanceType.Offerings[0]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	instance := launched[0]
	nodeLabels := map[string]string{v1alpha5.ProvisionerNameLabelKey: provisioner}
	for k, v := range labels {
		nodeLabels[k] = v
	}
	node := environment.KwokNode(name, nodeLabels, builders.Resources("cpu", "4", "memory", "16Gi"))
	neverReady := strings.HasPrefix(name, "never-ready")
	if neverReady {
		delete(node.Annotations, environment.KwokNodeAnnotation)
	}
	node.Spec.ProviderID = instance.ProviderID
	node.Spec.Taints = []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	node.Finalizers = []string{v1alpha5.TerminationFinalizer}
	s.create(t, node)
	if !neverReady {
		eventually.Holds(t, "node "+name+" is Ready and open to pods", func() (bool, string, error) {
			if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
				return false, "", err
			}
			return len(node.Spec.Taints) == 0, fmt.Sprintf("taints %v", node.Spec.Taints), nil
		})
	}
	return node, instance
}

// doNotEvictTolerating is a Job's pod bound to the node, annotated do-not-evict, that
// tolerates every taint, the cordon's included.
func doNotEvictTolerating(name, node string) builders.PodOptions {
	return builders.PodOptions{Name: name, NodeName: node, Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}
}

// expectHeld checks that the deleted node's drain holds: the node, its instance and the pod
// are all still there.
func (s *suite) expectHeld(t *testing.T, node *corev1.Node, instance *cloudprovider.Instance, pod *corev1.Pod) {
	t.Helper()
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp != nil {
		t.Fatalf("pod %s deleted while it holds the drain (%v)", pod.Name, err)
	}
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatalf("node %s: %v", node.Name, err)
	}
	if slices.Contains(s.cloud.DeleteCalls(), instance.ProviderID) {
		t.Fatalf("instance %s terminated while pod %s holds the drain", instance.ProviderID, pod.Name)
	}
}

// release lifts the pod's do-not-evict annotation.
func (s *suite) release(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	stored := pod.DeepCopy()
	pod.Annotations[pods.DoNotEvictAnnotationKey] = "false"
	if err := s.env.Client.Patch(t.Context(), pod, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) create(t *testing.T, object client.Object) {
	t.Helper()
	if err := s.env.Client.Create(t.Context(), object); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) pod(t *testing.T, options builders.PodOptions) *corev1.Pod {
	t.Helper()
	pod := builders.Pod(options)
	s.create(t, pod)
	return pod
}

// pdb protects the pods labelled selector: at least one must be available.
func (s *suite) pdb(t *testing.T, name string, selector map[string]string) {
	t.Helper()
	s.create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	})
}

func (s *suite) waitRunning(t *testing.T, list ...*corev1.Pod) {
	t.Helper()
	for _, pod := range list {
		eventually.Holds(t, "pod "+pod.Name+" runs", func() (bool, string, error) {
			if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, "", err
			}
			return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase), nil
		})
	}
}

// waitForDeployment waits until the deployment has replicas available, one of them on node.
func (s *suite) waitForDeployment(t *testing.T, deployment *appsv1.Deployment, replicas int32, node string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("%d replicas available, one on %s", replicas, node), func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := s.env.Client.List(t.Context(), list, client.MatchingLabels(deployment.Spec.Selector.MatchLabels)); err != nil {
			return false, "", err
		}
		var running int32
		var seen []string
		on := false
		for _, pod := range list.Items {
			seen = append(seen, pod.Name+"@"+pod.Spec.NodeName+":"+string(pod.Status.Phase))
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
				running++
				on = on || pod.Spec.NodeName == node
			}
		}
		return running == replicas && on, strings.Join(seen, ", "), nil
	})
}

func (s *suite) delete(t *testing.T, node *corev1.Node) {
	t.Helper()
	if err := s.env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
}

// expectTerminated waits for the node to be gone, its instance with it.
func (s *suite) expectTerminated(t *testing.T, node *corev1.Node, instance *cloudprovider.Instance) {
	t.Helper()
	eventually.Holds(t, "node "+node.Name+" is gone", func() (bool, string, error) {
		err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "", err
	})
	if _, err := s.cloud.Get(t.Context(), instance.ProviderID); err == nil {
		t.Errorf("instance %s outlived node %s", instance.ProviderID, node.Name)
	}
}

// watchPods records, in order, "<pod> DELETING" when a pod on the node is first seen
// terminating and "<pod> DELETED" when it is gone; the returned function stops recording and
// returns what was seen.
func (s *suite) watchPods(t *testing.T, node string) func() []string {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := clientset.CoreV1().Pods(metav1.NamespaceAll).Watch(t.Context(), metav1.ListOptions{FieldSelector: pods.NodeNameField + "=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			pod, ok := event.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			switch {
			case event.Type == watch.Deleted:
				seen = append(seen, pod.Name+" DELETED")
			case pod.DeletionTimestamp != nil && !slices.Contains(seen, pod.Name+" DELETING"):
				seen = append(seen, pod.Name+" DELETING")
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return func() []string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
