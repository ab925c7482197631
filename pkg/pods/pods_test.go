package pods

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// unschedulablePod is a pod the scheduler gave up on; mutate changes it into each case.
func unschedulablePod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

func TestIsUnschedulable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{"unschedulable", nil, true},
		{"bound", func(p *corev1.Pod) { p.Spec.NodeName = "n" }, false},
		{"not tried yet", func(p *corev1.Pod) { p.Status.Conditions = nil }, false},
		{"scheduling gated", func(p *corev1.Pod) { p.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated }, false},
		{"scheduled", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue }, false},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, false},
		{"nominated to a node by preemption", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" }, false},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsUnschedulable(unschedulablePod(tc.mutate)); got != tc.want {
				t.Errorf("IsUnschedulable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsProvisionable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{"unschedulable", nil, true},
		{"bound", func(p *corev1.Pod) { p.Spec.NodeName = "n" }, false},
		{"a DaemonSet's", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
		}, false},
		{"a ReplicaSet's", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
		}, true},
		{"a mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, false},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsProvisionable(unschedulablePod(tc.mutate)); got != tc.want {
				t.Errorf("IsProvisionable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	for _, tc := range []struct {
		phase corev1.PodPhase
		want  bool
	}{
		{"", false},
		{corev1.PodPending, false},
		{corev1.PodRunning, false},
		{corev1.PodUnknown, false},
		{corev1.PodSucceeded, true},
		{corev1.PodFailed, true},
	} {
		if got := IsTerminal(&corev1.Pod{Status: corev1.PodStatus{Phase: tc.phase}}); got != tc.want {
			t.Errorf("IsTerminal(phase %q) = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

func TestIsOwnedByDaemonSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{"no owner", nil, false},
		{"controlled by a DaemonSet", []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}, true},
		{"owned but not controlled by a DaemonSet", []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}}, false},
		{"controlled by a ReplicaSet", []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}}, false},
		{"DaemonSet among other owners", []metav1.OwnerReference{{Kind: "ConfigMap", Name: "c"}, {Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}, true},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.owners}}
		if got := IsOwnedByDaemonSet(pod); got != tc.want {
			t.Errorf("%s: IsOwnedByDaemonSet = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name               string
		annotations        map[string]string
		mirror, doNotEvict bool
	}{
		{name: "none"},
		{name: "mirror of a static pod", annotations: map[string]string{corev1.MirrorPodAnnotationKey: "hash"}, mirror: true},
		{name: "mirror annotation without a value", annotations: map[string]string{corev1.MirrorPodAnnotationKey: ""}, mirror: true},
		{name: "do-not-evict", annotations: map[string]string{DoNotEvictAnnotationKey: "true"}, doNotEvict: true},
		{name: "do-not-evict false", annotations: map[string]string{DoNotEvictAnnotationKey: "false"}},
		{name: "do-not-evict other than true", annotations: map[string]string{DoNotEvictAnnotationKey: "yes"}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
		if got := IsMirror(pod); got != tc.mirror {
			t.Errorf("%s: IsMirror = %v, want %v", tc.name, got, tc.mirror)
		}
		if got := HoldsNode(pod); got != tc.doNotEvict {
			t.Errorf("%s: HoldsNode = %v, want %v", tc.name, got, tc.doNotEvict)
		}
	}
}

// TestWhatANodesRemovalAsksOfItsPods is the one answer every loop that removes a node gets:
// which pods need room elsewhere, which hold the node, which the drain evicts.
func TestWhatANodesRemovalAsksOfItsPods(t *testing.T) {
	doNotEvict := func(p *corev1.Pod) { p.Annotations = map[string]string{DoNotEvictAnnotationKey: "true"} }
	tolerateAll := func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
	tolerateCordon := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	tolerateOther := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	}
	daemon := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
	}
	mirror := func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	for _, tc := range []struct {
		name                   string
		mutate                 []func(*corev1.Pod)
		movable, holds, evicts bool
	}{
		{name: "a workload's pod", movable: true, evicts: true},
		{name: "one that tolerates another taint", mutate: []func(*corev1.Pod){tolerateOther}, movable: true, evicts: true},
		{name: "one that tolerates the cordon", mutate: []func(*corev1.Pod){tolerateCordon}, movable: true},
		{name: "one that tolerates every taint", mutate: []func(*corev1.Pod){tolerateAll}, movable: true},
		{name: "do-not-evict", mutate: []func(*corev1.Pod){doNotEvict}, movable: true, holds: true, evicts: true},
		{name: "do-not-evict, tolerating every taint", mutate: []func(*corev1.Pod){doNotEvict, tolerateAll}, movable: true, holds: true},
		{name: "do-not-evict, being deleted", mutate: []func(*corev1.Pod){doNotEvict, deleting}, movable: true, evicts: true},
		{name: "do-not-evict, finished", mutate: []func(*corev1.Pod){doNotEvict, finished}},
		{name: "do-not-evict, a DaemonSet's", mutate: []func(*corev1.Pod){doNotEvict, daemon}},
		{name: "do-not-evict, a mirror", mutate: []func(*corev1.Pod){doNotEvict, mirror}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, m := range tc.mutate {
			m(pod)
		}
		if got := IsMovable(pod); got != tc.movable {
			t.Errorf("%s: IsMovable = %v, want %v", tc.name, got, tc.movable)
		}
		if got := HoldsNode(pod); got != tc.holds {
			t.Errorf("%s: HoldsNode = %v, want %v", tc.name, got, tc.holds)
		}
		if got := IsEvictedByDrain(pod, CordonTaint); got != tc.evicts {
			t.Errorf("%s: IsEvictedByDrain = %v, want %v", tc.name, got, tc.evicts)
		}
		// A NodePool's node keeps pods off with karpenter.sh/disrupted: one that tolerates only
		// the cordon is evicted there.
		disrupted := corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}
		if got, want := IsEvictedByDrain(pod, disrupted), tc.evicts || tc.name == "one that tolerates the cordon"; got != want {
			t.Errorf("%s: IsEvictedByDrain on a NodePool's node = %v, want %v", tc.name, got, want)
		}
	}
}

