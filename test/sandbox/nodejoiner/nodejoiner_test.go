package nodejoiner

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"karpenter.sh/karpenter/pkg/providers/amifamily"
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

// ec2Launched is a running EC2 instance a Provisioner launched, tagged for the sandbox cluster,
// with Karpenter's user data.
func ec2Launched(t *testing.T, id string) awsemulator.EC2Instance {
	t.Helper()
	userData, err := amifamily.UserData(amifamily.NodeBootstrap{ClusterName: "sandbox", MaxPods: 29,
		Labels: map[string]string{"karpenter.sh/provisioner-name": "default", "team": "ml"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}})
	if err != nil {
		t.Fatal(err)
	}
	return awsemulator.EC2Instance{
		InstanceID: id, ProviderID: "aws:///us-west-2b/" + id, InstanceType: "m5.large", AvailabilityZone: "us-west-2b", State: "running",
		PrivateDNSName: "ip-10-0-1-4.us-west-2.compute.internal", Architecture: "x86_64", UserData: userData,
		Tags:        map[string]string{"kubernetes.io/cluster/sandbox": "owned"},
		Capacity:    map[string]string{"cpu": "2", "memory": "7577Mi", "pods": "29"},
		Allocatable: map[string]string{"cpu": "1930m", "memory": "6903Mi", "pods": "29"},
	}
}

