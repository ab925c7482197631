package controllers

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// eventRecorders give each controller an Event broadcaster of its own, its source named
// karpenter-<controller>. client-go's broadcaster queues up to 1,000 Events and drops what comes
// beyond while its one writer posts them one at a time; shared by every controller (the
// manager's), a burst of one controller's Events dropped the others' as well as its own: a
// quarter of a 500-pod batch's Planned Events never reached their pods, and a Provisioner's
// Warning in the same seconds could have gone the same way. They write through one client, so
// under one client-side rate limit, and log each Event at V(1) as the manager's recorder does.
type eventRecorders struct {
	mgr manager.Manager

	mu           sync.Mutex
	events       typedcorev1.EventInterface
	byController map[string]record.EventRecorder
	broadcasters []record.EventBroadcaster
}

// For is the controller's recorder, the same for every call with its name.
func (r *eventRecorders) For(name string) record.EventRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	if recorder, ok := r.byController[name]; ok {
		return recorder
	}
	source := "karpenter-" + name
	if r.events == nil {
		client, err := typedcorev1.NewForConfigAndClient(r.mgr.GetConfig(), r.mgr.GetHTTPClient())
		if err != nil {
			// The manager built its own clients from the same configuration and HTTP client.
			log.Log.Error(err, "building the event client; the controller's Events share the manager's broadcaster", "controller", name)
			return r.mgr.GetEventRecorderFor(source)
		}
		r.events = client.Events("")
	}
	logger := log.Log.WithName("events").WithValues("source", source)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.events})
	broadcaster.StartLogging(func(format string, args ...any) { logger.V(1).Info(fmt.Sprintf(format, args...)) })
	recorder := broadcaster.NewRecorder(r.mgr.GetScheme(), corev1.EventSource{Component: source})
	if r.byController == nil {
		r.byController = map[string]record.EventRecorder{}
	}
	r.byController[name] = recorder
	r.broadcasters = append(r.broadcasters, broadcaster)
	return recorder
}

// Stop shuts every broadcaster down, once the manager has stopped the controllers that record
// through them (as the manager stops its own recorder last).
func (r *eventRecorders) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, broadcaster := range r.broadcasters {
		broadcaster.Shutdown()
	}
	r.broadcasters, r.byController = nil, nil
}
