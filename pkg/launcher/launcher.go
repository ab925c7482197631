// Package launcher is the one path by which Karpenter launches nodes, whoever decided them (the
// allocator, consolidation's and expiry's replacements). Every node is a NodeClaim first, named
// and carrying the plan's decision; one cloud call then launches a group of identical
// NodeClaims under a key derived from their names, so that a launch asked again is the same
// launch to the cloud and a new NodeClaim never gets an old launch's instances back; each
// NodeClaim records its instance before anything else is done with it. The instance's kubelet
// then registers its Node, which the NodeClaim lifecycle controller matches by provider id.
// The launcher bounds the cloud calls that run at once, of every caller.
package launcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/metrics"
)

// DefaultConcurrency bounds the cloud's launch calls that run at once, of every caller.
const DefaultConcurrency = 10

// createsAtOnce bounds the NodeClaim creations of one launch that run at once. One launch
// creates at a time (Launcher.creating), so this is also the bound for the whole process.
const createsAtOnce = 50

// maxRecordWait bounds how long a record waits for other launches' creations (writeOrder): a
// record is what a crash leaves to go by, so one hung creation must not hold back every
// launch's records for long.
const maxRecordWait = 10 * time.Second

// ReasonLaunchFailed is the reason of a NodeClaim's Launched condition when it got no instance.
const ReasonLaunchFailed = "LaunchFailed"

// Request is a group of new nodes one cloud call launches: of one Provisioner, with the same
// candidates (cheapest first).
type Request struct {
	Pool       Pool
	Candidates []cloudprovider.Candidate
	Nodes      []*scheduling.NewNode
	// Labels are the values the plan chose for the nodes on keys their pool chooses
	// (scheduling.NewNode.Labels), the same for every node of the request: the NodeClaims carry
	// them and the cloud registers the nodes with them, beside the pool's own labels.
	Labels map[string]string
	// Annotations are written on the NodeClaims and their Nodes, e.g. the nodes a replacement
	// replaces.
	Annotations map[string]string
	// StartupTaints are put on the NodeClaims, so registering puts them on their Nodes, for the
	// launcher to lift: e.g. the hold of a batch's nodes.
	StartupTaints []corev1.Taint
	// Reason is why the nodes are launched, the reason label of
	// karpenter_nodeclaims_created_total: metrics.ReasonProvisioned when empty, the disruption
	// reason of the nodes a replacement replaces otherwise.
	Reason string
}

// Launcher creates NodeClaims and launches them. It is safe for concurrent use.
type Launcher struct {
	client client.Client
	// reader reads the API server itself, for what the cache may not show yet (created).
	reader    client.Reader
	instances cloudprovider.InstanceProvider
	calls     *semaphore.Weighted
	// creating lets one launch create its NodeClaims at a time, in the order they asked: the
	// API server's writes bound a burst's launches, and a group launches once all of its
	// NodeClaims exist, so the first group asking launches first instead of every group
	// waiting on every other's writes.
	creating *semaphore.Weighted
	// order puts creations ahead of records.
	order writeOrder
	// created names the NodeClaims created for decisions that the cache may not show yet.
	created createdForDecisions

	mu sync.Mutex
	// launching counts the launches of each group running in this process: its NodeClaims
	// may yet get an instance, so their termination must wait for the launch to record it.
	launching map[string]int
}

// New builds a Launcher writing and reading through c, reading what c's cache may not show yet
// through reader, which reads the API server itself (the manager's API reader; nil only where c
// has no cache, as in tests); concurrency bounds the cloud calls at once (DefaultConcurrency when
// zero).
func New(c client.Client, reader client.Reader, instances cloudprovider.InstanceProvider, concurrency int) *Launcher {
	concurrency = max(concurrency, 0)
	if concurrency == 0 {
		concurrency = DefaultConcurrency
	}
	if reader == nil {
		reader = c
	}
	return &Launcher{client: c, reader: reader, instances: instances, calls: semaphore.NewWeighted(int64(concurrency)), creating: semaphore.NewWeighted(1), launching: map[string]int{}}
}

// Launching is whether the launch of the NodeClaim's group runs in this process.
func (l *Launcher) Launching(nc *v1.NodeClaim) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launching[nc.Annotations[LaunchGroupAnnotationKey]] > 0
}

// begin records a launch of the group as running; the function returned ends it.
func (l *Launcher) begin(group string) func() {
	l.mu.Lock()
	l.launching[group]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.launching[group]--; l.launching[group] == 0 {
			delete(l.launching, group)
		}
	}
}

