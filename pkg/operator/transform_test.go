package operator_test

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// lived gives a pod everything a real one carries that no controller reads: what the API
// server, admission, the kubelet and kubectl add.
func lived(pod *corev1.Pod) *corev1.Pod {
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"v1","kind":"Pod"}`
	for _, containers := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range containers {
			c := &containers[i]
			c.Image = "registry.example.com/app:1.2.3"
			c.Command, c.Args, c.WorkingDir = []string{"/app"}, []string{"--serve"}, "/srv"
			c.Env = []corev1.EnvVar{{Name: "MODE", Value: "production"}}
			c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}}
			probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe, probe, probe
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
			c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", corev1.TerminationMessageReadFile, corev1.PullIfNotPresent
			c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
		}
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}}
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"svc.cluster.local"}}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		}}}},
		corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "credentials"}}},
		corev1.Volume{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	pod.Status.Message = "the kubelet's words"
	pod.Status.PodIP, pod.Status.PodIPs = "10.0.0.7", []corev1.PodIP{{IP: "10.0.0.7"}}
	pod.Status.HostIP, pod.Status.HostIPs = "192.168.0.1", []corev1.HostIP{{IP: "192.168.0.1"}}
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: "containers with unready status: [app]"},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example.com/app:1.2.3", ImageID: "sha256:0123", ContainerID: "containerd://4567"}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", Image: "registry.example.com/init:1"}}
	return pod
}

// pending are pods of every constraint the scheduler reads, as a real cluster would hold them.
func pending() []*corev1.Pod {
	zone := func(z string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}
	}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	out := []*corev1.Pod{
		builders.Pod(builders.PodOptions{Name: "big", Unschedulable: true, Requests: builders.Resources("cpu", "3", "memory", "6Gi")}),
		builders.Pod(builders.PodOptions{Name: "zonal", Unschedulable: true, Requests: builders.Resources("cpu", "1"), NodeRequirements: []corev1.NodeSelectorRequirement{zone("us-west-2b")}}),
		builders.Pod(builders.PodOptions{Name: "tolerates", Unschedulable: true, Requests: builders.Resources("cpu", "500m"),
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}),
		builders.Pod(builders.PodOptions{Name: "alone", Unschedulable: true, Labels: map[string]string{"app": "alone"}, Requests: builders.Resources("cpu", "100m"),
			PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "alone"})}}),
		builders.Pod(builders.PodOptions{Name: "sidecar", Unschedulable: true, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "1")}}},
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "2", "memory", "1Gi")}}}}),
		builders.Pod(builders.PodOptions{Name: "port", Unschedulable: true, Containers: []corev1.Container{{Name: "app",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}, Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "100m")}}}}),
		builders.Pod(builders.PodOptions{Name: "do-not-evict", Unschedulable: true, Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"},
			Owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "1", Controller: ptr.To(true)}}, Requests: builders.Resources("memory", "2Gi")}),
	}
	for i := range 3 {
		out = append(out, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("spread-%d", i), Unschedulable: true, Labels: map[string]string{"app": "spread"},
			Requests: builders.Resources("cpu", "200m"), TopologySpread: spread}))
	}
	overhead := builders.Pod(builders.PodOptions{Name: "overhead", Unschedulable: true, Requests: builders.Resources("cpu", "1")})
	overhead.Spec.Overhead = builders.Resources("cpu", "250m", "memory", "120Mi")
	overhead.Spec.PriorityClassName, overhead.Spec.Priority = "high", ptr.To[int32](1000)
	ebs := builders.Pod(builders.PodOptions{Name: "ebs", Unschedulable: true, Requests: builders.Resources("cpu", "100m")})
	ebs.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"}}}}
	claim := builders.Pod(builders.PodOptions{Name: "claim", Unschedulable: true, Requests: builders.Resources("cpu", "100m")})
	claim.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	return append(out, overhead, ebs, claim)
}

// claimed are the claim pod's bound claim and its volume, in us-west-2c.
func claimed() ([]corev1.PersistentVolumeClaim, []corev1.PersistentVolume) {
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	volume := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2c"}}}}}}}}}
	return []corev1.PersistentVolumeClaim{claim}, []corev1.PersistentVolume{volume}
}

// describe renders a plan's every decision: which pods go where, on what.
func describe(plan provisioning.Plan) string {
	if plan.Results == nil {
		return "nothing pending"
	}
	var b strings.Builder
	for _, n := range plan.Results.NewNodes {
		fmt.Fprintf(&b, "new %s of %s %v %v price %g:", n.Hostname, n.Pool.Name, n.Requirements, n.Taints, n.Price)
		for _, it := range n.InstanceTypes {
			fmt.Fprintf(&b, " %s", it.Name)
		}
		for _, p := range n.Pods {
			fmt.Fprintf(&b, " pod %s", p.Name)
		}
		b.WriteString("\n")
	}
	for _, binding := range plan.Results.Bindings {
		fmt.Fprintf(&b, "bind %s to %s\n", binding.Pod.Name, binding.NodeName)
	}
	for _, e := range plan.Results.Unschedulable {
		fmt.Fprintf(&b, "unschedulable %s: %s\n", e.Pod.Name, e.Reason)
	}
	return b.String()
}

// snapshot is a cluster of one Ready, tainted node running a few pods, with the pods pending.
func snapshot(trim bool) *state.Snapshot {
	node := builders.Node(builders.NodeOptions{Name: "existing", Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "20"),
		Labels: map[string]string{corev1.LabelTopologyZone: "us-west-2a", corev1.LabelHostname: "existing", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example.com/app:1.2.3"}, SizeBytes: 1 << 20}}
	all := pending()
	for i := range 3 {
		all = append(all, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("running-%d", i), NodeName: "existing", Phase: corev1.PodRunning,
			Labels: map[string]string{"app": "spread"}, Requests: builders.Resources("cpu", "500m", "memory", "1Gi")}))
	}
	s := &state.Snapshot{InstanceTypes: map[string]*cloudprovider.InstanceType{}}
	s.Claims, s.Volumes = claimed()
	for _, pod := range all {
		lived(pod)
		if trim {
			if _, err := pods.TrimForCache(pod); err != nil {
				panic(err)
			}
		}
		s.Pods = append(s.Pods, *pod)
	}
	if trim {
		if _, err := nodes.TrimForCache(node); err != nil {
			panic(err)
		}
	}
	s.Nodes = []corev1.Node{*node}
	for _, it := range fake.DefaultInstanceTypes() {
		s.InstanceTypes[it.Name] = it
	}
	return s
}

// TestTrimForCacheKeepsWhatIsRead: a plan on trimmed pods and nodes is the plan on whole ones,
// and every pod predicate answers the same.
func TestTrimForCacheKeepsWhatIsRead(t *testing.T) {
	provisioners := []scheduling.Pool{provisioning.Limited(builders.Provisioner(builders.ProvisionerOptions{Name: "default"}), fake.DefaultInstanceTypes(), nil)}
	whole, trimmed := snapshot(false), snapshot(true)
	// The trimmed pods share parts with every other cached pod alike (pods.TrimForCache): what
	// reads them must leave them as they were.
	sharedBefore := encodePods(t, trimmed.Pods)
	defer func() {
		if sharedAfter := encodePods(t, trimmed.Pods); !slices.Equal(sharedBefore, sharedAfter) {
			t.Errorf("planning or a predicate changed a trimmed pod, whose parts other cached pods share")
		}
	}()
	want, got := describe(provisioning.PlanPending(whole, provisioners, nil)), describe(provisioning.PlanPending(trimmed, provisioners, nil))
	if want != got {
		t.Errorf("the plan on trimmed pods differs:\n%s\nwant the plan on whole pods:\n%s", got, want)
	}
	if !strings.Contains(want, "new ") || !strings.Contains(want, "bind ") {
		t.Errorf("the plan should both launch and bind, to compare both:\n%s", want)
	}
	for i := range whole.Pods {
		w, g := &whole.Pods[i], &trimmed.Pods[i]
		for name, predicate := range map[string]func(*corev1.Pod) bool{
			"IsUnschedulable": pods.IsUnschedulable, "IsProvisionable": pods.IsProvisionable, "IsTerminal": pods.IsTerminal,
			"IsOwnedByDaemonSet": pods.IsOwnedByDaemonSet, "IsMirror": pods.IsMirror,
			"IsMovable": pods.IsMovable, "HoldsNode": pods.HoldsNode,
			"IsEvictedByDrain": func(p *corev1.Pod) bool { return pods.IsEvictedByDrain(p, pods.CordonTaint) },
		} {
			if predicate(w) != predicate(g) {
				t.Errorf("%s(%s) = %v trimmed, %v whole", name, w.Name, predicate(g), predicate(w))
			}
		}
		if !equality.Semantic.DeepEqual(pods.Requests(w), pods.Requests(g)) {
			t.Errorf("Requests(%s) = %v trimmed, %v whole", w.Name, pods.Requests(g), pods.Requests(w))
		}
	}
}

func encodePods(t *testing.T, cached []corev1.Pod) []string {
	t.Helper()
	var encoded []string
	for i := range cached {
		data, err := cached[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, string(data))
	}
	return encoded
}

func TestTrimForCacheDrops(t *testing.T) {
	pod := lived(pending()[0])
	if _, err := pods.TrimForCache(pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	for what, dropped := range map[string]bool{
		"managed fields":         pod.ManagedFields == nil,
		"last-applied":           pod.Annotations[corev1.LastAppliedConfigAnnotation] == "",
		"image":                  c.Image == "",
		"command and env":        c.Command == nil && c.Env == nil && c.EnvFrom == nil,
		"probes":                 c.LivenessProbe == nil && c.ReadinessProbe == nil && c.StartupProbe == nil,
		"ephemeral containers":   pod.Spec.EphemeralContainers == nil,
		"container statuses":     pod.Status.ContainerStatuses == nil && pod.Status.InitContainerStatuses == nil,
		"other conditions":       len(pod.Status.Conditions) == 2 && pod.Status.Conditions[0].Type == corev1.PodScheduled && pod.Status.Conditions[1].Type == corev1.PodReady && pod.Status.Conditions[1].Message == "",
		"the projected contents": pod.Spec.Volumes[0].Projected != nil && pod.Spec.Volumes[0].Projected.Sources == nil,
		"the kept emptyDir":      pod.Spec.Volumes[4].EmptyDir != nil,
	} {
		if !dropped {
			t.Errorf("%s: not as expected after the transform: %+v", what, pod)
		}
	}
	once := pod.DeepCopy()
	if _, err := pods.TrimForCache(pod); err != nil || !reflect.DeepEqual(pod, once) {
		t.Errorf("trimming twice changed the pod (%v)", err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/gone"}
	if got, err := pods.TrimForCache(tombstone); err != nil || got != tombstone {
		t.Errorf("a tombstone became %v (%v), want it unchanged", got, err)
	}
}

// kwokPod is a pod of the scale harness as the cache receives it: a pause container bound to a
// kwok node, with what the API server's defaults and kwok's status add.
func kwokPod() *corev1.Pod {
	pod := builders.Pod(builders.PodOptions{Name: "filler-00000", Labels: map[string]string{"app": "filler"}, NodeName: "scale-node-0000",
		Phase: corev1.PodRunning, Requests: builders.Resources("cpu", "10m", "memory", "16Mi")})
	pod.UID, pod.ResourceVersion, pod.Generation = "0a2eae1c-00c4-45bf-8d69-b4f4a73337d5", "1708", 1
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)}}}
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", corev1.TerminationMessageReadFile, corev1.PullIfNotPresent
	pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, pod.Spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
	pod.Spec.TerminationGracePeriodSeconds, pod.Spec.Priority, pod.Spec.EnableServiceLinks = ptr.To[int64](30), ptr.To[int32](0), ptr.To(true)
	pod.Spec.PreemptionPolicy, pod.Spec.SecurityContext = ptr.To(corev1.PreemptLowerPriority), &corev1.PodSecurityContext{}
	pod.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	now := metav1.Now()
	for _, condition := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: condition, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.PodIP, pod.Status.PodIPs, pod.Status.StartTime, pod.Status.QOSClass = "10.0.0.16", []corev1.PodIP{{IP: "10.0.0.16"}}, &now, corev1.PodQOSBurstable
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: builders.PauseImage,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	return pod
}

// settledHeapBytes is the heap's live bytes after a collection whose cleanups have all run:
// pods.TrimForCache's table drops an entry in a cleanup once no pod holds its value, so a
// measurement counts the entries of the pods in hand, not those of pods already collected.
// (Each shared value also has a weak handle and a cleanup record outside the heap, about 60
// bytes, not counted.)
func settledHeapBytes() uint64 {
	samples := []metrics.Sample{{Name: "/gc/cleanups/queued:cleanups"}, {Name: "/gc/cleanups/executed:cleanups"}}
	runtime.GC()
	for range 1000 {
		if metrics.Read(samples); samples[0].Value.Uint64() == samples[1].Value.Uint64() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// BenchmarkCachedPod reports what a cached pod holds on the heap (B/pod), whole (managed
// fields stripped, as every kind's are) and trimmed: pods decoded from protobuf, as the
// informers decode them, then measured after a garbage collection. The replicas of one
// workload share their trimmed containers and tolerations; "kwok-distinct" gives each pod its
// own cpu request, so that nothing of its containers is shared.
//
//	go test ./pkg/operator -run '^$' -bench CachedPod -benchtime 5x
func BenchmarkCachedPod(b *testing.B) {
	const n = 1000
	for _, shape := range []struct {
		name string
		pod  func(i int) *corev1.Pod
	}{
		{name: "kwok", pod: func(int) *corev1.Pod { return kwokPod() }},
		{name: "kwok-distinct", pod: func(i int) *corev1.Pod {
			pod := kwokPod()
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(10+i), resource.DecimalSI)
			return pod
		}},
		{name: "lived", pod: func(int) *corev1.Pod { return lived(pending()[0]) }},
	} {
		encoded := make([][]byte, n)
		for i := range encoded {
			data, err := shape.pod(i).Marshal()
			if err != nil {
				b.Fatal(err)
			}
			encoded[i] = data
		}
		for _, trim := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/trimmed=%t", shape.name, trim), func(b *testing.B) {
				var perPod float64
				for b.Loop() {
					before := settledHeapBytes()
					cached := make([]*corev1.Pod, n)
					for i := range cached {
						pod := &corev1.Pod{}
						if err := pod.Unmarshal(encoded[i]); err != nil {
							b.Fatal(err)
						}
						pod.ManagedFields = nil
						if trim {
							if _, err := pods.TrimForCache(pod); err != nil {
								b.Fatal(err)
							}
						}
						cached[i] = pod
					}
					perPod = float64(settledHeapBytes()-before) / n
					runtime.KeepAlive(cached)
				}
				b.ReportMetric(perPod, "B/pod")
			})
		}
	}
}
