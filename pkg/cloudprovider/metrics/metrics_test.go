package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	cloudmetrics "karpenter.sh/karpenter/pkg/cloudprovider/metrics"
)

// sample is the value of the series of family with exactly labels; false when there is none.
func sample(t *testing.T, family string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, pair := range m.GetLabel() {
				if labels[pair.GetName()] != pair.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestDecoratedCallsAreTimedCountedAndPriced: each call of a controller through the decorated
// provider is timed under its name and method, a failed one counted by its error's type, and an
// instance type listing sets its offerings' price estimates.
func TestDecoratedCallsAreTimedCountedAndPriced(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	provider := fake.NewInstanceProvider(fake.InstanceProviderOptions{Clock: clk})
	decorated := cloudmetrics.Decorate(provider, "tester", "fake", clk)
	ctx := context.Background()
	types, err := decorated.InstanceTypes(ctx, cloudprovider.Constraints{})
	if err != nil || len(types) == 0 {
		t.Fatalf("InstanceTypes = %d types, %v", len(types), err)
	}
	provider.SetError(&cloudprovider.NotFoundError{Resource: "instance", Err: errors.New("gone")})
	if _, err := decorated.Get(ctx, "fake:///i-1"); err == nil {
		t.Fatal("Get succeeded with the error set")
	}
	call := map[string]string{"controller": "tester", "provider": "fake"}
	with := func(more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range call {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"karpenter_cloudprovider_duration_seconds", with("method", "InstanceTypes"), 1},
		{"karpenter_cloudprovider_duration_seconds", with("method", "Get"), 1},
		{"karpenter_cloudprovider_errors_total", with("method", "Get", "error", "NotFoundError"), 1},
		{"karpenter_cloudprovider_instance_type_offering_price_estimate", map[string]string{
			"instance_type": types[0].Name, "capacity_type": types[0].Offerings[0].CapacityType, "zone": types[0].Offerings[0].Zone}, types[0].Offerings[0].Price},
	} {
		if got, ok := sample(t, c.family, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (%t), want %v", c.family, c.labels, got, ok, c.want)
		}
	}
	if _, ok := sample(t, "karpenter_cloudprovider_errors_total", with("method", "InstanceTypes", "error", "")); ok {
		t.Error("the successful listing was counted as an error")
	}
}

// TestCallsAreCountedUnderTheCallingController: a provider shared by several controllers (the
// launcher's) counts each call under the controller whose context made it, and under its own
// name only when no controller is named.
func TestCallsAreCountedUnderTheCallingController(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	provider := fake.NewInstanceProvider(fake.InstanceProviderOptions{Clock: clk})
	shared := cloudmetrics.Decorate(provider, "shared-default", "fake", clk)
	for _, caller := range []string{"caller-a", "caller-b"} {
		if _, err := shared.List(cloudmetrics.WithController(context.Background(), caller)); err != nil {
			t.Fatal(err)
		}
		if _, ok := sample(t, "karpenter_cloudprovider_duration_seconds", map[string]string{"controller": caller, "method": "List", "provider": "fake"}); !ok {
			t.Errorf("no List series for %s", caller)
		}
	}
	if _, ok := sample(t, "karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "shared-default", "method": "List", "provider": "fake"}); ok {
		t.Errorf("calls of named controllers were counted under the provider's default name")
	}
	if _, err := shared.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := sample(t, "karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "shared-default", "method": "List", "provider": "fake"}); !ok {
		t.Errorf("a call of no named controller was not counted under the provider's default name")
	}
}
