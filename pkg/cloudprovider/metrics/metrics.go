// Package metrics times the calls controllers make to an InstanceProvider and counts their
// errors, as upstream Karpenter's karpenter_cloudprovider_duration_seconds and
// karpenter_cloudprovider_errors_total do, and exports the offerings' prices as its
// karpenter_cloudprovider_instance_type_offering_price_estimate.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Upstream's label names.
const (
	labelController = "controller"
	labelMethod     = "method"
	labelProvider   = "provider"
	labelError      = "error"
)

var (
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "duration_seconds",
		Help:    "Duration of cloud provider method calls, by the controller, method name and provider.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{labelController, labelMethod, labelProvider})
	errorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "errors_total",
		Help: "Errors returned from cloud provider calls, by the controller, method name, provider and error type (\"\" when of no known type).",
	}, []string{labelController, labelMethod, labelProvider, labelError})
	// offeringPrice is upstream's price estimate of each offering, as the last listing of
	// instance types priced it: what cost panels join the nodes' instance types with.
	offeringPrice = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_offering_price_estimate",
		Help: "Hourly price of an offering, by instance type, capacity type and zone, as the last listing of instance types priced it.",
	}, []string{"instance_type", "capacity_type", "zone"})
)

func init() {
	crmetrics.Registry.MustRegister(duration, errorsTotal, offeringPrice)
}

type controllerKey struct{}

// WithController names the controller whose cloud calls ctx carries: a provider shared by
// several controllers (the launcher's) counts each call under its caller, as upstream labels
// them.
func WithController(ctx context.Context, controller string) context.Context {
	return context.WithValue(ctx, controllerKey{}, controller)
}

// Decorate returns instances with every cloud call timed and its errors counted, under the
// controller ctx names (WithController), or controller when it names none.
func Decorate(instances cloudprovider.InstanceProvider, controller, provider string, clk clock.PassiveClock) cloudprovider.InstanceProvider {
	return &decorated{InstanceProvider: instances, controller: controller, provider: provider, clock: clk}
}

type decorated struct {
	cloudprovider.InstanceProvider
	controller, provider string
	clock                clock.PassiveClock
}

func (d *decorated) observe(ctx context.Context, method string, start time.Time, err error) {
	controller := d.controller
	if caller, ok := ctx.Value(controllerKey{}).(string); ok {
		controller = caller
	}
	duration.WithLabelValues(controller, method, d.provider).Observe(d.clock.Since(start).Seconds())
	if err != nil {
		errorsTotal.WithLabelValues(controller, method, d.provider, errorType(err)).Inc()
	}
}

// errorType names the cloudprovider error err is, "" when none.
func errorType(err error) string {
	for _, target := range []struct {
		name    string
		matches func(error) bool
	}{
		{"InsufficientCapacityError", func(err error) bool { return errors.As(err, new(*cloudprovider.InsufficientCapacityError)) }},
		{"NotFoundError", func(err error) bool { return errors.As(err, new(*cloudprovider.NotFoundError)) }},
		{"AccessDeniedError", func(err error) bool { return errors.As(err, new(*cloudprovider.AccessDeniedError)) }},
		{"BusyError", func(err error) bool { return errors.As(err, new(*cloudprovider.BusyError)) }},
		{"OutOfBoundsError", func(err error) bool { return errors.As(err, new(*cloudprovider.OutOfBoundsError)) }},
	} {
		if target.matches(err) {
			return target.name
		}
	}
	return ""
}

func (d *decorated) InstanceTypes(ctx context.Context, constraints cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	start := d.clock.Now()
	types, err := d.InstanceProvider.InstanceTypes(ctx, constraints)
	d.observe(ctx, "InstanceTypes", start, err)
	for _, it := range types {
		for _, o := range it.Offerings {
			offeringPrice.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(o.Price)
		}
	}
	return types, err
}

func (d *decorated) Create(ctx context.Context, request cloudprovider.LaunchRequest) ([]*cloudprovider.Instance, error) {
	start := d.clock.Now()
	instances, err := d.InstanceProvider.Create(ctx, request)
	d.observe(ctx, "Create", start, err)
	return instances, err
}

func (d *decorated) Delete(ctx context.Context, providerID string) error {
	start := d.clock.Now()
	err := d.InstanceProvider.Delete(ctx, providerID)
	d.observe(ctx, "Delete", start, err)
	return err
}

func (d *decorated) Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error) {
	start := d.clock.Now()
	instance, err := d.InstanceProvider.Get(ctx, providerID)
	d.observe(ctx, "Get", start, err)
	return instance, err
}

func (d *decorated) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	start := d.clock.Now()
	instances, err := d.InstanceProvider.List(ctx)
	d.observe(ctx, "List", start, err)
	return instances, err
}
