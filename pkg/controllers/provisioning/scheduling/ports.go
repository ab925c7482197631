package scheduling

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/pods"
)

// hostPort is a port a pod binds on its node. Two pods whose ports conflict never share a
// node, as kube-scheduler's NodePorts filter has it (and the kubelet would refuse the second).
type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

// daemonPortRefusal is why a pod gets no new node: a daemonset that would run there binds one of
// its host ports.
const daemonPortRefusal = "a daemonset on its nodes binds the pod's host port"

// anyAddress is the host IP of a port bound on every address of the node, as an empty one is.
const anyAddress = "0.0.0.0"

func hostPortsOf(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, p := range pods.HostPorts(pod) {
		h := hostPort{protocol: p.Protocol, ip: p.HostIP, port: p.HostPort}
		if h.protocol == "" {
			h.protocol = corev1.ProtocolTCP
		}
		if h.ip == "" {
			h.ip = anyAddress
		}
		out = append(out, h)
	}
	return out
}

// conflicts reports whether two ports cannot both be bound: the same protocol and port, on the
// same address or with either on every address.
func (h hostPort) conflicts(o hostPort) bool {
	return h.protocol == o.protocol && h.port == o.port && (h.ip == o.ip || h.ip == anyAddress || o.ip == anyAddress)
}

// portsConflict reports whether any of wanted conflicts with a port in use.
func portsConflict(used, wanted []hostPort) bool {
	for _, w := range wanted {
		if slices.ContainsFunc(used, w.conflicts) {
			return true
		}
	}
	return false
}

// releasePorts takes one of each of a pod's ports off the ports in use.
func releasePorts(used, released []hostPort) []hostPort {
	for _, r := range released {
		if i := slices.Index(used, r); i >= 0 {
			used = slices.Delete(used, i, i+1)
		}
	}
	return used
}
