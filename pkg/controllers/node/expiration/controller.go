// Package expiration replaces the nodes of a Provisioner with ttlSecondsUntilExpired once they
// are that old: capacity for the pods that would fit nowhere else is launched first, and the
// node is deleted (and drained by its termination finalizer) once that capacity is Ready. One
// node of a Provisioner expires at a time. It is a method of the disruption controller's pass
// (disruption.ProvisionerMethod), run every --expiration-period.
package expiration

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/metrics"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/seconds"
	"karpenter.sh/karpenter/pkg/state"
)

// Name identifies the method.
const Name = "nodeexpiration"

// DefaultPeriod is how often expired nodes are looked for: lifetimes are days.
const DefaultPeriod = 30 * time.Second

// Event reasons, documented in docs/node-lifecycle.md.
const (
	ReasonExpired        = "NodeExpired"
	ReasonExpiredDeleted = "ExpiredNodeDeleted"
)

// Decision is what to do for one Provisioner's oldest expired node.
type Decision struct {
	Node *corev1.Node
	// Launch is capacity for the node's pods that fit on no other node, launched first.
	Launch []*scheduling.NewNode
	// Delete removes the node: its pods fit on the other nodes, or on none at all.
	Delete bool
	// Stranded are pods that fit nowhere, not even on a new node; the node expires anyway.
	Stranded []scheduling.PodError
}

// Decide finds, per Provisioner with ttlSecondsUntilExpired, its oldest expired node and what
// replacing it takes. Nothing is done while any node awaits its pods or any pod waits (the
// cluster is not settled: a replacement is on its way), nor for a Provisioner one of whose
// nodes is being deleted: one expiry at a time. A replacement awaits its pods until the node
// lifecycle controller lifts its not-ready taint too, some seconds after the kubelet reports
// Ready: a pass in between found no room for the expired node's pods there and launched a
// second replacement.
func Decide(s consolidation.Snapshot) []Decision {
	if s.Pending > 0 || slices.ContainsFunc(s.Settling, nodes.AwaitsItsPods) {
		return nil
	}
	deleting := map[string]bool{}
	for _, n := range s.Nodes {
		if nodes.AwaitsItsPods(n.Node) {
			return nil
		}
		if n.Node.DeletionTimestamp != nil {
			deleting[n.Node.Labels[v1alpha5.ProvisionerNameLabelKey]] = true
		}
	}
	var out []Decision
	for _, p := range s.Provisioners {
		ttl := p.Provisioner.Spec.TTLSecondsUntilExpired
		if ttl == nil || deleting[p.Provisioner.Name] {
			continue
		}
		var oldest *scheduling.Node
		for i := range s.Nodes {
			n := &s.Nodes[i]
			// A node without its termination finalizer would go without a drain: it waits
			// until the termination controller has put the finalizer back.
			if !nodes.IsRemovable(n.Node) || n.Node.Labels[v1alpha5.ProvisionerNameLabelKey] != p.Provisioner.Name {
				continue
			}
			if s.Now.Sub(n.Node.CreationTimestamp.Time) < seconds.Duration(*ttl) {
				continue
			}
			if oldest == nil || cmp.Or(n.Node.CreationTimestamp.Compare(oldest.Node.CreationTimestamp.Time), cmp.Compare(n.Node.Name, oldest.Node.Name)) < 0 {
				oldest = n
			}
		}
		if oldest != nil {
			out = append(out, replace(s, oldest))
		}
	}
	return out
}

// replace simulates the node's pods on the rest of the cluster.
func replace(s consolidation.Snapshot, expired *scheduling.Node) Decision {
	results := scheduling.Schedule(ReplacementInput(s, expired))
	if len(results.NewNodes) > 0 {
		return Decision{Node: expired.Node, Launch: results.NewNodes}
	}
	return Decision{Node: expired.Node, Delete: true, Stranded: results.Unschedulable}
}

// ReplacementInput asks the scheduler where the expired node's movable pods go on the rest of
// the cluster, as consolidation asks it.
func ReplacementInput(s consolidation.Snapshot, expired *scheduling.Node) scheduling.Input {
	movable := slices.DeleteFunc(slices.Clone(expired.Pods), func(pod *corev1.Pod) bool { return !pods.IsMovable(pod) })
	return s.Input(pods.Unbound(movable), s.Provisioners, map[string]bool{expired.Node.Name: true})
}

// launchKey names the launch of a node for some of an expired node's pods, so that a pass
// retried after a crash between the launch and its Node gets the instance the first launched.
func launchKey(expired *corev1.Node, moved []*corev1.Pod) string {
	uids := make([]string, 0, len(moved))
	for _, pod := range moved {
		uids = append(uids, string(pod.UID))
	}
	slices.Sort(uids)
	return "expiration\n" + string(expired.UID) + "\n" + strings.Join(uids, "\n")
}

