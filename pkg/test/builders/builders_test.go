package builders_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/test/builders"
)

func TestGeneratedNamesAreUnique(t *testing.T) {
	pods := builders.Pods(3, builders.PodOptions{})
	seen := map[string]bool{}
	for _, pod := range pods {
		if seen[pod.Name] || pod.Namespace != "default" {
			t.Errorf("pod %s/%s: want a fresh name in namespace default", pod.Namespace, pod.Name)
		}
		seen[pod.Name] = true
	}
	if named := builders.Pod(builders.PodOptions{Name: "web", Namespace: "prod"}); named.Name != "web" || named.Namespace != "prod" {
		t.Errorf("pod %s/%s, want prod/web", named.Namespace, named.Name)
	}
}

func TestPod(t *testing.T) {
	pod := builders.Pod(builders.PodOptions{
		Requests:         builders.Resources("cpu", "500m", "memory", "1Gi"),
		NodeRequirements: []corev1.NodeSelectorRequirement{builders.In("zone", "a")},
		PodAntiAffinity:  []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, map[string]string{"app": "web"})},
		Owners:           []metav1.OwnerReference{builders.DaemonSetOwner("agent")},
		Unschedulable:    true,
	})
	requests := pod.Spec.Containers[0].Resources.Requests
	if requests.Cpu().String() != "500m" || requests.Memory().String() != "1Gi" || pod.Spec.Containers[0].Image == "" {
		t.Errorf("container %+v, want one of 500m and 1Gi with an image", pod.Spec.Containers[0])
	}
	if terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 1 || terms[0].MatchExpressions[0].Key != "zone" {
		t.Errorf("node affinity terms %+v, want one on zone", terms)
	}
	if pod.Spec.Affinity.PodAffinity != nil || len(pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("pod affinity %+v, want one anti-affinity term only", pod.Spec.Affinity)
	}
	if owner := pod.OwnerReferences[0]; owner.Kind != "DaemonSet" || owner.UID == "" || owner.Controller == nil || !*owner.Controller {
		t.Errorf("owner %+v, want the DaemonSet as controller", owner)
	}
	if pod.Status.Phase != corev1.PodPending || pod.Status.Conditions[0].Reason != corev1.PodReasonUnschedulable {
		t.Errorf("status %+v, want pending, unschedulable", pod.Status)
	}
	if plain := builders.Pod(builders.PodOptions{}); plain.Spec.Affinity != nil || plain.Status.Phase != "" {
		t.Errorf("plain pod %+v, want no affinity and no phase", plain)
	}
}

func TestNode(t *testing.T) {
	node := builders.Node(builders.NodeOptions{Allocatable: builders.Resources("cpu", "4"), Ready: corev1.ConditionTrue})
	if node.Status.Capacity.Cpu().String() != "4" || node.Status.Conditions[0].Type != corev1.NodeReady {
		t.Errorf("node status %+v, want capacity as allocatable and Ready", node.Status)
	}
	if plain := builders.Node(builders.NodeOptions{}); len(plain.Status.Conditions) != 0 {
		t.Errorf("plain node conditions %+v, want none", plain.Status.Conditions)
	}
}

func TestDeployment(t *testing.T) {
	deployment := builders.Deployment(builders.DeploymentOptions{Name: "web", Replicas: 2})
	if deployment.Spec.Selector.MatchLabels["app"] != "web" || deployment.Spec.Template.Labels["app"] != "web" || *deployment.Spec.Replicas != 2 {
		t.Errorf("deployment %+v, want 2 replicas selected by app=web", deployment.Spec)
	}
}

func TestProvisioner(t *testing.T) {
	if limited := builders.Provisioner(builders.ProvisionerOptions{Limits: builders.Resources("cpu", "10")}); limited.Spec.Limits.Resources.Cpu().String() != "10" {
		t.Errorf("limits %+v, want 10 cpu", limited.Spec.Limits)
	}
	if unlimited := builders.Provisioner(builders.ProvisionerOptions{}); unlimited.Spec.Limits != nil {
		t.Errorf("limits %+v, want none", unlimited.Spec.Limits)
	}
}
