// Package garbagecollection keeps the cloud's instances and the cluster's nodes in step after
// a crash: an instance this cluster launched that no node stands for, once past a grace
// period, is terminated (the controller died between launching it and creating its Node),
// and a node Karpenter launched whose instance is gone is deleted.
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/periodic"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/nodeclaims"
	"karpenter.sh/karpenter/pkg/nodes"
)

// Name identifies the controller.
const Name = "nodegarbagecollection"

// Defaults when none are configured.
const (
	// DefaultPeriod is how often instances and nodes are compared.
	DefaultPeriod = time.Minute
	// DefaultGrace is how long an instance may run without a node or a NodeClaim recording it:
	// the launcher records it once the launch returns and the NodeClaims other launches asked
	// for before are created, so only a crash leaves one without for longer (and a launch
	// whose NodeClaims are still unrecorded protects its instances meanwhile: Compare).
	DefaultGrace = 2 * time.Minute
)

// Reasons, of the Events and of the metric's reason label, documented in
// docs/node-lifecycle.md.
const (
	ReasonInstanceWithoutNode      = "InstanceWithoutNode"
	ReasonNodeWithoutInstance      = "NodeWithoutInstance"
	ReasonNodeClaimWithoutInstance = "NodeClaimWithoutInstance"
)

var collectedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter", Subsystem: "nodes", Name: "garbage_collected_total",
	Help: "Instances terminated for want of a node or NodeClaim (InstanceWithoutNode), and nodes and NodeClaims deleted for want of an instance (NodeWithoutInstance, NodeClaimWithoutInstance).",
}, []string{"reason"})

func init() {
	crmetrics.Registry.MustRegister(collectedTotal)
}

// Options configure the controller.
type Options struct {
	Client    client.Client
	Instances cloudprovider.InstanceProvider
	Recorder  record.EventRecorder
	Clock     clock.Clock
	// Period is how often instances and nodes are compared; DefaultPeriod when zero.
	Period time.Duration
	// Grace is how long an instance may run without a node; DefaultGrace when zero.
	Grace time.Duration
}

// Controller compares instances and nodes periodically.
type Controller struct {
	client    client.Client
	instances cloudprovider.InstanceProvider
	recorder  record.EventRecorder
	clock     clock.Clock
	period    time.Duration
	grace     time.Duration
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Instances == nil || options.Recorder == nil || options.Clock == nil {
		return nil, fmt.Errorf("the %s controller needs a client, an instance provider, a recorder and a clock", Name)
	}
	if options.Period <= 0 {
		options.Period = DefaultPeriod
	}
	if options.Grace <= 0 {
		options.Grace = DefaultGrace
	}
	return &Controller{
		client: options.Client, instances: options.Instances, recorder: options.Recorder,
		clock: options.Clock, period: options.Period, grace: options.Grace,
	}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=provisioners,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager compares instances and nodes at once and then every period, on the leader
// only; a failed comparison is logged and tried again the next period.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return periodic.Add(mgr, &periodic.Loop{Name: Name, Clock: c.clock, Pass: c.Collect, Period: c.period})
}

// Orphans are what one comparison finds.
type Orphans struct {
	// Instances have had no node for longer than the grace period.
	Instances []*cloudprovider.Instance
	// Suspects are nodes Karpenter launched whose instance the list lacks; only a Get that
	// finds no instance condemns one, as a list may lag a launch.
	Suspects []*corev1.Node
	// SuspectClaims are NodeClaims that recorded an instance the list lacks, judged the same way.
	SuspectClaims []*v1.NodeClaim
}

// Compare finds the instances that neither a registered node nor a NodeClaim stands for, launched before
// now-grace, and the nodes Karpenter launched and the NodeClaims whose instance is not among
// instances, recorded before now-grace. Those being deleted are left to their finalizer. An instance of a launch one of
// whose NodeClaims has not recorded its instance yet is that NodeClaim's until it has: a
// launch's instances are recorded one by one after the call returns (a large one's, or one
// resumed after a crash, past the grace), and the lifecycle deletes a NodeClaim not launched in
// time, which leaves the launch's other instances to be collected.
func Compare(instances []*cloudprovider.Instance, nodeList []corev1.Node, claims []v1.NodeClaim, now time.Time, grace time.Duration) Orphans {
	var orphans Orphans
	byProviderID := map[string]bool{}
	for i := range nodeList {
		// A node still registering does not stand for its instance: its NodeClaim does, or
		// nothing does (the NodeClaim was deleted before it recorded the instance, and the
		// kubelet registered a node no NodeClaim will take), and the instance is an orphan.
		if id := nodeList[i].Spec.ProviderID; id != "" && !nodeclaims.Registering(&nodeList[i]) {
			byProviderID[id] = true
		}
	}
	recording := sets.New[string]()
	for i := range claims {
		nc := &claims[i]
		if id := nc.Status.ProviderID; id != "" {
			byProviderID[id] = true
		} else if group := nc.Annotations[launcher.LaunchGroupAnnotationKey]; group != "" && nc.DeletionTimestamp == nil {
			recording.Insert(group)
		}
	}
	launched := map[string]bool{}
	for _, instance := range instances {
		launched[instance.ProviderID] = true
		if !byProviderID[instance.ProviderID] && now.Sub(instance.LaunchTime) >= grace && (instance.LaunchGroup == "" || !recording.Has(instance.LaunchGroup)) {
			orphans.Instances = append(orphans.Instances, instance)
		}
	}
	for i := range nodeList {
		node := &nodeList[i]
		if nodes.IsLaunchedByKarpenter(node) && node.DeletionTimestamp == nil && node.Spec.ProviderID != "" && !launched[node.Spec.ProviderID] {
			orphans.Suspects = append(orphans.Suspects, node)
		}
	}
	for i := range claims {
		// A NodeClaim recorded within the grace may name an instance EC2 does not show yet:
		// its reads are eventually consistent, and a launch whose instance could not be read
		// back records it as the launch's answer told it.
		nc := &claims[i]
		if nc.DeletionTimestamp == nil && nc.Status.ProviderID != "" && !launched[nc.Status.ProviderID] && now.Sub(recordedAt(nc)) >= grace {
			orphans.SuspectClaims = append(orphans.SuspectClaims, nc)
		}
	}
	return orphans
}

