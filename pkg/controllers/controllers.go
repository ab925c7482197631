// Package controllers is the one place that lists every reconciler the controller binary runs.
package controllers

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
)

// Options are the settings reconcilers take from the controller's flags.
type Options struct {
	// PrometheusURI is the base URL of the Prometheus HTTP API HorizontalAutoscalers query.
	PrometheusURI string
	// CloudProvider resolves node groups and queues from a spec's type and id.
	CloudProvider cloudprovider.Factory
	// ResyncPeriod is how often every object is reconciled even without a watch event.
	ResyncPeriod time.Duration
}

// reconciler is what each controller package offers to the manager.
type reconciler interface {
	// Name identifies the controller in logs and errors.
	Name() string
	// SetupWithManager registers the controller's watches with the manager.
	SetupWithManager(mgr manager.Manager) error
}

// Register adds every controller to the manager.
func Register(mgr manager.Manager, opts Options) error {
	for _, r := range reconcilers(mgr, opts) {
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller, %w", r.Name(), err)
		}
	}
	return nil
}

// reconcilers lists every controller the binary runs.
func reconcilers(mgr manager.Manager, opts Options) []reconciler {
	return []reconciler{
		scalablenodegroup.NewController(mgr.GetClient(), opts.CloudProvider, mgr.GetEventRecorderFor("scalablenodegroup"), opts.ResyncPeriod),
	}
}
