// Package nodeclass resolves each EC2NodeClass into its status: the subnets, security groups
// and AMIs its selectors select, and the instance profile of its role (created by Karpenter
// through IAM) or the one it names, with a condition for each, ValidationSucceeded and Ready.
// Selectors are resolved again periodically, so new subnets and AMI releases are picked up. A
// finalizer keeps the class while NodeClaims name it and deletes the instance profile Karpenter
// created when the class goes.
package nodeclass

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/instanceprofile"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// Name identifies the controller.
const Name = "nodeclass"

// DefaultPeriod is how often a class is resolved again without a change: a subnet tagged or an
// AMI released is picked up within it.
const DefaultPeriod = 5 * time.Minute

// Options configure the controller.
type Options struct {
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.Clock
	// Clients are the AWS clients of the region nodes launch in.
	Clients awsapi.ClientsFunc
	// ClusterName and Region name the instance profiles Karpenter creates and tag them.
	ClusterName, Region string
	// KubernetesVersion (major.minor) selects the AMIs an alias names.
	KubernetesVersion string
	// Period is how often each class is resolved again; DefaultPeriod when zero.
	Period time.Duration
}

// Controller resolves EC2NodeClasses.
type Controller struct {
	client           client.Client
	recorder         record.EventRecorder
	clock            clock.Clock
	subnets          *subnet.Provider
	securityGroups   *securitygroup.Provider
	amis             *amifamily.Provider
	instanceProfiles *instanceprofile.Provider
	clusterName      string
	region           string
	period           time.Duration
}

// New builds the controller; it does no I/O.
func New(options Options) (*Controller, error) {
	if options.Client == nil || options.Recorder == nil || options.Clock == nil || options.Clients == nil {
		return nil, fmt.Errorf("the %s controller needs a client, a recorder, a clock and AWS clients", Name)
	}
	if options.ClusterName == "" || options.Region == "" {
		return nil, fmt.Errorf("the %s controller needs the cluster's name and region, which name the instance profiles it creates", Name)
	}
	return &Controller{
		client:           options.Client,
		recorder:         options.Recorder,
		clock:            options.Clock,
		subnets:          subnet.NewProvider(options.Clients, options.Clock),
		securityGroups:   securitygroup.NewProvider(options.Clients, options.Clock),
		amis:             amifamily.NewProvider(options.Clients, options.KubernetesVersion, options.Clock),
		instanceProfiles: instanceprofile.NewProvider(options.Clients),
		clusterName:      options.ClusterName,
		region:           options.Region,
		period:           cmp.Or(options.Period, DefaultPeriod),
	}, nil
}

// Name identifies the controller.
func (c *Controller) Name() string { return Name }

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/finalizers,verbs=update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager watches EC2NodeClasses, and the deletion of the NodeClaims naming them,
// which a class being deleted waits for.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return ctrl.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if ref := o.(*v1.NodeClaim).Spec.NodeClassRef; namesAClass(ref) {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
			}
			return nil
		}), ctrl.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// namesAClass says a nodeClassRef names an EC2NodeClass.
func namesAClass(ref *v1.NodeClassReference) bool {
	return ref != nil && ref.GroupKind() == awsv1.SchemeGroupVersion.WithKind("EC2NodeClass").GroupKind()
}

// Reconcile resolves the class into its status, or finalizes a class being deleted.
func (c *Controller) Reconcile(ctx context.Context, request reconcile.Request) (reconcile.Result, error) {
	class := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, request.NamespacedName, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if class.DeletionTimestamp != nil {
		return c.finalize(ctx, class)
	}
	if !controllerutil.ContainsFinalizer(class, awsv1.TerminationFinalizer) {
		stored := class.DeepCopy()
		controllerutil.AddFinalizer(class, awsv1.TerminationFinalizer)
		if err := c.client.Patch(ctx, class, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding the finalizer to ec2nodeclass %s, %w", class.Name, err))
		}
	}
	status := Decide(class, c.resolve(ctx, class), c.clock.Now())
	if !equality.Semantic.DeepEqual(status, class.Status) {
		stored := class.DeepCopy()
		class.Status = status
		if err := c.client.Status().Patch(ctx, class, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching the status of ec2nodeclass %s, %w", class.Name, err))
		}
		c.tellTransitions(class, stored.Status.Conditions)
	}
	return reconcile.Result{RequeueAfter: c.period}, nil
}

// resolve asks AWS for each of the class's concerns.
func (c *Controller) resolve(ctx context.Context, class *awsv1.EC2NodeClass) Resolution {
	var r Resolution
	subnets, err := c.subnets.List(ctx, subnetTerms(class))
	r.SubnetsErr = err
	for _, s := range subnets {
		r.Subnets = append(r.Subnets, awsv1.Subnet{ID: s.ID, Zone: s.Zone, ZoneID: s.ZoneID})
	}
	groups, err := c.securityGroups.List(ctx, securityGroupTerms(class))
	r.SecurityGroupsErr = err
	for _, g := range groups {
		r.SecurityGroups = append(r.SecurityGroups, awsv1.SecurityGroup{ID: g.ID, Name: g.Name})
	}
	r.AMIs, r.AMIsErr = c.resolveAMIs(ctx, class)
	r.InstanceProfile, r.InstanceProfileErr = c.resolveInstanceProfile(ctx, class)
	return r
}

