package pods

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// DoNotDisruptUntil is how long a pod still running and not being deleted holds its NodePool
// node against voluntary disruption (drift, consolidation) — a DaemonSet's or a mirror pod too,
// as upstream lets them: for ever when annotated
// karpenter.sh/do-not-disrupt "true" (ok, zero time), until the given duration since it started
// when annotated with one ("1h"), not at all otherwise. A value that is neither is an error and
// holds nothing, as upstream reads it; the caller tells the pod's owner. A pod not started yet
// is held from now.
func DoNotDisruptUntil(pod *corev1.Pod, now time.Time) (time.Time, bool, error) {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok || IsTerminal(pod) || pod.DeletionTimestamp != nil {
		return time.Time{}, false, nil
	}
	if value == "true" {
		return time.Time{}, true, nil
	}
	d, err := time.ParseDuration(value)
	if err == nil && d <= 0 {
		err = fmt.Errorf("the duration must be positive")
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s=%q is neither \"true\" nor a duration, and holds nothing: %w", v1.DoNotDisruptAnnotationKey, value, err)
	}
	started := now
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	until := started.Add(d)
	return until, now.Before(until), nil
}
