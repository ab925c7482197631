package expiration_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/expiration"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// TestAnExpiredNodesPodWithAVolumeGetsAReplacementInItsZone (issue 35: the scheduler's input is
// built in one place): the pod of an expired node mounts a claim whose volume is in the node's
// zone. Its replacement is launched there first; the pod is not "stranded" and its node deleted
// without a replacement, as when expiry gave the scheduler no volumes.
func TestAnExpiredNodesPodWithAVolumeGetsAReplacementInItsZone(t *testing.T) {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "expiring"})
	p.Spec.TTLSecondsUntilExpired = ptr.To[int64](3600)
	old := node("old", "expiring", 2*time.Hour)
	pod := builders.Pod(builders.PodOptions{Name: "db", NodeName: "old", Requests: builders.Resources("cpu", "1")})
	pod.Status.Phase = corev1.PodRunning
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	old.Pods = []*corev1.Pod{pod}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: pod.Namespace},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "data"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	volume := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelTopologyZone, "us-west-2a")},
		}}}},
	}}
	decisions := expiration.Decide(consolidation.Snapshot{Nodes: []scheduling.Node{old},
		Provisioners: []consolidation.Provisioner{{Provisioner: p, InstanceTypes: fake.DefaultInstanceTypes()}},
		Question:     state.Question{Claims: []*corev1.PersistentVolumeClaim{claim}, Volumes: []*corev1.PersistentVolume{volume}}, Now: now})
	if len(decisions) != 1 || decisions[0].Delete || len(decisions[0].Launch) != 1 {
		var stranded []string
		for _, d := range decisions {
			for _, u := range d.Stranded {
				stranded = append(stranded, u.Pod.Name+": "+u.Reason)
			}
		}
		t.Fatalf("%d decisions, delete %t, stranded %v; want the replacement launched first", len(decisions), len(decisions) > 0 && decisions[0].Delete, stranded)
	}
	for _, r := range decisions[0].Launch[0].Requirements {
		if r.Key == corev1.LabelTopologyZone && (len(r.Values) != 1 || r.Values[0] != "us-west-2a") {
			t.Errorf("the replacement may launch in %v, want only the volume's zone us-west-2a", r.Values)
		}
	}
}
