package check

import (
	corev1 "k8s.io/api/core/v1"
)

// boundPort is a host port as the kubelet binds it: protocol, address and port.
type boundPort struct {
	protocol corev1.Protocol
	address  string
	port     int32
}

// portsBound are the host ports a pod binds: its containers', and its restartable init
// containers' (sidecars), with an empty protocol read as TCP and an empty address as every
// address.
func portsBound(pod *corev1.Pod) []boundPort {
	var out []boundPort
	containers := append([]corev1.Container(nil), pod.Spec.Containers...)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			b := boundPort{protocol: p.Protocol, address: p.HostIP, port: p.HostPort}
			if b.protocol == "" {
				b.protocol = corev1.ProtocolTCP
			}
			if b.address == "" {
				b.address = "0.0.0.0"
			}
			out = append(out, b)
		}
	}
	return out
}

// verifyHostPorts checks that no two pods on a node bind the same host port, counting a new
// node's daemonsets (of any instance type it may launch as) and an existing node's pods: the
// same protocol and port on the same address, or on every address (0.0.0.0) and any other.
func (c *checker) verifyHostPorts() {
	bound := map[string][]boundPort{}
	owner := map[string][]string{}
	add := func(nodeName string, pod *corev1.Pod) {
		for _, p := range portsBound(pod) {
			for i, q := range bound[nodeName] {
				if p.protocol == q.protocol && p.port == q.port && (p.address == q.address || p.address == "0.0.0.0" || q.address == "0.0.0.0") {
					c.fail("node %s: pod %s/%s binds host port %s %s:%d, which %s binds too", nodeName, pod.Namespace, pod.Name, p.protocol, p.address, p.port, owner[nodeName][i])
				}
			}
			bound[nodeName] = append(bound[nodeName], p)
			owner[nodeName] = append(owner[nodeName], pod.Namespace+"/"+pod.Name)
		}
	}
	for _, n := range c.order {
		if n.existing {
			for _, pod := range n.pods {
				add(n.name, pod)
			}
			continue
		}
		seen := map[*corev1.Pod]bool{}
		for _, daemons := range n.daemonSets {
			for _, ds := range daemons {
				if !seen[ds] {
					seen[ds] = true
					add(n.name, ds)
				}
			}
		}
	}
	for _, b := range c.r.Bindings {
		add(b.NodeName, b.Pod)
	}
}
