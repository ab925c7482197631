package launcher

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	pkgscheduling "karpenter.sh/karpenter/pkg/scheduling"
)

// unlabelled is true for a NodeClaim whose instance was recorded and whose labels were not
// written yet (Record writes the status first): a crash between the two leaves it so.
func unlabelled(nc *v1.NodeClaim) bool {
	return nc.Status.ProviderID != "" && nc.DeletionTimestamp == nil && nc.Labels[corev1.LabelInstanceTypeStable] == ""
}

// ErrLaunchUnsettled is what Resume returns while the cloud says the group was launched but does
// not list its instances yet: resume again shortly.
var ErrLaunchUnsettled = errors.New("the group was launched, its instances are not listed yet")

// Resume finishes the launch of a NodeClaim's group that a stopped controller left unfinished:
// NodeClaims created and maybe launched, their instances maybe not recorded. Nothing of the group
// may be launching in this process (Launching). The instances the group's launch made are found
// by its key; when the cloud lists none, the launch is asked again under the same key, which the
// cloud answers with the first launch's instances if there was one, never with more. The group's
// instances are then paired with its NodeClaims by Assign, the same rule the launch follows, so a
// NodeClaim gets the instance it would have had, and records it; one that recorded its instance
// and not its labels (unlabelled) is labelled. A NodeClaim the cloud had no instance for is
// failed. The NodeClaim's pool (or its node class) gone, the group is failed. Each instance's
// kubelet registers its Node.
func (l *Launcher) Resume(ctx context.Context, nc *v1.NodeClaim) error {
	listed, err := l.instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances, %w", err)
	}
	return l.resume(ctx, nc, listed)
}

// resume is Resume with the cloud's instances as listed before: ResumeAll lists them once for
// every group (a DescribeInstances of the cluster's instances each).
func (l *Launcher) resume(ctx context.Context, nc *v1.NodeClaim, listed []*cloudprovider.Instance) error {
	group := nc.Annotations[LaunchGroupAnnotationKey]
	if group == "" {
		return fmt.Errorf("nodeclaim %s names no launch group", nc.Name)
	}
	done := l.begin(group)
	defer done()
	members, err := l.members(ctx, group)
	if err != nil {
		return err
	}
	p, err := PoolOf(ctx, l.client, nc)
	if gone := (*PoolGoneError)(nil); errors.As(err, &gone) {
		return l.failAll(ctx, members, gone)
	}
	if err != nil {
		return err
	}
	instances := slices.DeleteFunc(slices.Clone(listed), func(i *cloudprovider.Instance) bool { return i.LaunchGroup != group })
	candidates, types, err := l.candidates(ctx, p, nc)
	if err != nil {
		return err
	}
	if len(instances) == 0 {
		instances, err = l.relaunch(ctx, p, candidates, members, group)
		if err != nil {
			return err
		}
	}
	pairs, unlaunched := Assign(members, instances)
	// A crash between a NodeClaim's two writes left its instance recorded and its labels
	// (instance type, zone, capacity type) unwritten: planned without them, its pods would find
	// no room there and be launched for again.
	for _, member := range members {
		if !unlabelled(member) {
			continue
		}
		if i := slices.IndexFunc(instances, func(i *cloudprovider.Instance) bool { return i.ProviderID == member.Status.ProviderID }); i >= 0 {
			pairs[member] = instances[i]
		}
	}
	var errs []error
	for member, instance := range pairs {
		// The type is looked up whatever its offerings' capacity now: the instance runs.
		i := slices.IndexFunc(types, func(it *cloudprovider.InstanceType) bool { return it.Name == instance.InstanceType })
		var it *cloudprovider.InstanceType
		if i >= 0 {
			it = types[i]
		} else {
			// The pool's node class or requirements changed since the launch so that the type is
			// no longer listed for it: its capacity is known once its Node registers.
			log.FromContext(ctx).Info("recording a resumed launch without its capacity: its instance type is no longer among the pool's",
				"nodeclaim", member.Name, "instance", instance.ID, "instance-type", instance.InstanceType)
		}
		if _, err := l.Record(ctx, member, instance, it); err != nil {
			errs = append(errs, err)
		}
	}
	for _, member := range unlaunched {
		if member.DeletionTimestamp == nil {
			errs = append(errs, l.Fail(ctx, member, errors.New("the cloud launched no instance for it")))
		}
	}
	return errors.Join(errs...)
}