// Options configure the controller.
type Options struct {
	Client    client.Client
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.Clock
	// Period is how often expired nodes are looked for; DefaultPeriod when zero.
	Period time.Duration
	// Ledger counts launches against the Provisioners' limits, shared with the other
	// controllers that launch.
	Ledger *provisioning.Ledger
	// Launcher launches the replacements, shared with the other controllers that launch.
	Launcher *launcher.Launcher
}

// Method replaces expired nodes.
type Method struct {
	client    client.Client
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.Clock
	period    time.Duration
	ledger    *provisioning.Ledger
	launcher  *launcher.Launcher
	expected  consolidation.Expectations
}

// New builds the method.
func New(options Options) (*Method, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil || options.Ledger == nil || options.Launcher == nil {
		return nil, fmt.Errorf("the %s method needs a client, an instance provider, a recorder, a clock, the ledger and the launcher", Name)
	}
	return &Method{client: options.Client, instances: options.Instances, recorder: options.Recorder, clock: options.Clock,
		period: cmp.Or(options.Period, DefaultPeriod), ledger: options.Ledger, launcher: options.Launcher}, nil
}

// Name identifies the method.
func (c *Method) Name() string { return Name }

// Period is how often it runs at most.
func (c *Method) Period() time.Duration { return c.period }

// Act reads the pass's snapshot and acts on the decisions. It keeps nothing between passes:
// after a crash, launched capacity is found Ready and the expired node deleted the same way.
func (c *Method) Act(ctx context.Context, cluster func() (*state.Snapshot, error)) (acted bool, err error) {
	ctx = cloudmetrics.WithController(ctx, Name)
	snapshot, provisioners, err := c.read(ctx, cluster)
	if err != nil || snapshot == nil || !c.expected.Met(snapshot) {
		return false, err
	}
	for _, d := range Decide(*snapshot) {
		if !d.Delete {
			for _, n := range d.Launch {
				launched, err := provisioning.LaunchReplacement(ctx, c.launcher, n, launcher.Pool{Provisioner: provisioners[n.Pool.Name]}, provisioning.ReplacementOptions{
					Ledger: c.ledger, Counted: snapshot.Counted[n.Pool.Name], Decision: launchKey(d.Node, n.Pods), Reason: metrics.ReasonExpired,
				})
				if err != nil {
					return acted, fmt.Errorf("launching capacity for the pods of expired node %s, %w", d.Node.Name, err)
				}
				acted = true
				c.expected.Launched(c.clock.Now(), launched.NodeName, launched.NodeClaim.Name)
				c.recorder.Eventf(d.Node, corev1.EventTypeNormal, ReasonExpired, "Node is past ttlSecondsUntilExpired; launched %s for %d of its pods, the node is deleted once it is Ready", launched.NodeName, len(n.Pods))
			}
			continue
		}
		if err := c.client.Delete(ctx, d.Node, client.Preconditions{UID: &d.Node.UID, ResourceVersion: &d.Node.ResourceVersion}); err != nil {
			return acted, client.IgnoreNotFound(fmt.Errorf("deleting expired node %s, %w", d.Node.Name, err))
		}
		acted = true
		metrics.NodeClaimDisrupted(d.Node, metrics.ReasonExpired)
		c.expected.Deleted(d.Node.Name, c.clock.Now())
		message := "Node is past ttlSecondsUntilExpired and its pods fit on the other nodes; deleted it"
		if len(d.Stranded) > 0 {
			message += fmt.Sprintf(" (%d pods fit nowhere and wait, e.g. %s/%s: %s)", len(d.Stranded), d.Stranded[0].Pod.Namespace, d.Stranded[0].Pod.Name, d.Stranded[0].Reason)
		}
		c.recorder.Event(d.Node, corev1.EventTypeNormal, ReasonExpiredDeleted, message)
		log.FromContext(ctx).Info("deleted an expired node", "node", d.Node.Name)
	}
	return acted, nil
}

// read takes the method's snapshot from the pass's, nil without a Provisioner that sets
// ttlSecondsUntilExpired: then a pass costs one list of Provisioners, not a snapshot.
func (c *Method) read(ctx context.Context, cluster func() (*state.Snapshot, error)) (*consolidation.Snapshot, map[string]*v1alpha5.Provisioner, error) {
	var provisioners v1alpha5.ProvisionerList
	if err := c.client.List(ctx, &provisioners); err != nil {
		return nil, nil, fmt.Errorf("listing provisioners, %w", err)
	}
	if !slices.ContainsFunc(provisioners.Items, func(p v1alpha5.Provisioner) bool {
		return p.DeletionTimestamp == nil && p.Spec.TTLSecondsUntilExpired != nil
	}) {
		return nil, nil, nil
	}
	snapshot, err := cluster()
	if err != nil {
		return nil, nil, err
	}
	return consolidation.Read(ctx, c.client, snapshot, c.instances, c.ledger)
}
