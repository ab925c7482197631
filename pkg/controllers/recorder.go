package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// recorderFor is the Event recorder of a controller, its source named karpenter-<controller>,
// with a broadcaster of its own. client-go's broadcaster queues up to 1,000 Events and drops
// what comes beyond while its one writer posts them one at a time; shared by every controller
// (the manager's), a burst of one controller's Events dropped the others' as well as its own:
// a quarter of a 500-pod batch's Planned Events never reached their pods, and a Provisioner's
// Warning in the same seconds could have gone the same way. The broadcaster stops with the
// manager.
func recorderFor(mgr manager.Manager, name string) record.EventRecorder {
	source := "karpenter-" + name
	events, err := typedcorev1.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		// The manager's own clients were built from the same configuration and client.
		log.Log.Error(err, "building an event client; the controller's Events share the manager's broadcaster", "controller", name)
		return mgr.GetEventRecorderFor(source)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	if err := mgr.Add(broadcasterStopper{broadcaster}); err != nil {
		log.Log.Error(err, "adding the event broadcaster to the manager", "controller", name)
	}
	return broadcaster.NewRecorder(mgr.GetScheme(), corev1.EventSource{Component: source})
}

// broadcasterStopper shuts a broadcaster down when the manager stops, on every replica (its
// controller's Events may come from a replica that does not lead, e.g. a webhook's warnings).
type broadcasterStopper struct {
	broadcaster record.EventBroadcaster
}

func (b broadcasterStopper) Start(ctx context.Context) error {
	<-ctx.Done()
	b.broadcaster.Shutdown()
	return nil
}

func (broadcasterStopper) NeedLeaderElection() bool { return false }
