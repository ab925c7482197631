package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// portPod is a small pod binding the given host ports ("" protocol is TCP, "" address every
// address).
func portPod(ports ...corev1.ContainerPort) *corev1.Pod {
	return builders.Pod(builders.PodOptions{Containers: []corev1.Container{{
		Name: "main", Ports: ports, Resources: corev1.ResourceRequirements{Requests: requests("100m", "100Mi")},
	}}})
}

// hostNetwork puts the pod on its node's network, as a DaemonSet's template declares it: with
// container ports only, each of which is then a host port.
func hostNetwork(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.HostNetwork = true
	return pod
}

// onArch keeps a daemonset's pod to nodes of the given architectures.
func onArch(pod *corev1.Pod, archs ...string) *corev1.Pod {
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{builders.In(corev1.LabelArchStable, archs...)}}}}}}
	return pod
}

func port(protocol corev1.Protocol, address string, number int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: number, HostPort: number, HostIP: address, Protocol: protocol}
}

// TestHostPorts: pods whose host ports conflict (kube-scheduler's NodePorts: the same protocol
// and port, on the same address or on every address) never share a node, new or existing, and
// a daemonset's port keeps the pods that want it off the new nodes it runs on.
func TestHostPorts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pods      []*corev1.Pod
		nodes     []scheduling.Node
		daemons   []*corev1.Pod
		wantNodes int
		// wantUnschedulable pods, each with a reason mentioning the host port.
		wantUnschedulable int
	}{
		{"the same port on every address: a node each", []*corev1.Pod{portPod(port("", "", 8080)), portPod(port(corev1.ProtocolTCP, "", 8080))}, nil, nil, 2, 0},
		{"another protocol does not conflict", []*corev1.Pod{portPod(port("", "", 53)), portPod(port(corev1.ProtocolUDP, "", 53))}, nil, nil, 1, 0},
		{"other addresses do not conflict", []*corev1.Pod{portPod(port("", "10.0.0.1", 80)), portPod(port("", "10.0.0.2", 80))}, nil, nil, 1, 0},
		{"every address conflicts with one", []*corev1.Pod{portPod(port("", "10.0.0.1", 80)), portPod(port("", "0.0.0.0", 80))}, nil, nil, 2, 0},
		{"other ports share a node", []*corev1.Pod{portPod(port("", "", 80)), portPod(port("", "", 81)), portPod()}, nil, nil, 1, 0},
		{"an existing node's pod keeps its port", []*corev1.Pod{portPod(port("", "", 8080)), portPod(port("", "", 9090))},
			[]scheduling.Node{existingNode("node-a", "zone-1", "4", "8Gi", portPod(port("", "", 8080)))}, nil, 1, 0},
		{"a daemonset's port on every new node", []*corev1.Pod{portPod(port("", "", 9100)), portPod(port("", "", 80))}, nil, []*corev1.Pod{portPod(port("", "", 9100))}, 1, 1},
		{"a daemonset on the host's network binds its container ports", []*corev1.Pod{portPod(port("", "", 9100))}, nil, []*corev1.Pod{hostNetwork(portPod(corev1.ContainerPort{ContainerPort: 9100}))}, 0, 1},
		// The checker holds the node to the types it may launch as: none of them arm64.
		{"a daemonset's port on the arm64 types only: an amd64 node", []*corev1.Pod{portPod(port("", "", 9100))}, nil, []*corev1.Pod{onArch(portPod(port("", "", 9100)), "arm64")}, 1, 0},
		{"a daemonset's port on the types of every arch", []*corev1.Pod{portPod(port("", "", 9100))}, nil, []*corev1.Pod{onArch(portPod(port("", "", 9100)), "arm64", "amd64")}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: tc.pods, Nodes: tc.nodes, DaemonSetPods: tc.daemons, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
			r := scheduling.Schedule(in)
			for _, err := range check.Verify(in, r) {
				t.Error(err)
			}
			wantNodes(t, r, tc.wantNodes)
			wantUnschedulable(t, r, tc.wantUnschedulable, "host port")
		})
	}
}

// TestCheckerCatchesHostPortConflicts: a plan putting two pods binding one host port on one
// node is rejected.
func TestCheckerCatchesHostPortConflicts(t *testing.T) {
	in := scheduling.Input{Pods: []*corev1.Pod{portPod(port("", "", 8080)), portPod(port("", "", 8080))}, Pools: []scheduling.Pool{provisioner(builders.ProvisionerOptions{})}}
	checkerCatches(t, in, "a host port bound twice on one node", "", func(_ *scheduling.Input, r *scheduling.Results) {
		r.Bindings[1].NodeName = r.Bindings[0].NodeName
	})
}
