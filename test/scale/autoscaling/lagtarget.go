package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/test/crds"
	"karpenter.sh/karpenter/test/sandbox"
)

// The lag targets are LagTargets, a resource of the harness's own with a scale subresource,
// rather than Deployments: a decision reads the target's status.replicas, and a Deployment's
// follows its spec only as fast as kube-controller-manager gets to it (seconds, and minutes
// for some at N = 1000 on this machine), which would be measured as the controller's lag. The
// harness plays the LagTargets' controller and sets status.replicas to spec.replicas as soon as
// it sees a change.
const lagTargetKind = "LagTarget"

var lagTargetGVR = schema.GroupVersionResource{Group: "scale.karpenter.sh", Version: "v1", Resource: "lagtargets"}

// installLagTargets creates the LagTarget CRD and waits until it is served.
func installLagTargets(ctx context.Context, c client.Client) error {
	crd := crds.Scalable(lagTargetGVR.GroupResource(), lagTargetKind)
	if err := createPatiently(ctx, c, crd); err != nil {
		return fmt.Errorf("creating the LagTarget CRD, %w", err)
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, condition := range crd.Status.Conditions {
			if condition.Type == apiextensionsv1.Established && condition.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the LagTarget CRD is not established, %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

// newLagTarget is a LagTarget at one replica.
func newLagTarget(name string) *unstructured.Unstructured {
	target := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(1)},
	}}
	target.SetGroupVersionKind(lagTargetGVR.GroupVersion().WithKind(lagTargetKind))
	target.SetNamespace(namespace)
	target.SetName(name)
	return target
}

// lagFollower plays the LagTargets' controller: it records each change of a target's
// spec.replicas, when the harness sees it, and sets status.replicas to it. The status writes
// go through a queue of their own: written from the informer's handler, each would hold the
// events behind it, and a boundary's changes would be seen one write apart.
type lagFollower struct {
	mu      sync.Mutex
	changes []replicasChange
	stop    func()
}

type replicasChange struct {
	target   int
	replicas int64
	seen     time.Time
}

// statusWriters set the LagTargets' status.replicas concurrently.
const statusWriters = 8

func followLagTargets(ctx context.Context, stack *sandbox.Stack) (*lagFollower, error) {
	clientset, err := dynamic.NewForConfig(stack.Env.Config)
	if err != nil {
		return nil, err
	}
	targets := clientset.Resource(lagTargetGVR).Namespace(namespace)
	informing, stop := context.WithCancel(ctx)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(clientset, time.Minute, namespace, nil)
	informer := factory.ForResource(lagTargetGVR).Informer()
	stale := workqueue.NewTyped[string]()
	f := &lagFollower{}
	follow := func(obj any, old any) {
		target, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		spec, _, _ := unstructured.NestedInt64(target.Object, "spec", "replicas")
		status, found, _ := unstructured.NestedInt64(target.Object, "status", "replicas")
		if previous, ok := old.(*unstructured.Unstructured); ok {
			before, _, _ := unstructured.NestedInt64(previous.Object, "spec", "replicas")
			if i, err := strconv.Atoi(strings.TrimPrefix(target.GetName(), "target-")); err == nil && before != spec {
				f.mu.Lock()
				f.changes = append(f.changes, replicasChange{target: i, replicas: spec, seen: time.Now()})
				f.mu.Unlock()
			}
		}
		if !found || status != spec {
			stale.Add(target.GetName())
		}
	}
	// writeStatus sets one target's status to its spec as the informer has it now; a failed
	// write is tried again at the informer's next event for the target.
	writeStatus := func(name string) {
		obj, exists, err := informer.GetStore().GetByKey(namespace + "/" + name)
		if err != nil || !exists {
			return
		}
		spec, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "replicas")
		patch := fmt.Appendf(nil, `{"status":{"replicas":%d}}`, spec)
		_, _ = targets.Patch(informing, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { follow(obj, nil) },
		UpdateFunc: func(old, obj any) { follow(obj, old) },
	}); err != nil {
		stop()
		return nil, err
	}
	var writers sync.WaitGroup
	for range statusWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for {
				name, shutdown := stale.Get()
				if shutdown {
					return
				}
				writeStatus(name)
				stale.Done(name)
			}
		}()
	}
	f.stop = func() {
		stop()
		stale.ShutDown()
		writers.Wait()
		factory.Shutdown()
	}
	factory.Start(informing.Done())
	factory.WaitForCacheSync(informing.Done())
	return f, nil
}
