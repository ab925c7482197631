// Package operatortest runs Karpenter's operator against a test environment the way the
// controller binary runs it: pkg/operator builds the manager and registers the controllers
// of pkg/controllers, so the tests exercise the production wiring.
package operatortest

import (
	"bytes"
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/operator"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/kubelet"
)

// Options choose what the operator runs and with which fakes.
type Options struct {
	// Controllers configure the reconcilers as the flags do, plus Enabled (which run: every one
	// when empty), Clock (real when nil) and CloudProvider (AWS through the SDK's
	// configuration chain when nil). PrometheusURI defaults to the environment's Prometheus.
	Controllers controllers.Options
	// Config, when set, replaces the environment's, e.g. to run with another identity.
	Config *rest.Config
	// Namespaces, when set, limits the operator's cache to them.
	Namespaces []string
	// CompleteNode, when set, completes each Node the fake cloud's kubelets register, e.g. for
	// kwok to run it. The kubelets run when a controller that launches does.
	CompleteNode func(*corev1.Node)
}

// launches is whether a controller that launches instances is enabled: their kubelets are
// wanted then, and only then, so that a test of instances without a node keeps them so.
func launches(enabled []string) bool {
	return len(enabled) == 0 || slices.ContainsFunc(enabled, func(name string) bool {
		return name == provisioning.Name || name == disruption.Name
	})
}

// stuckAfter is how long a stop may take before the goroutines are dumped, within the manager's
// 30 s grace for its runnables.
const stuckAfter = 20 * time.Second

// Start runs the operator until the test ends or stop is called; stop waits for the manager
// to return and fails the test if it returned an error. No metrics or probe port is opened
// and there is no leader election, so tests may run several operators, one after another or
// side by side.
func Start(t testing.TB, env *environment.Environment, options Options) (stop func()) {
	t.Helper()
	restConfig := options.Config
	if restConfig == nil {
		restConfig = env.Config
	}
	if options.Controllers.PrometheusURI == "" && env.Prometheus != nil {
		options.Controllers.PrometheusURI = env.Prometheus.URL
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := operator.New(ctx, restConfig, operator.Options{
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		Namespaces:             options.Namespaces,
		// Controller names are process-wide: every test, and every -count, builds them again.
		SkipNameValidation: true,
		Controllers:        options.Controllers,
	})
	if err != nil {
		cancel()
		t.Fatalf("building the operator, %v", err)
	}
	if instances, ok := options.Controllers.InstanceProvider.(*fake.InstanceProvider); ok && launches(options.Controllers.Enabled) {
		// Karpenter never creates a Node: the kubelets of the instances it launches do.
		kubelet.Start(t, &kubelet.Kubelets{Client: env.Client, Instances: instances, Complete: options.CompleteNode})
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			// The manager gives its runnables 30 s: a goroutine dump before that says which
			// one did not return, should the stop fail.
			var stuck bytes.Buffer
			var err error
			select {
			case err = <-done:
			case <-time.After(stuckAfter):
				_ = pprof.Lookup("goroutine").WriteTo(&stuck, 1)
				err = <-done
			}
			if err != nil {
				t.Errorf("operator stopped with %v", err)
				if stuck.Len() > 0 {
					t.Logf("goroutines %s after the stop began:\n%s", stuckAfter, stuck.String())
				}
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
