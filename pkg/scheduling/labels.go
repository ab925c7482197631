package scheduling

import "strings"

// reservedLabelDomains are the label domains whose labels Kubernetes, Karpenter or a cloud
// provider sets itself (with their subdomains: node.kubernetes.io, topology.k8s.aws, …).
var reservedLabelDomains = []string{"kubernetes.io", "k8s.io", "karpenter.sh", "k8s.aws"}

// ReservedLabelDomain reports whether key is in a domain whose labels Kubernetes, Karpenter or
// the cloud provider set: a node gets such a label from its instance type, offering or launch,
// never a value a pool chooses for it.
func ReservedLabelDomain(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	for _, reserved := range reservedLabelDomains {
		if domain == reserved || strings.HasSuffix(domain, "."+reserved) {
			return true
		}
	}
	return false
}