func TestKubeletNodeIsWhatTheUserDataRegisters(t *testing.T) {
	node, err := KubeletNode(ec2Launched(t, "i-1"))
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "ip-10-0-1-4.us-west-2.compute.internal" || node.Spec.ProviderID != "aws:///us-west-2b/i-1" {
		t.Errorf("name %q providerID %q, want the private DNS name and aws:///<zone>/<id>", node.Name, node.Spec.ProviderID)
	}
	for key, want := range map[string]string{
		"karpenter.sh/provisioner-name": "default",
		"team":                          "ml",
		corev1.LabelInstanceTypeStable:  "m5.large",
		corev1.LabelTopologyZone:        "us-west-2b",
		corev1.LabelTopologyRegion:      "us-west-2",
		corev1.LabelArchStable:          "amd64",
		corev1.LabelHostname:            node.Name,
	} {
		if got := node.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
	want := []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}, {Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
	if !slices.Equal(node.Spec.Taints, want) {
		t.Errorf("taints %v, want %v", node.Spec.Taints, want)
	}
	if cpu, alloc := node.Status.Capacity[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "2" || alloc.String() != "1930m" {
		t.Errorf("capacity cpu %s, allocatable cpu %s", cpu.String(), alloc.String())
	}
	if node.Annotations[environment.KwokNodeAnnotation] != environment.KwokNodeAnnotationValue {
		t.Errorf("no kwok annotation: %v", node.Annotations)
	}
	bad := ec2Launched(t, "i-2")
	bad.UserData = "#!/bin/bash\n/etc/eks/bootstrap.sh sandbox"
	if _, err := KubeletNode(bad); err == nil {
		t.Error("expected an error for user data without a nodeadm NodeConfig")
	}
}

type ec2Instances []awsemulator.EC2Instance

func (i *ec2Instances) EC2Instances() []awsemulator.EC2Instance { return *i }

// TestKubeletsRegisterOnce: a running instance of the cluster registers its Node once; not one
// of another cluster, nor one not running, nor one whose Node exists (created by an older
// Karpenter), nor again once its Node was deleted.
func TestKubeletsRegisterOnce(t *testing.T) {
	ctx := context.Background()
	old := ec2Launched(t, "i-old")
	old.PrivateDNSName = "ip-10-0-1-5.us-west-2.compute.internal"
	existing := builders.Node(builders.NodeOptions{Name: "created-by-karpenter"})
	existing.Spec.ProviderID = old.ProviderID
	other, pending := ec2Launched(t, "i-other"), ec2Launched(t, "i-pending")
	other.Tags = map[string]string{"kubernetes.io/cluster/other": "owned"}
	pending.State = "pending"
	pending.PrivateDNSName = "ip-10-0-1-6.us-west-2.compute.internal"
	instances := &ec2Instances{ec2Launched(t, "i-new"), old, other, pending}
	c := fake.NewClientBuilder().WithObjects(existing).Build()
	kubelets := NewKubelets(c, instances, "sandbox")
	names := func() []string {
		t.Helper()
		if err := kubelets.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range nodes.Items {
			out = append(out, n.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"created-by-karpenter", "ip-10-0-1-4.us-west-2.compute.internal"}) {
		t.Errorf("nodes %v, want the new instance's and the existing one", got)
	}
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-4.us-west-2.compute.internal"}}); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"created-by-karpenter"}) {
		t.Errorf("nodes %v after the new instance's was deleted, want it not registered again", got)
	}
}

// capacities are each instance type's capacity and allocatable.
type capacities map[string][2]map[string]string

func (c capacities) NodeCapacity(instanceType string) map[string]string { return c[instanceType][0] }

func (c capacities) NodeAllocatable(instanceType string) map[string]string {
	return c[instanceType][1]
}

// TestAdmissionCompletesTheNodesAnOlderKarpenterCreates: a Node a Karpenter from before
// NodeClaims created itself is completed for kwok; one a kubelet registered, or one no
// Provisioner launched, passes unchanged.
func TestAdmissionCompletesTheNodesAnOlderKarpenterCreates(t *testing.T) {
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
	registered, err := KubeletNode(ec2Launched(t, "i-1"))
	if err != nil {
		t.Fatal(err)
	}
	if kubelets := review(registered); !kubelets.Allowed || len(kubelets.Patch) != 0 {
		t.Errorf("a node its kubelet registered: allowed %t, patch %s", kubelets.Allowed, kubelets.Patch)
	}
}

// TestKubeletsReplaceOnlyStaleNodes: a Node holding the name of a new instance's node is deleted,
// and the new one registered, only when its own instance no longer runs; a Node of a running
// instance (another cluster's here) stays. An instance whose user data cannot be read is
// reported, not skipped in silence.
func TestKubeletsReplaceOnlyStaleNodes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		holder    awsemulator.EC2Instance
		wantOwner string
	}{
		{name: "its instance terminated", holder: func() awsemulator.EC2Instance {
			gone := ec2Launched(t, "i-gone")
			gone.State = "terminated"
			return gone
		}(), wantOwner: "aws:///us-west-2b/i-new"},
		{name: "its instance running, another cluster's", holder: func() awsemulator.EC2Instance {
			other := ec2Launched(t, "i-other")
			other.Tags = map[string]string{"kubernetes.io/cluster/other": "owned"}
			return other
		}(), wantOwner: "aws:///us-west-2b/i-other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := builders.Node(builders.NodeOptions{Name: "ip-10-0-1-4.us-west-2.compute.internal"})
			held.Spec.ProviderID = tc.holder.ProviderID
			c := fake.NewClientBuilder().WithObjects(held).Build()
			kubelets := NewKubelets(c, &ec2Instances{ec2Launched(t, "i-new"), tc.holder}, "sandbox")
			for range 2 { // the first pass deletes a stale Node, the second registers
				if err := kubelets.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
			node := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(held), node); err != nil {
				t.Fatal(err)
			}
			if node.Spec.ProviderID != tc.wantOwner {
				t.Errorf("the node of the name is %s's, want %s's", node.Spec.ProviderID, tc.wantOwner)
			}
		})
	}
	bad := ec2Launched(t, "i-bad")
	bad.UserData = "#!/bin/bash\n/etc/eks/bootstrap.sh sandbox"
	err := NewKubelets(fake.NewClientBuilder().Build(), &ec2Instances{bad}, "sandbox").Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "i-bad") {
		t.Errorf("Sync: %v, want an error naming the instance whose user data cannot be read", err)
	}
}
