package termination

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/pods"
)

// volumeDetachPoll is how often a drained node whose volumes are still attached is looked at
// again: nothing the controller watches tells it when they detach.
const volumeDetachPoll = 5 * time.Second

// AwaitedAttachments are the names of the volume attachments on the node that its instance's
// termination waits for: every one of the node's but those of a volume a pod staying on it uses
// (staying: the persistent volumes of the pods the drain leaves, DaemonSets' and those tolerating
// the drain's taint), which detaches only with the instance. Terminated first, an instance takes
// its volumes' attachments down uncleanly, and a StatefulSet's pod rescheduled elsewhere waits
// minutes for the cloud to let its volume go (upstream waits alike).
func AwaitedAttachments(attachments []storagev1.VolumeAttachment, nodeName string, staying sets.Set[string]) []string {
	var out []string
	for _, va := range attachments {
		if va.Spec.NodeName != nodeName {
			continue
		}
		// An inline volume's (CSI migration's InlineVolumeSpec) is not waited for, as upstream
		// does not: no claim says whether a pod staying on the node holds it.
		if pv := va.Spec.Source.PersistentVolumeName; pv == nil || staying.Has(*pv) {
			continue
		}
		out = append(out, va.Name)
	}
	slices.Sort(out)
	return out
}

// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch

// attachedVolumes are the volume attachments the drained node's instance waits for
// (AwaitedAttachments); onNode are the pods still on it.
func (c *Controller) attachedVolumes(ctx context.Context, node *corev1.Node, onNode []corev1.Pod) ([]string, error) {
	var attachments storagev1.VolumeAttachmentList
	if err := c.client.List(ctx, &attachments); err != nil {
		return nil, fmt.Errorf("listing volume attachments, %w", err)
	}
	if !slices.ContainsFunc(attachments.Items, func(va storagev1.VolumeAttachment) bool { return va.Spec.NodeName == node.Name }) {
		return nil, nil
	}
	staying := sets.New[string]()
	for i := range onNode {
		pod := &onNode[i]
		if pods.IsTerminal(pod) {
			continue
		}
		for _, volume := range pod.Spec.Volumes {
			if volume.PersistentVolumeClaim == nil {
				continue
			}
			claim := &corev1.PersistentVolumeClaim{}
			err := c.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: volume.PersistentVolumeClaim.ClaimName}, claim)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading claim %s/%s of pod %s, %w", pod.Namespace, volume.PersistentVolumeClaim.ClaimName, pod.Name, err)
			}
			if claim.Spec.VolumeName != "" {
				staying.Insert(claim.Spec.VolumeName)
			}
		}
	}
	return AwaitedAttachments(attachments.Items, node.Name, staying), nil
}

// awaitDetach is whether the drained node's instance waits for its volumes to detach: until
// the deadline, when there is one; for as long as they take otherwise.
func (c *Controller) awaitDetach(ctx context.Context, node *corev1.Node, onNode []corev1.Pod, deadline *time.Time, now time.Time) (time.Duration, error) {
	if deadline != nil && !now.Before(*deadline) {
		c.attachmentsChanged(node, "")
		return 0, nil
	}
	attached, err := c.attachedVolumes(ctx, node, onNode)
	if err != nil {
		return 0, err
	}
	if len(attached) == 0 {
		c.attachmentsChanged(node, "")
		return 0, nil
	}
	if names := strings.Join(attached, ", "); c.attachmentsChanged(node, names) {
		c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonAwaitingVolumeDetachment, "Drained; waiting for volume attachment %s to detach before terminating the instance", names)
	}
	wait := volumeDetachPoll
	if deadline != nil {
		wait = min(wait, deadline.Sub(now))
	}
	return wait, nil
}

// attachmentsChanged records the attachments the node's instance now waits for ("" once none),
// and reports whether they differ from those it waited for at the last look.
func (c *Controller) attachmentsChanged(node *corev1.Node, attachments string) bool {
	c.awaitedMu.Lock()
	defer c.awaitedMu.Unlock()
	if attachments == "" {
		delete(c.awaited, node.UID)
		return false
	}
	if c.awaited[node.UID] == attachments {
		return false
	}
	c.awaited[node.UID] = attachments
	return true
}
