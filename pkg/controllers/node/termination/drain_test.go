package termination_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
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
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	// The API server sets a pod's deletion timestamp to the end of its grace period.
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Hour)} }
	graceEndsIn := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(d)} }
	}
	gracePeriod := func(seconds int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
	}
	doNotEvict := func(p *corev1.Pod) { p.Annotations = map[string]string{pods.DoNotEvictAnnotationKey: "true"} }
	daemon := func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{builders.DaemonSetOwner("cni")} }
	mirror := func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	tolerant := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
	}
	tolerateAll := func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
	doNotDisrupt := func(value string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: value}
			p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
		}
	}
	for _, tc := range []struct {
		name         string
		pods         []corev1.Pod
		pastDeadline bool
		// deadlineIn, when not zero, is when the deadline comes.
		deadlineIn time.Duration
		// nodePool is a NodePool's node: karpenter.sh/disrupted keeps pods off it.
		nodePool bool
		// interrupted is a NodePool's node whose NodeClaim an interruption deleted.
		interrupted bool
		// notReady is a node whose kubelet does not report Ready, or never did.
		notReady bool
		evict    []string
		delete   []string
		blocking []string
		kept     []string
		drained  bool
		recheck  time.Duration
	}{
		{name: "an empty node is drained", drained: true},
		{name: "pods that stay do not hold the drain", drained: true, pods: []corev1.Pod{
			pod("ds", daemon), pod("mirror", mirror), pod("done", succeeded), pod("tolerant", tolerant), pod("tolerates-everything", tolerateAll),
		}},
		// A review against upstream: on a NodePool's node the cordon's toleration decided.
		{name: "on a NodePool's node a pod tolerating the disrupted taint stays, one tolerating only the cordon goes", nodePool: true,
			evict: []string{"cordon-only"}, pods: []corev1.Pod{
				pod("cordon-only", tolerant), pod("disrupted", func(p *corev1.Pod) {
					p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
				}), pod("tolerates-everything", tolerateAll),
			}},
		{name: "others first, critical ones wait", evict: []string{"app", "web"}, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("app"), pod("proxy", critical("system-node-critical")), pod("web"), pod("ds", daemon),
		}},
		{name: "critical ones wait for the others to terminate", recheck: 70 * time.Second, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("app", graceEndsIn(10*time.Second)),
		}},
		{name: "critical ones go last", evict: []string{"dns", "proxy"}, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical")), pod("proxy", critical("system-node-critical")), pod("ds", daemon),
		}},
		{name: "another priority class is not critical", evict: []string{"batch"}, pods: []corev1.Pod{
			pod("batch", critical("high-priority")), pod("dns", critical("system-cluster-critical")),
		}},
		{name: "terminating critical pods are waited for", recheck: 70 * time.Second, pods: []corev1.Pod{
			pod("dns", critical("system-cluster-critical"), graceEndsIn(10*time.Second)),
		}},
		{name: "do-not-evict holds every eviction", blocking: []string{"precious"}, pods: []corev1.Pod{
			pod("app"), pod("precious", doNotEvict), pod("dns", critical("system-cluster-critical")),
		}},
		{name: "a finished do-not-evict pod does not", drained: true, pods: []corev1.Pod{pod("precious", doNotEvict, succeeded)}},
		// Finding 34.3: a Job that tolerates everything is not evicted, but the instance would
		// take it with it.
		{name: "a do-not-evict pod that tolerates the cordon holds every eviction", blocking: []string{"job", "tolerant-job"}, pods: []corev1.Pod{
			pod("app"), pod("job", doNotEvict, tolerateAll), pod("tolerant-job", doNotEvict, tolerant),
		}},
		// Finding 34.2: no kubelet confirms a pod's end on a node that is not Ready.
		{name: "on a Ready node a terminating pod is waited for a minute past its grace period", recheck: 30 * time.Second, pods: []corev1.Pod{pod("app", graceEndsIn(-30*time.Second))}},
		// A review against upstream: a pod stuck terminating held a Ready node for ever.
		{name: "on a Ready node a pod stuck terminating is not waited for", drained: true, pods: []corev1.Pod{pod("app", terminating)}},
		// A review against upstream: do-not-disrupt pods were evicted by every drain.
		{name: "do-not-disrupt keeps its pod, not the others", nodePool: true, evict: []string{"app"}, kept: []string{"keep"}, pods: []corev1.Pod{
			pod("app"), pod("keep", doNotDisrupt("true")),
		}},
		{name: "a node with only a do-not-disrupt pod is not drained while it runs", nodePool: true, kept: []string{"keep"}, pods: []corev1.Pod{
			pod("keep", doNotDisrupt("true")), pod("dns", critical("system-cluster-critical")),
		}, evict: []string{"dns"}},
		{name: "do-not-disrupt for a duration keeps its pod until then", nodePool: true, kept: []string{"keep"}, recheck: time.Hour, pods: []corev1.Pod{pod("keep", doNotDisrupt("2h"))}},
		{name: "do-not-disrupt for a duration past keeps nothing, nor an unreadable one", nodePool: true, evict: []string{"old", "typo"}, pods: []corev1.Pod{
			pod("old", doNotDisrupt("30m")), pod("typo", doNotDisrupt("always")),
		}},
		{name: "an interrupted node's do-not-disrupt pods are evicted with the others: its instance goes anyway", interrupted: true,
			evict: []string{"app", "keep"}, pods: []corev1.Pod{pod("app"), pod("keep", doNotDisrupt("true"))}},
		{name: "a Provisioner's node: do-not-disrupt is not its annotation", evict: []string{"keep"}, pods: []corev1.Pod{pod("keep", doNotDisrupt("true"))}},
		{name: "past the deadline do-not-disrupt pods are deleted", nodePool: true, pastDeadline: true, drained: true, delete: []string{"keep"}, pods: []corev1.Pod{pod("keep", doNotDisrupt("true"))}},
		{name: "on a node that is not Ready terminating pods are waited for until their grace period ends", notReady: true, recheck: 3 * time.Second, pods: []corev1.Pod{
			pod("app", graceEndsIn(10*time.Second)), pod("web", graceEndsIn(3*time.Second)), pod("gone", terminating),
		}},
		{name: "on a node that is not Ready terminating pods are not waited for past their grace period", notReady: true, drained: true, pods: []corev1.Pod{
			pod("app", terminating), pod("dns", critical("system-cluster-critical"), graceEndsIn(0)),
		}},
		{name: "on a node that is not Ready critical pods go once the others' grace period ended", notReady: true, evict: []string{"dns"}, pods: []corev1.Pod{
			pod("app", terminating), pod("dns", critical("system-cluster-critical")),
		}},
		{name: "on a node that is not Ready pods are still evicted first", notReady: true, evict: []string{"app"}, pods: []corev1.Pod{pod("app")}},
		{name: "on a node that is not Ready do-not-evict still holds the drain", notReady: true, blocking: []string{"precious"}, pods: []corev1.Pod{
			pod("precious", doNotEvict), pod("app", terminating),
		}},
		// A review against upstream: pods were deleted only once the deadline had passed, with
		// no time left for their own grace period.
		{name: "a deadline within a pod's grace period deletes it now; the others are evicted until theirs",
			deadlineIn: 45 * time.Second, delete: []string{"slow"}, evict: []string{"app"}, recheck: 15 * time.Second, pods: []corev1.Pod{
				pod("slow", gracePeriod(60)), pod("app"),
			}},
		{name: "a do-not-evict pod is deleted too once the deadline is within its grace period", deadlineIn: 45 * time.Second, delete: []string{"precious"}, evict: []string{"app"},
			recheck: 15 * time.Second, pods: []corev1.Pod{pod("precious", doNotEvict, gracePeriod(60)), pod("app")}},
		{name: "a deadline far off deletes nothing", deadlineIn: time.Hour, evict: []string{"app"}, recheck: time.Hour - 30*time.Second, pods: []corev1.Pod{pod("app")}},
		{name: "past the deadline the rest is deleted", pastDeadline: true, drained: true, delete: []string{"app", "precious", "dns"}, pods: []corev1.Pod{
			pod("app"), pod("precious", doNotEvict), pod("dns", critical("system-cluster-critical")), pod("gone", terminating), pod("ds", daemon),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drain := termination.Drain{NodeReady: !tc.notReady, Now: now}
			if tc.nodePool || tc.interrupted {
				drain.KeepOff = corev1.Taint{Key: v1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
				drain.KeepDoNotDisrupt = !tc.interrupted
			}
			switch {
			case tc.pastDeadline:
				drain.Deadline = now.Add(-time.Second)
			case tc.deadlineIn != 0:
				drain.Deadline = now.Add(tc.deadlineIn)
			}
			step := termination.Plan(tc.pods, drain)
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
			if got := names(step.Kept); !slices.Equal(got, tc.kept) {
				t.Errorf("kept %v, want %v", got, tc.kept)
			}
			if step.Drained != tc.drained {
				t.Errorf("drained %v, want %v", step.Drained, tc.drained)
			}
			var recheck time.Duration
			if !step.Recheck.IsZero() {
				recheck = step.Recheck.Sub(now)
			}
			if recheck != tc.recheck {
				t.Errorf("recheck in %s, want %s", recheck, tc.recheck)
			}
		})
	}
}