// CreateNodeClaims creates the NodeClaims of a request, one per node, annotated with their
// group, once the launches that asked before it have created theirs. The i-th NodeClaim
// returned is the i-th node's, nil where it could not be created. The group is launching from
// then on: the caller calls the function returned once it recorded each NodeClaim's instance or
// failed it, so that until then no one else resumes the launch.
func (l *Launcher) CreateNodeClaims(ctx context.Context, request Request) ([]*v1.NodeClaim, func(), error) {
	defer l.order.beginCreate()()
	if err := l.creating.Acquire(ctx, 1); err != nil {
		return make([]*v1.NodeClaim, len(request.Nodes)), func() {}, fmt.Errorf("waiting to create nodeclaims for %s, %w", request.Pool.Key(), err)
	}
	defer l.creating.Release(1)
	names := make([]string, len(request.Nodes))
	for i := range names {
		names[i] = newName(request.Pool.Key().Name)
	}
	annotations := maps.Clone(request.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	group := groupKey(names)
	annotations[LaunchGroupAnnotationKey] = group
	done := l.begin(group)
	created := make([]*v1.NodeClaim, len(names))
	errs := make([]error, len(names))
	var writes errgroup.Group
	writes.SetLimit(createsAtOnce)
	for i, n := range request.Nodes {
		writes.Go(func() error {
			nc := newNodeClaim(names[i], request, n, annotations)
			if err := l.client.Create(ctx, nc); err != nil {
				errs[i] = fmt.Errorf("creating nodeclaim %s, %w", nc.Name, err)
				return nil
			}
			metrics.NodeClaimCreated(nc, cmp.Or(request.Reason, metrics.ReasonProvisioned))
			created[i] = nc
			return nil
		})
	}
	_ = writes.Wait()
	killpoint.Reached(killpoint.NodeClaimsCreated)
	return created, done, errors.Join(errs...)
}

// Launch asks the cloud for an instance for each of a group's NodeClaims (as CreateNodeClaims
// made them), with one call under their group's key, once a call may run (the concurrency
// bound). The answer is the cloud's, *cloudprovider.UnreadInstancesError included; Assign pairs
// its instances with the NodeClaims.
func (l *Launcher) Launch(ctx context.Context, request Request, nodeClaims []*v1.NodeClaim) ([]*cloudprovider.Instance, error) {
	return l.launch(ctx, request, nodeClaims[0].Annotations[LaunchGroupAnnotationKey], len(nodeClaims))
}

// launch asks the cloud for count instances under the group's key.
func (l *Launcher) launch(ctx context.Context, request Request, group string, count int) ([]*cloudprovider.Instance, error) {
	if err := l.calls.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("waiting to launch instances for %s, %w", request.Pool.Key(), err)
	}
	defer l.calls.Release(1)
	instances, err := l.instances.Create(ctx, request.Pool.launchRequest(request.Candidates, request.Labels, group, count))
	killpoint.Reached(killpoint.InstancesLaunched)
	return instances, err
}

// Record writes a NodeClaim's instance to its status, then its labels, so that which instance
// a NodeClaim got is recorded before anything is done with it. It writes once the NodeClaims
// of launches asked before it are created (writeOrder). It returns the NodeClaim as recorded.
func (l *Launcher) Record(ctx context.Context, nc *v1.NodeClaim, instance *cloudprovider.Instance, it *cloudprovider.InstanceType) (*v1.NodeClaim, error) {
	if asked := l.order.asked(); len(asked) > 0 {
		waitCtx, cancel := context.WithTimeout(ctx, maxRecordWait)
		asked.wait(waitCtx)
		cancel()
	}
	want := launched(nc, instance, it)
	// A patch writes the object the API server answers back into its argument: the status
	// patch's answer has the labels as they were.
	recorded := want.DeepCopy()
	if err := l.client.Status().Patch(ctx, recorded, client.MergeFrom(nc)); err != nil {
		return nil, fmt.Errorf("recording instance %s on nodeclaim %s, %w", instance.ID, nc.Name, err)
	}
	metrics.NodeClaimConditionsWritten(nc, recorded)
	labelled := recorded.DeepCopy()
	labelled.Labels = want.Labels
	if err := l.client.Patch(ctx, labelled, client.MergeFrom(recorded)); err != nil {
		return nil, fmt.Errorf("labelling nodeclaim %s as instance %s, %w", nc.Name, instance.ID, err)
	}
	return labelled, nil
}

// Fail marks a NodeClaim that got no instance not launched, saying why, and deletes it: the
// pods it was for are planned again.
func (l *Launcher) Fail(ctx context.Context, nc *v1.NodeClaim, reason error) error {
	failed := nc.DeepCopy()
	failed.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionFalse, ReasonLaunchFailed, reason.Error())
	var errs []error
	if err := l.client.Status().Patch(ctx, failed, client.MergeFrom(nc)); client.IgnoreNotFound(err) != nil {
		errs = append(errs, fmt.Errorf("marking nodeclaim %s not launched, %w", nc.Name, err))
	}
	if err := l.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		errs = append(errs, fmt.Errorf("deleting nodeclaim %s, which got no instance, %w", nc.Name, err))
	}
	return errors.Join(errs...)
}

// InstanceTypeNamed finds the candidate's instance type the cloud launched, nil when none.
func InstanceTypeNamed(candidates []cloudprovider.Candidate, name string) *cloudprovider.InstanceType {
	for _, c := range candidates {
		if c.InstanceType.Name == name {
			return c.InstanceType
		}
	}
	return nil
}
