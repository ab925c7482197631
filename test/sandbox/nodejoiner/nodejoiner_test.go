package nodejoiner

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/awsemulator"
)

type instances []awsemulator.Instance

func (i instances) Instances(string) []awsemulator.Instance { return i }

func instance(id, state string) awsemulator.Instance {
	return awsemulator.Instance{
		InstanceID: id, ProviderID: "aws:///us-west-2b/" + id, AutoScalingGroupName: "workers",
		InstanceType: "m5.large", AvailabilityZone: "us-west-2b", LifecycleState: state,
		Labels:   map[string]string{"karpenter.sh/node-group": "workers"},
		Taints:   []awsemulator.Taint{{Key: "dedicated", Value: "queue", Effect: "NoSchedule"}},
		Capacity: map[string]string{"cpu": "2", "memory": "8Gi", "pods": "29"},
	}
}

func TestNodeLooksLikeTheInstancesKubelet(t *testing.T) {
	node, err := Node(instance("i-1", "InService"))
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "i-1" || node.Spec.ProviderID != "aws:///us-west-2b/i-1" {
		t.Errorf("name %q providerID %q", node.Name, node.Spec.ProviderID)
	}
	for key, want := range map[string]string{
		"karpenter.sh/node-group":      "workers",
		corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone:       "us-west-2b",
		corev1.LabelTopologyRegion:     "us-west-2",
		GroupLabel:                     "workers",
		JoinedLabel:                    "true",
		corev1.LabelHostname:           "i-1",
	} {
		if got := node.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
	if node.Annotations[environment.KwokNodeAnnotation] == "" {
		t.Errorf("no kwok annotation: %v", node.Annotations)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("taints = %v", node.Spec.Taints)
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("allocatable cpu = %s", cpu.String())
	}
	bad := instance("i-2", "InService")
	bad.Capacity["cpu"] = "two"
	if _, err := Node(bad); err == nil {
		t.Error("expected an error for an unparsable capacity")
	}
}

func TestSyncRegistersInServiceAndRemovesGoneInstances(t *testing.T) {
	ctx := context.Background()
	stale, err := Node(instance("i-gone", "InService"))
	if err != nil {
		t.Fatal(err)
	}
	foreign := builders.Node(builders.NodeOptions{Name: "not-joined"})
	orphan := builders.Pod(builders.PodOptions{Name: "p", NodeName: "i-gone"})
	c := fake.NewClientBuilder().WithObjects(stale, foreign, orphan).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	joiner := &Joiner{Client: c, Instances: instances{
		instance("i-up", "InService"), instance("i-pending", "Pending"), instance("i-leaving", "Terminating"),
	}}
	if err := joiner.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if len(names) != 2 || names[0] != "i-up" || names[1] != "not-joined" {
		t.Errorf("nodes = %v, want [i-up not-joined]", names)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("pods of the removed node remain: %v", pods.Items)
	}
}

// capacities are each instance type's capacity and allocatable.
type capacities map[string][2]map[string]string

func (c capacities) NodeCapacity(instanceType string) map[string]string { return c[instanceType][0] }

func (c capacities) NodeAllocatable(instanceType string) map[string]string {
	return c[instanceType][1]
}

func TestAdmissionCompletesTheNodesKarpenterCreates(t *testing.T) {
	handler := Admission(capacities{"m5.large": {
		{"cpu": "2", "memory": "7577Mi", "pods": "29"},
		{"cpu": "1930m", "memory": "6903Mi", "pods": "29"},
	}})
	review := func(node *corev1.Node) *admissionv1.AdmissionResponse {
		t.Helper()
		raw, err := json.Marshal(node)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
				Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Node"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "nodes"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		recorder := httptest.NewRecorder()
		request := httptest.NewRequest(http.MethodPost, "/nodes", bytes.NewReader(body))
		request.Header.Set("Content-Type", "application/json")
		handler.ServeHTTP(recorder, request)
		out := admissionv1.AdmissionReview{}
		if err := json.Unmarshal(recorder.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("response %s, %v", recorder.Body.String(), err)
		}
		return out.Response
	}
	launched := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-4.us-west-2.compute.internal",
		Labels: map[string]string{"karpenter.sh/provisioner-name": "default", corev1.LabelInstanceTypeStable: "m5.large"}}}
	response := review(launched)
	patch := string(response.Patch)
	if !response.Allowed || !strings.Contains(patch, "/metadata/annotations") || !strings.Contains(patch, environment.KwokNodeAnnotationValue) ||
		!strings.Contains(patch, `"/status/capacity","value":{"cpu":"2","memory":"7577Mi","pods":"29"}`) ||
		!strings.Contains(patch, `"/status/allocatable","value":{"cpu":"1930m","memory":"6903Mi","pods":"29"}`) {
		t.Errorf("a launched node's patch = %s (allowed %t)", patch, response.Allowed)
	}
	if other := review(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}}); !other.Allowed || len(other.Patch) != 0 {
		t.Errorf("a node no Provisioner launched: allowed %t, patch %s", other.Allowed, other.Patch)
	}
}
