package termination_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestPlan(t *testing.T) {
	pod := func(name string, mutate ...func(*corev1.Pod)) corev1.Pod {
		p := builders.Pod(builders.PodOptions{Name: name, Phase: corev1.PodRunning})
		for _, m := range mutate {
			m(p)
		}
		return *p
	}
	critical := func(class string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.PriorityClassName = class }
	}
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	doNotEvict := func(p *corev1.Pod) { p.Annotations = map[string]string{pods.DoNotEvictAnnotationKey: "true"} }
	daemon := func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{builders.DaemonSetOwner("cni")} }
	mirror := func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	tolerant := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
	}
	tolerateAll := func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
	for _, tc := range []struct {
		name         string
		pods         []corev1.Pod
		pastDeadline bool
		evict        []string
		delete       []string
		blocking     []string
		drained      bool
	}{
		{name: "an empty node is drained", drained: true},
		{name: "pods that stay do not hold the drain", drained: true, pods: []corev1.Pod{
			pod("ds", daemon), pod("mirror", mirror), pod("done", succeeded), pod("tolerant", tolerant), pod("tolerates-everything", tolerateAll),
		}},
		{name: "others first, critical ones wait", evict: []string{"app", "web"}, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("app"), pod("proxy", critical("system-node-critical")), pod("web"), pod("ds", daemon),
		}},
		{name: "critical ones wait for the others to terminate", pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("app", terminating),
		}},
		{name: "critical ones go last", evict: []string{"dns", "proxy"}, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("proxy", critical("system-node-critical")), pod("ds", daemon),
		}},
		{name: "another priority class is not critical", evict: []string{"batch"}, pods: []corev1.Pod{
			pod("batch", critical("high-priority")), pod("dns", critical("system-cluster-critical")),
		}},
		{name: "terminating critical pods are waited for", pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical"), terminating),
		}},
		{name: "do-not-evict holds every eviction", blocking: []string{"precious"}, pods: []corev1.Pod{
			pod("app"), pod("precious", doNotEvict), pod("dns", critical("system-cluster-critical")),
		}},
		{name: "a finished do-not-evict pod does not", drained: true, pods: []corev1.Pod{pod("precious", doNotEvict, succeeded)}},
		{name: "past the deadline the rest is deleted", pastDeadline: true, drained: true, delete: []string{"app", "precious", "dns"}, pods: []corev1.Pod{
			pod("app"), pod("precious", doNotEvict), pod("dns", critical("system-cluster-critical")), pod("gone", terminating), pod("ds", daemon),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := termination.Plan(tc.pods, tc.pastDeadline)
			names := func(list []*corev1.Pod) []string {
				var out []string
				for _, p := range list {
					out = append(out, p.Name)
				}
				return out
			}
			if got := names(step.Evict); !slices.Equal(got, tc.evict) {
				t.Errorf("evict %v, want %v", got, tc.evict)
			}
			if got := names(step.Delete); !slices.Equal(got, tc.delete) {
				t.Errorf("delete %v, want %v", got, tc.delete)
			}
			if got := names(step.Blocking); !slices.Equal(got, tc.blocking) {
				t.Errorf("blocking %v, want %v", got, tc.blocking)
			}
			if step.Drained != tc.drained {
				t.Errorf("drained %v, want %v", step.Drained, tc.drained)
			}
		})
	}
}
