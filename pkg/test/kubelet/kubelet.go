// Package kubelet stands in for the kubelets of a cloud's instances, the fake cloud's in tests and
// the AWS emulator's on the sandbox's stack: Karpenter never creates a Node, the kubelet on a
// launched instance registers it (with the unregistered taint), and Karpenter's NodeClaim
// lifecycle controller matches it by provider id.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/nodeclaims"
)

// Instances are a cloud's instances and the Node each one's kubelet registers;
// *fake.InstanceProvider implements it, and the sandbox's node joiner over the emulator.
type Instances interface {
	List(ctx context.Context) ([]*cloudprovider.Instance, error)
	// KubeletNode is the Node the kubelet of an instance registers, and whether the instance
	// runs: no Node for a running instance whose kubelet registers none here (another
	// cluster's); an error when its kubelet cannot tell what to register (unreadable user data).
	KubeletNode(providerID string) (node *corev1.Node, running bool, err error)
}

// Kubelets register a Node for every running instance that has none, once per instance: a Node
// deleted later is not registered again, as the kubelet of an instance being terminated is gone;
// an instance that has a Node already (e.g. one an older Karpenter created itself) registers
// none. A stale Node of the name, whose instance no longer runs, is deleted first.
type Kubelets struct {
	Client    client.Client
	Instances Instances
	// Complete, when set, completes each Node before it is created, e.g. for kwok to run it.
	Complete func(*corev1.Node)
	// Register also does the NodeClaim lifecycle controller's registration, for tests that run
	// without it.
	Register bool

	mu         sync.Mutex
	registered sets.Set[string]
}

// Start registers Nodes every few milliseconds until the test ends.
func Start(t testing.TB, k *Kubelets) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			// A failed pass is retried at the next tick, as a kubelet retries its registration.
			_ = k.Sync(ctx)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// Sync registers the Node of each running instance that has not registered one yet.
func (k *Kubelets) Sync(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.registered == nil {
		k.registered = sets.New[string]()
	}
	instances, err := k.Instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances, %w", err)
	}
	instances = slices.DeleteFunc(instances, func(instance *cloudprovider.Instance) bool { return k.registered.Has(instance.ProviderID) })
	if len(instances) == 0 {
		return nil
	}
	nodes := &corev1.NodeList{}
	if err := k.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	hasNode := sets.New[string]()
	for i := range nodes.Items {
		hasNode.Insert(nodes.Items[i].Spec.ProviderID)
	}
	var errs []error
	for _, instance := range instances {
		if hasNode.Has(instance.ProviderID) {
			k.registered.Insert(instance.ProviderID)
			continue
		}
		node, _, err := k.Instances.KubeletNode(instance.ProviderID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if node == nil {
			continue
		}
		created, err := k.create(ctx, node)
		if err != nil {
			errs = append(errs, err)
		}
		if created {
			k.registered.Insert(instance.ProviderID)
		}
	}
	return errors.Join(errs...)
}

// create creates the Node, and reports whether it is there. With Register, a Node waits for its
// NodeClaim to record its instance, and is created registered.
func (k *Kubelets) create(ctx context.Context, node *corev1.Node) (bool, error) {
	if k.Register {
		var claims v1.NodeClaimList
		if err := k.Client.List(ctx, &claims); err != nil {
			return false, fmt.Errorf("listing nodeclaims, %w", err)
		}
		i := slices.IndexFunc(claims.Items, func(nc v1.NodeClaim) bool { return nc.Status.ProviderID == node.Spec.ProviderID })
		if i < 0 {
			return false, nil
		}
		node = nodeclaims.Register(&claims.Items[i], node)
	}
	if k.Complete != nil {
		k.Complete(node)
	}
	err := k.Client.Create(ctx, node)
	if apierrors.IsAlreadyExists(err) {
		return false, k.deleteStale(ctx, node)
	}
	if err != nil {
		return false, fmt.Errorf("registering node %s, %w", node.Name, err)
	}
	return true, nil
}

// deleteStale deletes the Node of node's name when it stands for an instance that no longer
// runs (the cloud gives a terminated instance's address, so its node name, to a later one), as
// the cloud node lifecycle controller does; the kubelet registers once it is gone.
func (k *Kubelets) deleteStale(ctx context.Context, node *corev1.Node) error {
	existing := &corev1.Node{}
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(node), existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if existing.Spec.ProviderID == node.Spec.ProviderID || existing.DeletionTimestamp != nil {
		return nil
	}
	// Its instance running, the Node is not stale, whatever that kubelet registers here.
	if _, running, err := k.Instances.KubeletNode(existing.Spec.ProviderID); running || err != nil {
		return nil
	}
	if err := k.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting stale node %s of instance %s, %w", existing.Name, existing.Spec.ProviderID, err)
	}
	return nil
}
