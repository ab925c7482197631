package controllers_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
)

// Options that cannot build a controller are refused before the manager is touched.
func TestRegisterRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options controllers.Options
		want    string
	}{
		{name: "unknown controller", options: controllers.Options{Clock: clock.RealClock{}, Enabled: []string{"provisioner"}}, want: `no controller is named "provisioner"`},
		{name: "no clock", options: controllers.Options{}, want: "without a clock"},
		{name: "termination without instances", options: controllers.Options{Clock: clock.RealClock{}, Enabled: []string{"nodetermination"}},
			want: "the nodetermination controller needs an instance provider"},
		{name: "interruption without a queue", options: controllers.Options{Clock: clock.RealClock{}, InstanceProvider: fake.NewInstanceProvider(fake.InstanceProviderOptions{}), Enabled: []string{"interruption"}},
			want: "the interruption controller needs an interruption queue"},
		{name: "nodeoverlay without its feature gate", options: controllers.Options{Clock: clock.RealClock{}, InstanceProvider: fake.NewInstanceProvider(fake.InstanceProviderOptions{}), Enabled: []string{"nodeoverlay"}},
			want: "the nodeoverlay controller runs only with the NodeOverlay feature gate"},
		{name: "nodeoverlay without instances", options: controllers.Options{Clock: clock.RealClock{}, NodeOverlay: true, Enabled: []string{"nodeoverlay"}},
			want: "the nodeoverlay controller needs an instance provider"},
		{name: "an interruption queue without instances", options: controllers.Options{Clock: clock.RealClock{}, InterruptionQueue: fake.NewInterruptionQueue()},
			want: "the interruption controller has a queue but no instance provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controllers.Register(context.Background(), nil, tc.options)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Register: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
