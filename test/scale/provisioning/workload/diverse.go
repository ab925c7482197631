// Package workload builds the diverse workload that checks the allocator's plan against what
// kube-scheduler then does: pods covering every constraint kind the scheduler honours, for
// two Provisioners, with the volumes and storage class some of them claim. The scale harness
// creates it (test/scale/provisioning --workload diverse); see docs/benchmarks.md.
package workload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// Diverse is the workload's objects, in the order they are to be created: the Provisioners,
// storage, then the pods.
type Diverse struct {
	Provisioners []*v1alpha5.Provisioner
	// Storage are the StorageClass, PersistentVolumes and PersistentVolumeClaims.
	Storage []client.Object
	Pods    []*corev1.Pod
}

// NewDiverse is about pods pods (a multiple of 100 is exact; others round down per group)
// in namespace, for two Provisioners named name and name-tainted, their objects all named
// after name so that workloads of different names do not meet:
//
//   - generic pods of four sizes;
//   - topology spread over zone, hostname and capacity type (DoNotSchedule), and over zone
//     (ScheduleAnyway);
//   - required pod affinity to a zone, required hostname anti-affinity;
//   - required node affinity (instance types), preferred node affinity (a zone), an
//     architecture requirement (arm64);
//   - pods tolerating the tainted Provisioner's taint and selecting its label;
//   - pods whose claim is bound to a volume in us-west-2b, and pods whose WaitForFirstConsumer
//     claim's class allows only us-west-2a (with volumes there for kube-scheduler to bind).
func NewDiverse(name, namespace string, pods int) *Diverse {
	w := &Diverse{}
	scale := max(pods/100, 1)
	taint := corev1.Taint{Key: "diverse.karpenter.sh/dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}
	tainted := name + "-tainted"
	both := func(key string, values ...string) v1alpha5.NodeSelectorRequirement {
		return v1alpha5.NodeSelectorRequirement{Key: key, Operator: "In", Values: values}
	}
	w.Provisioners = []*v1alpha5.Provisioner{
		builders.Provisioner(builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
			both(v1alpha5.CapacityTypeLabelKey, v1alpha5.CapacityTypeSpot, v1alpha5.CapacityTypeOnDemand),
			both(corev1.LabelArchStable, "amd64", "arm64"),
		}}),
		builders.Provisioner(builders.ProvisionerOptions{Name: tainted, Labels: map[string]string{"diverse.karpenter.sh/team": name}, Taints: []corev1.Taint{taint}}),
	}
	sizes := []corev1.ResourceList{
		builders.Resources("cpu", "250m", "memory", "256Mi"),
		builders.Resources("cpu", "500m", "memory", "1Gi"),
		builders.Resources("cpu", "1", "memory", "2Gi"),
		builders.Resources("cpu", "2", "memory", "4Gi"),
	}
	group := func(app string, count int, o builders.PodOptions) {
		labels := map[string]string{"app": name + "-" + app, "workload": name}
		for i := range count * scale {
			o := o
			o.Name, o.Namespace, o.Labels = fmt.Sprintf("%s-%s-%d", name, app, i), namespace, labels
			if o.NodeSelector == nil {
				o.NodeSelector = map[string]string{v1alpha5.ProvisionerNameLabelKey: name}
			}
			if o.Requests == nil {
				o.Requests = sizes[i%len(sizes)]
			}
			w.Pods = append(w.Pods, builders.Pod(o))
		}
	}
	selecting := func(app string) map[string]string { return map[string]string{"app": name + "-" + app} }
	small := builders.Resources("cpu", "500m", "memory", "512Mi")

	group("generic", 23, builders.PodOptions{})
	group("zone-spread", 12, builders.PodOptions{Requests: small,
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, selecting("zone-spread"))}})
	group("soft-spread", 6, builders.PodOptions{Requests: small,
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.ScheduleAnyway, selecting("soft-spread"))}})
	group("host-spread", 6, builders.PodOptions{Requests: small,
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelHostname, corev1.DoNotSchedule, selecting("host-spread"))}})
	group("capacity-spread", 8, builders.PodOptions{Requests: small,
		TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(v1alpha5.CapacityTypeLabelKey, corev1.DoNotSchedule, selecting("capacity-spread"))}})
	group("db", 1, builders.PodOptions{Requests: builders.Resources("cpu", "1", "memory", "2Gi"),
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name, corev1.LabelTopologyZone: "us-west-2c"}})
	group("near-db", 6, builders.PodOptions{Requests: small, PodAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelTopologyZone, selecting("db"))}})
	group("anti", 6, builders.PodOptions{Requests: small, PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, selecting("anti"))}})
	group("instance-types", 6, builders.PodOptions{NodeRequirements: []corev1.NodeSelectorRequirement{
		builders.In(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge", "c5.xlarge", "c5.2xlarge"),
	}})
	group("prefers-zone", 6, builders.PodOptions{NodePreferences: []corev1.PreferredSchedulingTerm{builders.Preferred(10, builders.In(corev1.LabelTopologyZone, "us-west-2c"))}})
	group("arm", 6, builders.PodOptions{NodeRequirements: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelArchStable, "arm64")}})
	group("tolerating", 8, builders.PodOptions{
		NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: tainted, "diverse.karpenter.sh/team": name},
		Tolerations:  []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}})
	w.volumes(name, namespace, scale)
	return w
}

