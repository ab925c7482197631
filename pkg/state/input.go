package state

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// Question is what every planner asks the scheduler about one snapshot beside the pods it
// places and the room it offers them (Snapshot.Room, less the nodes a disruption removes): the
// pod each DaemonSet runs on a new node, and the claims, volumes and classes that keep pods to
// their volumes' zones. The provisioning pass, consolidation, expiry and `kubectl karpenter
// plan` all ask through Input, so they cannot disagree on the cluster they plan for.
type Question struct {
	DaemonSetPods []*corev1.Pod
	Claims        []*corev1.PersistentVolumeClaim
	Volumes       []*corev1.PersistentVolume
	Classes       []*storagev1.StorageClass
	// Requests, when set, keeps the pods' requests across the many inputs a disruption pass
	// asks about the same pods; a provisioning pass asks once and needs none.
	Requests *scheduling.RequestCache
}

// Question is the snapshot's question to the scheduler.
func (c *Snapshot) Question() Question {
	return Question{DaemonSetPods: c.DaemonSetPods(), Claims: pointers(c.Claims), Volumes: pointers(c.Volumes), Classes: pointers(c.Classes)}
}

// Input asks where pods go: onto the room of nodes (bound and nominated pods included, as
// Snapshot.Room gives them), or onto new nodes of the provisioners.
func (q Question) Input(pods []*corev1.Pod, provisioners []scheduling.Pool, room []scheduling.Node) scheduling.Input {
	return scheduling.Input{Pods: pods, Pools: provisioners, Nodes: room, DaemonSetPods: q.DaemonSetPods,
		PersistentVolumeClaims: q.Claims, PersistentVolumes: q.Volumes, StorageClasses: q.Classes, Requests: q.Requests}
}