// resolveAMIs resolves the alias through AWS's SSM parameters, or the terms (an ssmParameter
// term's parameter naming the AMI id) through DescribeImages.
func (c *Controller) resolveAMIs(ctx context.Context, class *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	if a := alias(class); a != "" {
		amis, err := c.amis.Alias(ctx, a)
		return statusAMIs(amis, windows(class)), err
	}
	var ts []selector.Term
	for _, t := range class.Spec.AMISelectorTerms {
		term := selector.Term{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner}
		if t.SSMParameter != "" {
			id, err := c.amis.Parameter(ctx, t.SSMParameter)
			if err != nil {
				return nil, err
			}
			if id == "" {
				continue // the parameter does not exist: the term selects nothing
			}
			term.ID = id
		}
		ts = append(ts, term)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	amis, err := c.amis.List(ctx, ts)
	return statusAMIs(amis, windows(class)), err
}

// resolveInstanceProfile makes the instance profile of the class's role exist, or checks the
// one it names exists.
func (c *Controller) resolveInstanceProfile(ctx context.Context, class *awsv1.EC2NodeClass) (string, error) {
	if class.Spec.Role == "" {
		if class.Spec.InstanceProfile == nil {
			return "", fmt.Errorf("neither role nor instanceProfile is set")
		}
		profile, err := c.instanceProfiles.Get(ctx, *class.Spec.InstanceProfile)
		return profile.Name, err
	}
	name := c.instanceProfileName(class)
	if err := c.instanceProfiles.Ensure(ctx, name, class.Spec.Role, c.instanceProfileTags(class)); err != nil {
		return "", fmt.Errorf("making instance profile %s hold role %s, %w", name, class.Spec.Role, err)
	}
	return name, nil
}

func (c *Controller) instanceProfileName(class *awsv1.EC2NodeClass) string {
	return instanceprofile.Name(c.clusterName, c.region, class.Name)
}

// instanceProfileTags are the class's tags and those that say the profile is the cluster's,
// Karpenter's for this class, in this region.
func (c *Controller) instanceProfileTags(class *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range class.Spec.Tags {
		tags[k] = v
	}
	tags[awsapi.ClusterTagKey(c.clusterName)] = "owned"
	tags["eks:eks-cluster-name"] = c.clusterName
	tags[awsv1.LabelNodeClass] = class.Name
	tags[corev1.LabelTopologyRegion] = c.region
	return tags
}

// finalize waits for the NodeClaims naming the class to be gone, deletes the instance profile
// Karpenter created for its role, then lets the class go.
func (c *Controller) finalize(ctx context.Context, class *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(class, awsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var using []string
	for i := range claims.Items {
		if ref := claims.Items[i].Spec.NodeClassRef; namesAClass(ref) && ref.Name == class.Name {
			using = append(using, claims.Items[i].Name)
		}
	}
	if len(using) > 0 {
		slices.Sort(using)
		c.recorder.Event(class, corev1.EventTypeNormal, "WaitingOnNodeClaimTermination", "waiting for NodeClaims "+strings.Join(using, ", ")+" to be deleted")
		// Their deletion is watched; the period re-announces the wait.
		return reconcile.Result{RequeueAfter: c.period}, nil
	}
	// The profile is deleted even when the class now names its own: it was Karpenter's while
	// the class had a role.
	if name := c.instanceProfileName(class); class.Spec.InstanceProfile == nil || *class.Spec.InstanceProfile != name {
		if err := c.instanceProfiles.Delete(ctx, name); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting instance profile %s of ec2nodeclass %s, %w", name, class.Name, err)
		}
	}
	stored := class.DeepCopy()
	controllerutil.RemoveFinalizer(class, awsv1.TerminationFinalizer)
	if err := c.client.Patch(ctx, class, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the finalizer of ec2nodeclass %s, %w", class.Name, err))
	}
	return reconcile.Result{}, nil
}

// tellTransitions emits an Event for each condition that changed: a Warning with the reason of
// one that is not True, Normal when the class becomes Ready.
func (c *Controller) tellTransitions(class *awsv1.EC2NodeClass, before []metav1.Condition) {
	for _, conditionType := range append(slices.Clone(readyConditions), awsv1.ConditionTypeReady) {
		after := meta.FindStatusCondition(class.Status.Conditions, conditionType)
		was := meta.FindStatusCondition(before, conditionType)
		if after == nil || (was != nil && was.Status == after.Status && was.Reason == after.Reason) {
			continue
		}
		switch {
		case after.Status != metav1.ConditionTrue && conditionType != awsv1.ConditionTypeReady:
			// Ready's reason is the failing condition's, told by its own Event.
			c.recorder.Event(class, corev1.EventTypeWarning, after.Reason, conditionType+": "+after.Message)
		case conditionType == awsv1.ConditionTypeReady:
			c.recorder.Event(class, corev1.EventTypeNormal, awsv1.ConditionTypeReady, "EC2NodeClass resolved: nodes can launch with it")
		}
	}
}
