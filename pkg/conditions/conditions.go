// Package conditions holds what Karpenter's reconcilers do alike to status conditions.
package conditions

import "knative.dev/pkg/apis"

// KeepTransitionTimes gives each condition of after that has the same status as in before the
// lastTransitionTime it had there. A condition transitions when its status changes; knative's
// condition manager also re-stamps it when only the reason or message changes, and messages
// that quote a cloud request id change on every retry, so without this a persisting failure
// would look like a new one every period.
func KeepTransitionTimes(before, after apis.Conditions) {
	for i := range after {
		now := &after[i]
		for _, was := range before {
			if was.Type == now.Type && was.Status == now.Status {
				now.LastTransitionTime = was.LastTransitionTime
			}
		}
	}
}
