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
// address; on the host's network, every container port.
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
			number := p.HostPort
			if number == 0 && pod.Spec.HostNetwork {
				number = p.ContainerPort
			}
			if number <= 0 {
				continue
			}
			b := boundPort{protocol: p.Protocol, address: p.HostIP, port: number}
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

// verifyHostPorts checks that no pod the plan binds binds a host port already bound on its
// node (the same protocol and port on the same address, or on every address, 0.0.0.0, and any
// other), by an existing node's pods, a new node's daemonsets (of any instance type it may
// launch as) or the pods bound there before it.
func (c *checker) verifyHostPorts() {
	bound := map[string][]boundPort{}
	owner := map[string][]string{}
	add := func(nodeName string, pod *corev1.Pod) {
		ports := portsBound(pod)
		for _, p := range ports {
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
		for _, p := range portsBound(b.Pod) {
			for i, q := range bound[b.NodeName] {
				if p.protocol == q.protocol && p.port == q.port && (p.address == q.address || p.address == "0.0.0.0" || q.address == "0.0.0.0") {
					c.fail("node %s: pod %s/%s binds host port %s %s:%d, which %s binds too", b.NodeName, b.Pod.Namespace, b.Pod.Name, p.protocol, p.address, p.port, owner[b.NodeName][i])
				}
			}
		}
		add(b.NodeName, b.Pod)
	}
}
