package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

const (
	// waitTimeout is generous: each wait is a few controller periods and an instance launch.
	waitTimeout = 2 * time.Minute
)

func example(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	examples, err := sandbox.Examples()
	if err != nil {
		t.Fatal(err)
	}
	objects, ok := examples[file]
	if !ok {
		t.Fatalf("docs/examples/%s not found (have %v)", file, slices.Sorted(maps.Keys(examples)))
	}
	return objects
}

func apply(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	if err := sandbox.Apply(context.Background(), stack.Env.Client, objects); err != nil {
		t.Fatal(err)
	}
}

func waitReady(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, object := range objects {
		eventually.Holds(t, fmt.Sprintf("%s %s Ready", object.GetKind(), object.GetName()), func() (bool, string, error) {
			ready, why, err := sandbox.Ready(context.Background(), stack.Env.Client, object)
			if err != nil {
				return false, "", err
			}
			return ready, why, nil
		}, eventually.Timeout(waitTimeout))
	}
}

// group is what a user sees of one node group: its ScalableNodeGroup, HorizontalAutoscaler,
// emulated instances and Nodes.
type group struct {
	specReplicas, statusReplicas int32
	desired                      int32
	active                       bool
	instances                    map[string]string // id → lifecycle state
	nodesReady                   int
}

func (g group) String() string {
	return fmt.Sprintf("sng spec=%d status=%d, ha desired=%d active=%t, instances=%v, nodes Ready=%d",
		g.specReplicas, g.statusReplicas, g.desired, g.active, g.instances, g.nodesReady)
}

func observe(t *testing.T, name string) (group, error) {
	t.Helper()
	ctx := context.Background()
	var g group
	sng := &v1alpha1.ScalableNodeGroup{}
	if err := stack.Env.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: name}, sng); err != nil {
		return g, err
	}
	g.specReplicas = ptr.Deref(sng.Spec.Replicas, -1)
	g.statusReplicas = ptr.Deref(sng.Status.Replicas, -1)
	ha := &v1alpha1.HorizontalAutoscaler{}
	if err := stack.Env.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: name}, ha); err != nil {
		return g, err
	}
	g.desired = ptr.Deref(ha.Status.DesiredReplicas, 0)
	if condition := ha.StatusConditions().GetCondition(v1alpha1.Active); condition != nil {
		g.active = condition.Status == corev1.ConditionTrue
	}
	g.instances = map[string]string{}
	for _, instance := range stack.Emulator.Instances(name) {
		g.instances[instance.InstanceID] = instance.LifecycleState
	}
	groupNodes := &corev1.NodeList{}
	if err := stack.Env.Client.List(ctx, groupNodes, client.MatchingLabels{sandbox.NodeGroupLabel: name}); err != nil {
		return g, err
	}
	for _, node := range groupNodes.Items {
		if nodes.IsReady(&node) {
			g.nodesReady++
		}
	}
	return g, nil
}

// waitGroup waits until the group is steady at replicas: desired, spec and status agree, as
// many instances in service and as many Nodes Ready.
func waitGroup(t *testing.T, name string, replicas int32) group {
	t.Helper()
	var last group
	eventually.Holds(t, fmt.Sprintf("%s steady at %d", name, replicas), func() (bool, string, error) {
		g, err := observe(t, name)
		if err != nil {
			return false, "", err
		}
		last = g
		inService := 0
		for _, state := range g.instances {
			if state == "InService" {
				inService++
			}
		}
		return g.desired == replicas && g.specReplicas == replicas && g.statusReplicas == replicas &&
			len(g.instances) == int(replicas) && inService == int(replicas) && g.nodesReady == int(replicas), g.String(), nil
	}, eventually.Timeout(waitTimeout))
	return last
}

func sendMessages(t *testing.T, count int) {
	t.Helper()
	if err := stack.Emulator.SendMessages(sandbox.QueueName, count, "job"); err != nil {
		t.Fatal(err)
	}
}

func purgeQueue(t *testing.T) {
	t.Helper()
	if err := stack.Emulator.PurgeQueue(sandbox.QueueName); err != nil {
		t.Fatal(err)
	}
}

func runningPods(t *testing.T, app string) (running, total int, err error) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := stack.Env.Client.List(context.Background(), pods, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": app}); err != nil {
		return 0, 0, err
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		total++
		if pod.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running, total, nil
}