// members are the NodeClaims of a launch group, deleted ones included: they may have taken an
// instance of the group.
func (l *Launcher) members(ctx context.Context, group string) ([]*v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := l.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var out []*v1.NodeClaim
	for i := range list.Items {
		if list.Items[i].Annotations[LaunchGroupAnnotationKey] == group {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// candidates are what the NodeClaim may launch as, cheapest first: the Provisioner's offerings
// its requirements allow; and the instance types those are of, with every offering whatever its
// capacity now, for the type of an instance already launched.
func (l *Launcher) candidates(ctx context.Context, p Pool, nc *v1.NodeClaim) ([]cloudprovider.Candidate, []*cloudprovider.InstanceType, error) {
	constraints := p.constraints()
	requirements := pkgscheduling.Requirements{}
	planned := scheduling.NewNode{}
	for _, r := range nc.Spec.Requirements {
		planned.Requirements = append(planned.Requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
		if err := requirements.Add(r.Key, r.Operator, r.Values...); err != nil {
			return nil, nil, fmt.Errorf("reading the requirements of nodeclaim %s, %w", nc.Name, err)
		}
	}
	constraints.Requirements = append(constraints.Requirements, planned.Requirements...)
	types, err := l.instances.InstanceTypes(ctx, constraints)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the instance types of nodeclaim %s, %w", nc.Name, err)
	}
	// The offerings of the types its requirements name, as a planned node's.
	for _, it := range types {
		if r, ok := requirements[corev1.LabelInstanceTypeStable]; !ok || r.Has(it.Name) {
			planned.InstanceTypes = append(planned.InstanceTypes, it)
		}
	}
	return planned.Offerings(), planned.InstanceTypes, nil
}

// relaunch asks the cloud again for the group's instances, under its key, one for each NodeClaim
// of the group: the cloud answers with the first launch's instances when there was one. One made
// with other candidates or counts is not answered again: its instances are listed once the cloud
// lists them.
func (l *Launcher) relaunch(ctx context.Context, p Pool, candidates []cloudprovider.Candidate, members []*v1.NodeClaim, group string) ([]*cloudprovider.Instance, error) {
	instances, err := l.launch(ctx, Request{Pool: p, Candidates: candidates, Labels: p.chosenLabels(members[0])}, group, len(members))
	if launchedBefore := (*cloudprovider.LaunchedBeforeError)(nil); errors.As(err, &launchedBefore) {
		return nil, ErrLaunchUnsettled
	}
	if unread := (*cloudprovider.UnreadInstancesError)(nil); errors.As(err, &unread) {
		return append(instances, unread.Instances...), nil
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("launching instances for launch group %s, %w", group, err), l.failAll(ctx, members, err))
	}
	return instances, nil
}

// failAll fails the group's NodeClaims that recorded no instance.
func (l *Launcher) failAll(ctx context.Context, members []*v1.NodeClaim, reason error) error {
	var errs []error
	for _, member := range members {
		if member.Status.ProviderID == "" && member.DeletionTimestamp == nil {
			errs = append(errs, l.Fail(ctx, member, reason))
		}
	}
	return errors.Join(errs...)
}

// ResumeAll finishes every launch a stopped controller left: the launches of the NodeClaims that
// recorded no instance. The allocator calls it before its first pass, so that the pass sees the
// room those launches made rather than launching for their pods again; a launch the cloud says
// was made but does not list yet (its call was in flight when the controller stopped) is
// reported with ErrLaunchUnsettled, so that the allocator asks again rather than plan those pods
// anew. The cloud's instances are listed once for all the groups.
func (l *Launcher) ResumeAll(ctx context.Context) error {
	unresumed, err := l.unresumed(ctx)
	if err != nil || len(unresumed) == 0 {
		return err
	}
	listed, err := l.instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances, %w", err)
	}
	resumed := map[string]bool{}
	var errs []error
	for _, nc := range unresumed {
		group := nc.Annotations[LaunchGroupAnnotationKey]
		if resumed[group] {
			continue
		}
		resumed[group] = true
		if err := l.resume(ctx, nc, listed); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unresumed names the NodeClaims the client's reads show as a stopped controller left them, their
// launch unfinished: ResumeAll's work. Through a cache, what ResumeAll wrote shows a moment later:
// the allocator waits for none before its first pass, which would otherwise find no room for the
// pods of the launches it just resumed and launch for them again (the e2e crash test launched a
// sixth node for five pods so).
func (l *Launcher) Unresumed(ctx context.Context) ([]string, error) {
	unresumed, err := l.unresumed(ctx)
	names := make([]string, len(unresumed))
	for i, nc := range unresumed {
		names[i] = nc.Name
	}
	return names, err
}

// unresumed are the NodeClaims of a launch group that no launch of this process runs, not
// deleting, with no instance recorded or with one recorded and not labelled.
func (l *Launcher) unresumed(ctx context.Context) ([]*v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := l.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims, %w", err)
	}
	var out []*v1.NodeClaim
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.DeletionTimestamp != nil || nc.Annotations[LaunchGroupAnnotationKey] == "" || l.Launching(nc) || (nc.Status.ProviderID != "" && !unlabelled(nc)) {
			continue
		}
		out = append(out, nc)
	}
	return out, nil
}
