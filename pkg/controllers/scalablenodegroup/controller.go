// Package scalablenodegroup reconciles ScalableNodeGroups onto cloud node groups: it sets the
// group's desired size from spec.replicas and reports what the cloud observes in status, so
// that anything driving the scale subresource (kubectl scale, an HPA, a HorizontalAutoscaler)
// resizes real capacity.
package scalablenodegroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/conditions"
	"karpenter.sh/karpenter/pkg/events"
)

// Condition reasons, stable for alerting and documented in docs/troubleshooting.
const (
	ReasonInvalidNodeGroup = "InvalidNodeGroup"
	ReasonAccessDenied     = "AccessDenied"
	ReasonNotFound         = "NodeGroupNotFound"
	ReasonOutOfBounds      = "DesiredOutOfBounds"
	ReasonCloudError       = "CloudProviderError"
	ReasonInFlight         = "ChangeInFlight"
	ReasonScaled           = "Scaled"
	// ReasonAdopted is the Event of a group whose unset spec.replicas took the cloud's size.
	ReasonAdopted = "Adopted"
)

// Name identifies the controller.
const Name = "scalablenodegroup"

// DefaultPeriod is how often a group is re-read when no period is configured.
const DefaultPeriod = 10 * time.Second

// Options configure the controller.
type Options struct {
	Client client.Client
	// CloudProvider resolves node groups from a spec's type and id.
	CloudProvider cloudprovider.Factory
	Recorder      record.EventRecorder
	// Period is how often a group is re-read so that changes made outside Karpenter show;
	// DefaultPeriod when zero.
	Period time.Duration
}

// Controller reconciles ScalableNodeGroups.
type Controller struct {
	client   client.Client
	groups   cloudprovider.Factory
	recorder record.EventRecorder
	period   time.Duration
}

