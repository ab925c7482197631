package controllers

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// TestAControllersEventsOutliveAnothersBurst: a controller's Event reaches the API server while
// another controller's burst overflows what a broadcaster queues (1,000 Events), as a large
// batch's Planned Events did; with one broadcaster for both, the quiet controller's was dropped.
func TestAControllersEventsOutliveAnothersBurst(t *testing.T) {
	env := environment.New(t, environment.Options{})
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	recorders := &eventRecorders{mgr: mgr}
	t.Cleanup(recorders.Stop)
	noisy, quiet := recorders.For("noisy"), recorders.For("quiet")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}}
	}
	// Each about its own pod: client-go lets 25 Events through per object before it throttles.
	for i := range 3000 {
		noisy.Event(pod(fmt.Sprintf("burst-%d", i)), corev1.EventTypeNormal, "Burst", "one of a burst")
	}
	quiet.Event(pod("quiet"), corev1.EventTypeWarning, "Quiet", "not lost in another controller's burst")
	eventually.Holds(t, "the quiet controller's Event is written", func() (bool, string, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(context.Background(), events, client.InNamespace("default")); err != nil {
			return false, "", err
		}
		for _, event := range events.Items {
			if event.Reason == "Quiet" && event.Source.Component == "karpenter-quiet" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events, none from karpenter-quiet", len(events.Items)), nil
	})
}
