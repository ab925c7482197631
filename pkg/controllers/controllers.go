// Package controllers is the one place that lists every reconciler the controller binary runs.
package controllers

import (
	"cmp"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/controllers/metricsproducer"
	"karpenter.sh/karpenter/pkg/controllers/scalablenodegroup"
	"karpenter.sh/karpenter/pkg/metrics/clients"
	"karpenter.sh/karpenter/pkg/metrics/producers"
)

// Options are the settings reconcilers take from the controller's flags.
type Options struct {
	// PrometheusURI is the base URL of the Prometheus HTTP API HorizontalAutoscalers query.
	PrometheusURI string
	// PrometheusBearerTokenFile, when set, is sent as a bearer token, re-read on every query.
	PrometheusBearerTokenFile string
	// PrometheusCAFile is a PEM bundle verifying Prometheus instead of the system roots.
	PrometheusCAFile string
	// PrometheusInsecureSkipVerify disables verification of Prometheus's certificate.
	PrometheusInsecureSkipVerify bool
	// PrometheusSigV4 signs queries for Amazon Managed Service for Prometheus with the default
	// AWS credential chain, in PrometheusSigV4Region (or the SDK's default region when empty).
	PrometheusSigV4       bool
	PrometheusSigV4Region string
	// HorizontalAutoscalerPeriod is how often each HorizontalAutoscaler is evaluated;
	// ResyncPeriod when zero.
	HorizontalAutoscalerPeriod time.Duration
	// HorizontalAutoscalerTolerance is the fraction around a metric's target within which
	// replicas do not change, within [0, 1); the flag defaults to 0.1.
	HorizontalAutoscalerTolerance float64
	// MetricsProducerPeriod is how often each MetricsProducer is recomputed without a watch
	// event; ResyncPeriod when zero.
	MetricsProducerPeriod time.Duration
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
		horizontalautoscaler.NewController(horizontalautoscaler.Options{
			Prometheus: prometheusOptions(opts),
			Period:     cmp.Or(opts.HorizontalAutoscalerPeriod, opts.ResyncPeriod),
			Tolerance:  &opts.HorizontalAutoscalerTolerance,
		}),
		scalablenodegroup.NewController(mgr.GetClient(), opts.CloudProvider, mgr.GetEventRecorderFor("scalablenodegroup"), opts.ResyncPeriod),
		metricsproducer.NewController(mgr.GetClient(), producers.NewKinds(mgr.GetClient(), opts.CloudProvider, clock.RealClock{}),
			mgr.GetEventRecorderFor("metricsproducer"), clock.RealClock{}, cmp.Or(opts.MetricsProducerPeriod, opts.ResyncPeriod)),
	}
}

func prometheusOptions(opts Options) clients.PrometheusOptions {
	p := clients.PrometheusOptions{
		URI:                opts.PrometheusURI,
		BearerTokenFile:    opts.PrometheusBearerTokenFile,
		CAFile:             opts.PrometheusCAFile,
		InsecureSkipVerify: opts.PrometheusInsecureSkipVerify,
	}
	if opts.PrometheusSigV4 {
		p.SigV4 = &clients.SigV4Options{Region: opts.PrometheusSigV4Region}
	}
	return p
}
