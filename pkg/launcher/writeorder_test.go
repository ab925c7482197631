package launcher_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// writeLog is the API writes a fake client saw, in order, each create asked and done. While
// hold is open, creates wait for it to close.
type writeLog struct {
	mu     sync.Mutex
	writes []string
	hold   chan struct{}
}

func (w *writeLog) add(write string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, write)
	return w.hold
}

func (w *writeLog) index(write string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Index(w.writes, write)
}

func (w *writeLog) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// TestRecordsWaitForTheCreationsAskedBeforeThem: a burst's launch groups each create their
// NodeClaims, launch, then record each instance (two writes), and the API server's writes bound
// how soon the later groups launch. A group's record waits until the NodeClaims of a group that
// asked to create before it exist. (Before, it was written at once, between the later group's
// creations.)
func TestRecordsWaitForTheCreationsAskedBeforeThem(t *testing.T) {
	provisioner := builders.Provisioner(builders.ProvisionerOptions{Name: "order"})
	log := &writeLog{}
	c := kubefake.NewClientBuilder().WithObjects(provisioner).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if hold := log.add("ask to create " + obj.GetName()); hold != nil {
				<-hold
			}
			err := c.Create(ctx, obj, opts...)
			log.add("created " + obj.GetName())
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResourceName string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			log.add("record " + obj.GetName())
			return c.SubResource(subResourceName).Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	request, it := oneNodeRequest(provisioner)
	l := launcher.New(c, nil, cloud, 0)

	first, firstDone, err := l.CreateNodeClaims(t.Context(), request)
	if err != nil {
		t.Fatal(err)
	}
	defer firstDone()
	instances, err := l.Launch(t.Context(), request, first)
	if err != nil {
		t.Fatal(err)
	}

	// A second group asks to create its NodeClaim; the API server holds the write.
	log.mu.Lock()
	log.hold = make(chan struct{})
	hold := log.hold
	log.mu.Unlock()
	var second []*v1.NodeClaim
	var secondErr error
	secondCreated := make(chan struct{})
	go func() {
		defer close(secondCreated)
		var done func()
		second, done, secondErr = l.CreateNodeClaims(t.Context(), request)
		done()
	}()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return log.count() == 3, nil
	}); err != nil {
		t.Fatalf("the second group's create was not asked: %v", err)
	}

	// The first group records its instance meanwhile. The API server lets the second group's
	// write through once the record is written or, as it should be, after a while without it.
	recorded := make(chan error, 1)
	go func() {
		_, err := l.Record(t.Context(), first[0], instances[0], it)
		recorded <- err
	}()
	_ = wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		return log.index("record "+first[0].Name) >= 0, nil
	})
	close(hold)
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	<-secondCreated
	if secondErr != nil {
		t.Fatal(secondErr)
	}
	if r, s := log.index("record "+first[0].Name), log.index("created "+second[0].Name); r < s {
		t.Errorf("the first group's record was written before the second group's NodeClaim was created: writes %v", log.writes)
	}
}