// volumes adds the pods with persistent volumes: claims bound to volumes in us-west-2b, and
// WaitForFirstConsumer claims of a class that allows only us-west-2a, with as many volumes
// there for kube-scheduler to bind them to.
func (w *Diverse) volumes(name, namespace string, scale int) {
	class := name + "-zonal"
	w.Storage = append(w.Storage, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: class},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{"us-west-2a"}},
		}}},
	})
	add := func(app, zone string, count int, bound bool) {
		for i := range count * scale {
			volumeName := fmt.Sprintf("%s-%s-%d", name, app, i)
			claim := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: volumeName, Namespace: namespace},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(class),
					Resources:        corev1.VolumeResourceRequirements{Requests: builders.Resources("storage", "1Gi")},
				},
			}
			volume := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: volumeName, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      builders.Resources("storage", "1Gi"),
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					StorageClassName:              class,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/" + volumeName}},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, zone)},
					}}}},
				},
			}
			if bound {
				// Bound as the volume controller binds a claim made for a volume.
				claim.Spec.VolumeName = volume.Name
				volume.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claim.Name}
			}
			w.Storage = append(w.Storage, volume, claim)
			pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("%s-%s-%d", name, app, i), Namespace: namespace,
				Labels:       map[string]string{"app": name + "-" + app, "workload": name},
				NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: name},
				Requests:     builders.Resources("cpu", "500m", "memory", "512Mi")})
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
			}}}
			w.Pods = append(w.Pods, pod)
		}
	}
	add("bound-volume", "us-west-2b", 3, true)
	add("wait-volume", "us-west-2a", 3, false)
}

// LaunchEvents counts the controller's Events in namespace naming the node planned for a pod:
// all of them, the pods told of a node (launched for them, or launching for others with room
// for them), and the pods told more than once that a node was launched for them, whom the plan
// had given room that kube-scheduler then gave to others.
func LaunchEvents(ctx context.Context, reader client.Reader, namespace string) (total, told, launchedTwice int, err error) {
	launches, err := Launches(ctx, reader, namespace)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, l := range launches {
		total += len(l)
		if len(l) > 0 {
			told++
		}
		launched := 0
		for _, launch := range l {
			if launch.Launched {
				launched++
			}
		}
		if launched > 1 {
			launchedTwice++
		}
	}
	return total, told, launchedTwice, nil
}

// Launch is one of the controller's Events telling a pod the node planned for it.
type Launch struct {
	Node string
	// Launched is whether the node was launched for the pod; otherwise the pod was planned
	// onto the room of a node launching already.
	Launched bool
	// Bound is whether the controller bound the pod to the node (--bind-pods).
	Bound bool
}

// Launches are the controller's Events in namespace naming the node planned for a pod, by pod
// name, oldest first.
func Launches(ctx context.Context, reader client.Reader, namespace string) (map[string][]Launch, error) {
	events := &corev1.EventList{}
	if err := reader.List(ctx, events, client.InNamespace(namespace), client.MatchingFields{"reason": provisioning.ReasonPlanned}); err != nil {
		return nil, fmt.Errorf("listing events, %w", err)
	}
	slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	out := map[string][]Launch{}
	for _, event := range events.Items {
		if l, ok := parseLaunch(event.Message); ok {
			out[event.InvolvedObject.Name] = append(out[event.InvolvedObject.Name], l)
		}
	}
	return out, nil
}

// parseLaunch reads one of the controller's Provisioning Events on a pod: "Node <name> (<type>,
// <zone>) was launched for this pod by provisioner <name>[, and the pod bound to it]",
// "Waiting for node <name>, launching, to become Ready" or "Bound to node <name>, launching, to
// run once it is Ready"; false for any other.
func parseLaunch(message string) (Launch, bool) {
	fields := strings.Fields(message)
	switch {
	case strings.Contains(message, "was launched for this pod") && len(fields) > 1:
		return Launch{Node: fields[1], Launched: true, Bound: strings.HasSuffix(message, "and the pod bound to it")}, true
	case strings.HasPrefix(message, "Waiting for node ") && len(fields) > 3:
		return Launch{Node: strings.TrimSuffix(fields[3], ",")}, true
	case strings.HasPrefix(message, "Bound to node ") && len(fields) > 3:
		return Launch{Node: strings.TrimSuffix(fields[3], ","), Bound: true}, true
	}
	return Launch{}, false
}

// Scheduled are the pods in namespace kube-scheduler bound (its Scheduled Events), by name,
// with when it did (zero for an Event without a time).
func Scheduled(ctx context.Context, reader client.Reader, namespace string) (map[string]time.Time, error) {
	events := &corev1.EventList{}
	if err := reader.List(ctx, events, client.InNamespace(namespace), client.MatchingFields{"reason": "Scheduled"}); err != nil {
		return nil, fmt.Errorf("listing events, %w", err)
	}
	out := map[string]time.Time{}
	for _, event := range events.Items {
		at := event.EventTime.Time
		if at.IsZero() {
			at = event.FirstTimestamp.Time
		}
		if seen, ok := out[event.InvolvedObject.Name]; !ok || (!at.IsZero() && (seen.IsZero() || at.Before(seen))) {
			out[event.InvolvedObject.Name] = at
		}
	}
	return out, nil
}

// FirstScheduled is when kube-scheduler first bound a pod in namespace, zero when it bound
// none: pods the controller binds itself (--bind-pods) are bound as their nodes launch, while
// kube-scheduler binds only once a batch's nodes are opened together.
func FirstScheduled(ctx context.Context, reader client.Reader, namespace string) (time.Time, error) {
	scheduled, err := Scheduled(ctx, reader, namespace)
	if err != nil {
		return time.Time{}, err
	}
	var first time.Time
	for _, at := range scheduled {
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, nil
}