// recordedAt is when the NodeClaim recorded its instance: when it became Launched, or was
// created when it has no such condition.
func recordedAt(nc *v1.NodeClaim) time.Time {
	if launched := nc.Condition(v1.ConditionTypeLaunched); launched != nil {
		return launched.LastTransitionTime.Time
	}
	return nc.CreationTimestamp.Time
}

// Collect runs one comparison: it terminates the orphaned instances and deletes the nodes
// whose instance is gone. Nothing is deleted unless both lists were read.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances, %w", err)
	}
	nodeList := &corev1.NodeList{}
	// Every node each period: Compare only reads the cache's own objects, uncopied; the rare
	// suspect is copied before it is acted on.
	if err := c.client.List(ctx, nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes, %w", err)
	}
	claims := &v1.NodeClaimList{}
	if err := c.client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims, %w", err)
	}
	orphans := Compare(instances, nodeList.Items, claims.Items, c.clock.Now(), c.grace)
	var errs []error
	for _, instance := range orphans.Instances {
		errs = append(errs, c.terminate(ctx, instance))
	}
	for _, node := range orphans.Suspects {
		errs = append(errs, c.deleteIfGone(ctx, node.DeepCopy()))
	}
	for _, nc := range orphans.SuspectClaims {
		errs = append(errs, c.deleteClaimIfGone(ctx, nc.DeepCopy()))
	}
	return errors.Join(errs...)
}

// deleteClaimIfGone deletes a NodeClaim whose instance the cloud no longer has or shuts down
// (terminated out of band, reclaimed): its node goes with it, and its pods get a new node. Its
// finalizer still waits for the instance to be terminated.
func (c *Controller) deleteClaimIfGone(ctx context.Context, nc *v1.NodeClaim) error {
	_, err := cloudprovider.GetRunning(ctx, c.instances, nc.Status.ProviderID)
	if notFound := (*cloudprovider.NotFoundError)(nil); !errors.As(err, &notFound) {
		if err != nil {
			return fmt.Errorf("reading instance %s of nodeclaim %s, %w", nc.Status.ProviderID, nc.Name, err)
		}
		return nil
	}
	if err := c.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim %s whose instance is gone, %w", nc.Name, err)
	}
	collectedTotal.WithLabelValues(ReasonNodeClaimWithoutInstance).Inc()
	log.FromContext(ctx).Info("deleted a nodeclaim whose instance is gone", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
	c.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonNodeClaimWithoutInstance, "Instance %s no longer exists; deleted the nodeclaim", nc.Status.ProviderID)
	return nil
}

func (c *Controller) terminate(ctx context.Context, instance *cloudprovider.Instance) error {
	if err := c.instances.Delete(ctx, instance.ProviderID); err != nil {
		return fmt.Errorf("terminating instance %s without a node, %w", instance.ProviderID, err)
	}
	collectedTotal.WithLabelValues(ReasonInstanceWithoutNode).Inc()
	log.FromContext(ctx).Info("terminated an instance that no node stands for", "providerID", instance.ProviderID,
		"launched", instance.LaunchTime, "grace", c.grace)
	// The instance has no object of its own; its Provisioner, when it still exists, tells.
	provisioner := &v1alpha5.Provisioner{}
	name := instance.Labels[v1alpha5.ProvisionerNameLabelKey]
	if name == "" || c.client.Get(ctx, types.NamespacedName{Name: name}, provisioner) != nil {
		return nil
	}
	c.recorder.Eventf(provisioner, corev1.EventTypeWarning, ReasonInstanceWithoutNode,
		"Terminated instance %s: launched at %s, no node registered for it within %s", instance.ProviderID,
		instance.LaunchTime.UTC().Format(time.RFC3339), c.grace)
	return nil
}

func (c *Controller) deleteIfGone(ctx context.Context, node *corev1.Node) error {
	_, err := cloudprovider.GetRunning(ctx, c.instances, node.Spec.ProviderID)
	if notFound := (*cloudprovider.NotFoundError)(nil); !errors.As(err, &notFound) {
		if err != nil {
			return fmt.Errorf("reading instance %s of node %s, %w", node.Spec.ProviderID, node.Name, err)
		}
		return nil
	}
	if err := c.client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting node %s whose instance is gone, %w", node.Name, err)
	}
	collectedTotal.WithLabelValues(ReasonNodeWithoutInstance).Inc()
	log.FromContext(ctx).Info("deleted a node whose instance is gone", "node", node.Name, "providerID", node.Spec.ProviderID)
	c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonNodeWithoutInstance, "Instance %s no longer exists; deleted the node", node.Spec.ProviderID)
	return nil
}