func TestForDaemonSetStandsForItsPod(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"}}
	ds.Spec.Template.Labels = map[string]string{"app": "agent"}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "agent"}}
	pod := ForDaemonSet(ds)
	if pod.Name != "agent" || pod.Namespace != "kube-system" || pod.Labels["app"] != "agent" || len(pod.Spec.Containers) != 1 {
		t.Errorf("ForDaemonSet = %+v", pod)
	}
	pod.Labels["app"] = "changed"
	if ds.Spec.Template.Labels["app"] != "agent" {
		t.Error("the stand-in shares its template's labels")
	}
}

func TestClaimNames(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
	}}}
	if got, want := ClaimNames(pod), []string{"data-db-0", "db-0-scratch"}; !slices.Equal(got, want) {
		t.Errorf("ClaimNames = %v, want %v", got, want)
	}
	if got := ClaimNames(&corev1.Pod{}); got != nil {
		t.Errorf("ClaimNames of a pod without volumes = %v, want none", got)
	}
}

func TestHostPorts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 1}}},
			{Name: "sidecar", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 2, HostPort: 2}}},
		},
		Containers: []corev1.Container{
			{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 3, HostPort: 3}, {ContainerPort: 4}}},
		},
	}}
	var got []int32
	for _, p := range HostPorts(pod) {
		got = append(got, p.HostPort)
	}
	// The init container that runs to completion binds nothing for the pod's life; a port
	// without a host port binds nothing on the node.
	if want := []int32{2, 3}; !slices.Equal(got, want) {
		t.Errorf("host ports %v, want %v", got, want)
	}
	// On the host's network, a DaemonSet's template declares only container ports.
	pod.Spec.HostNetwork = true
	got = nil
	for _, p := range HostPorts(pod) {
		got = append(got, p.HostPort)
	}
	if want := []int32{2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("host ports on the host's network %v, want %v", got, want)
	}
}

func TestNominatedNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"nominated", func(*corev1.Pod) {}, "n"},
		{"not nominated", func(p *corev1.Pod) { p.Status.NominatedNodeName = "" }, ""},
		{"bound", func(p *corev1.Pod) { p.Spec.NodeName = "m" }, ""},
		{"being deleted", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, ""},
		{"finished", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, ""},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n"}}
		tc.mutate(pod)
		if got := NominatedNode(pod); got != tc.want {
			t.Errorf("%s: NominatedNode = %q, want %q", tc.name, got, tc.want)
		}
		var want []string
		if tc.want != "" {
			want = []string{tc.want}
		}
		if got := NominatedNodeOf(pod); !slices.Equal(got, want) {
			t.Errorf("%s: NominatedNodeOf = %v, want %v", tc.name, got, want)
		}
	}
}

func TestUnbound(t *testing.T) {
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"}}
	got := Unbound([]*corev1.Pod{bound})
	if len(got) != 1 || got[0].Spec.NodeName != "" || got[0].Name != "p" || bound.Spec.NodeName != "n" {
		t.Errorf("unbound %+v (from %+v), want a copy bound to no node, the pod itself unchanged", got, bound)
	}
}