// New builds the controller.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.CloudProvider == nil || options.Recorder == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a cloud provider and a recorder", Name)
	}
	if options.Period <= 0 {
		options.Period = DefaultPeriod
	}
	return &Controller{client: options.Client, groups: options.CloudProvider, recorder: options.Recorder, period: options.Period}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=scalablenodegroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=autoscaling.karpenter.sh,resources=scalablenodegroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches ScalableNodeGroups, including scale subresource writes.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.Name()).
		// Spec changes, including writes through /scale, bump the generation; the controller's
		// own status writes do not, and must not trigger another call to the cloud.
		For(&v1alpha1.ScalableNodeGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

// Reconcile converges one node group's desired size on spec.replicas and records what the
// cloud reports.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	group := &v1alpha1.ScalableNodeGroup{}
	if err := c.client.Get(ctx, request.NamespacedName, group); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := group.DeepCopy()
	err := c.reconcile(ctx, group)
	events.OnConditionTransition(c.recorder, group, stored.StatusConditions().GetCondition(v1alpha1.AbleToScale),
		group.StatusConditions().GetCondition(v1alpha1.AbleToScale), nil)
	conditions.KeepTransitionTimes(stored.Status.Conditions, group.Status.Conditions)
	if patchErr := c.client.Status().Patch(ctx, group, client.MergeFrom(stored)); patchErr != nil && !apierrors.IsNotFound(patchErr) {
		return reconcile.Result{}, errors.Join(err, fmt.Errorf("patching status, %w", patchErr))
	}
	if err != nil {
		// Returning the error retries with the controller's exponential backoff.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.period}, nil
}

func (c *Controller) reconcile(ctx context.Context, group *v1alpha1.ScalableNodeGroup) error {
	conditions := group.StatusConditions()
	nodeGroup, err := c.groups.NodeGroupFor(string(group.Spec.Type), group.Spec.ID)
	if err != nil {
		// A malformed id does not heal by retrying; the watch brings the fix.
		markUnable(group, ReasonInvalidNodeGroup, err)
		return nil
	}
	observed, err := nodeGroup.Status(ctx)
	if err != nil {
		markUnable(group, reasonFor(err), err)
		return fmt.Errorf("reading node group %s %s, %w", group.Spec.Type, group.Spec.ID, err)
	}
	if reason, message, err := c.refusal(ctx, group, nodeGroup, observed); err != nil || reason != "" {
		if reason != "" {
			// Nothing of the group is published or written; the periodic reconcile sees a new tag.
			markUnable(group, reason, errors.New(message))
		}
		return err
	}
	group.Status.Replicas = ptr.To(observed.Replicas)
	group.Status.Selector = labels.SelectorFromSet(observed.NodeLabels).String()
	if group.Spec.Replicas == nil {
		if err := c.adopt(ctx, group, observed.DesiredReplicas); err != nil {
			markUnable(group, ReasonCloudError, err)
			return err
		}
	}
	if desired := group.Spec.Replicas; desired != nil && *desired != observed.DesiredReplicas {
		if err := nodeGroup.SetDesiredReplicas(ctx, *desired); err != nil {
			return handleResizeError(group, *desired, err)
		}
		log.FromContext(ctx).Info("resized node group", "type", group.Spec.Type, "id", group.Spec.ID, "from", observed.DesiredReplicas, "to", *desired)
		c.recorder.Eventf(group, corev1.EventTypeNormal, ReasonScaled, "Set desired replicas of %s from %d to %d", group.Spec.ID, observed.DesiredReplicas, *desired)
		observed.Stable = false
		observed.Message = fmt.Sprintf("desired replicas changed from %d to %d", observed.DesiredReplicas, *desired)
	}
	conditions.MarkTrue(v1alpha1.AbleToScale)
	if observed.Stable {
		conditions.MarkTrue(v1alpha1.Stabilized)
	} else {
		conditions.MarkFalse(v1alpha1.Stabilized, ReasonInFlight, "%s", observed.Message)
	}
	return nil
}

// adopt writes the cloud's desired size into an unset spec.replicas. Until then the group's
// scale subresource has no size to report, and a size read as zero would let an autoscaler
// shrink a running group; once adopted, /scale reports the size the group really has.
func (c *Controller) adopt(ctx context.Context, group *v1alpha1.ScalableNodeGroup, desired int32) error {
	adopted := group.DeepCopy()
	adopted.Spec.Replicas = ptr.To(desired)
	// The lock refuses the write if someone set spec.replicas meanwhile: theirs wins.
	if err := c.client.Patch(ctx, adopted, client.MergeFromWithOptions(group, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting the desired replicas of %s %s into spec.replicas, %w", group.Spec.Type, group.Spec.ID, err)
	}
	// Only spec.replicas is taken over: the status patch that follows diffs against the object
	// as it was read, and must not carry the new resourceVersion as a precondition.
	group.Spec.Replicas = adopted.Spec.Replicas
	log.FromContext(ctx).Info("adopted node group size", "type", group.Spec.Type, "id", group.Spec.ID, "replicas", desired)
	c.recorder.Eventf(group, corev1.EventTypeNormal, ReasonAdopted, "Adopted spec.replicas %d from the desired capacity of %s %s", desired, group.Spec.Type, group.Spec.ID)
	return nil
}

// handleResizeError records why a resize was not made. A busy group is retried on the next
// period; every other failure is a condition and an event.
func handleResizeError(group *v1alpha1.ScalableNodeGroup, desired int32, err error) error {
	var busy *cloudprovider.BusyError
	if errors.As(err, &busy) {
		group.StatusConditions().MarkTrue(v1alpha1.AbleToScale)
		group.StatusConditions().MarkFalse(v1alpha1.Stabilized, ReasonInFlight, "%s", busy.Reason)
		return nil
	}
	var outOfBounds *cloudprovider.OutOfBoundsError
	if errors.As(err, &outOfBounds) {
		// Not forced and not retried: only a change of spec or of the group's bounds helps,
		// and the periodic reconcile sees both.
		markUnable(group, ReasonOutOfBounds, fmt.Errorf("spec.replicas %d is outside the node group's bounds [%d, %d]; change the group's min/max size or spec.replicas", desired, outOfBounds.Min, outOfBounds.Max))
		return nil
	}
	markUnable(group, reasonFor(err), err)
	return fmt.Errorf("setting desired replicas of %s %s to %d, %w", group.Spec.Type, group.Spec.ID, desired, err)
}

// markUnable sets AbleToScale false; Reconcile emits a warning on the transition into that
// state, so a persistent failure is one event, not one per reconcile.
func markUnable(group *v1alpha1.ScalableNodeGroup, reason string, err error) {
	group.StatusConditions().MarkFalse(v1alpha1.AbleToScale, reason, "%s", err.Error())
}

func reasonFor(err error) string {
	var accessDenied *cloudprovider.AccessDeniedError
	var notFound *cloudprovider.NotFoundError
	switch {
	case errors.As(err, &accessDenied):
		return ReasonAccessDenied
	case errors.As(err, &notFound):
		return ReasonNotFound
	default:
		return ReasonCloudError
	}
}
