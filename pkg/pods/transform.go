package pods

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimForCache is the informer cache's transform of pods: it drops what no controller reads,
// so that every pod of the cluster costs the controller less memory, and each list of the
// cache copies less. What the scheduler, the provisioning snapshot, consolidation, the
// MetricsProducers and the node controllers read is kept: the metadata (labels, annotations
// such as karpenter.sh/do-not-evict, owner references, finalizers, deletion), the containers'
// and init containers' names, resources, ports and restart policy, and the rest of the spec
// (overhead, pod-level resources, node selector, affinity, tolerations, topology spread,
// priority, volumes, node name), the phase and the PodScheduled condition.
//
// Dropped: managed fields and kubectl's last-applied configuration; the containers' images,
// commands, environment, mounts, probes, lifecycle hooks and security contexts; ephemeral
// containers; image pull secrets, host aliases, DNS config, readiness gates and the pod's
// security context; the contents (not the presence) of configMap, secret, downwardAPI and
// projected volumes; the status's other conditions, IPs, message and container statuses.
// Every read of a pod must stay within what is kept (pkg/operator's
// TestTrimForCacheKeepsWhatIsRead).
//
// What a workload's pods carry alike (trimmed containers, tolerations, affinity, spread
// constraints) is then shared among them (share).
//
// The cache's pods are then partial: a controller may patch one (a patch of the difference
// carries only what it changed) but must never Update it whole. Non-pods, such as the
// cache's tombstones, pass unchanged; trimming twice changes nothing.
func TrimForCache(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	delete(pod.Annotations, corev1.LastAppliedConfigAnnotation)
	pod.Spec.Containers = trimContainers(pod.Spec.Containers)
	pod.Spec.InitContainers = trimContainers(pod.Spec.InitContainers)
	share(pod)
	pod.Spec.EphemeralContainers = nil
	pod.Spec.ImagePullSecrets = nil
	pod.Spec.HostAliases = nil
	pod.Spec.DNSConfig = nil
	pod.Spec.ReadinessGates = nil
	pod.Spec.SecurityContext = nil
	for i := range pod.Spec.Volumes {
		trimVolumeSource(&pod.Spec.Volumes[i].VolumeSource)
	}
	pod.Status = corev1.PodStatus{
		Phase:             pod.Status.Phase,
		Conditions:        keptConditions(pod.Status.Conditions),
		NominatedNodeName: pod.Status.NominatedNodeName,
		Reason:            pod.Status.Reason,
		QOSClass:          pod.Status.QOSClass,
		StartTime:         pod.Status.StartTime,
	}
	return pod, nil
}

// trimContainers keeps what the pod's requests (kube-scheduler's computation: resources, and
// the restart policy that makes an init container a sidecar) and its host ports read. The
// trimmed containers are a new slice: the given one may be shared with other cached pods.
func trimContainers(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return containers
	}
	trimmed := make([]corev1.Container, len(containers))
	for i, c := range containers {
		trimmed[i] = corev1.Container{Name: c.Name, Ports: c.Ports, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return trimmed
}

// trimVolumeSource empties the sources whose items are the bulk of most pods' volumes (the
// service account token's projected volume is on every pod) and that nothing reads; claims,
// ephemeral claims and the volumes scheduling counts are kept whole.
func trimVolumeSource(source *corev1.VolumeSource) {
	switch {
	case source.Projected != nil:
		source.Projected = &corev1.ProjectedVolumeSource{}
	case source.ConfigMap != nil:
		source.ConfigMap = &corev1.ConfigMapVolumeSource{}
	case source.Secret != nil:
		source.Secret = &corev1.SecretVolumeSource{}
	case source.DownwardAPI != nil:
		source.DownwardAPI = &corev1.DownwardAPIVolumeSource{}
	}
}

// keptConditions are the PodScheduled condition, which IsUnschedulable reads, and the Ready
// condition's status and time without its message, which the pod metrics read
// (karpenter_pods_state's ready label, karpenter_pods_startup_duration_seconds).
func keptConditions(conditions []corev1.PodCondition) []corev1.PodCondition {
	var kept []corev1.PodCondition
	for _, condition := range conditions {
		switch condition.Type {
		case corev1.PodScheduled:
			kept = append(kept, condition)
		case corev1.PodReady:
			kept = append(kept, corev1.PodCondition{Type: condition.Type, Status: condition.Status, LastTransitionTime: condition.LastTransitionTime})
		}
	}
	return kept
}
