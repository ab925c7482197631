// Package scheduling is the vocabulary of placing pods on nodes that Karpenter shares between
// the provisioning scheduler, the pending-capacity producer and admission: requirements on
// node labels with the node selector operators, required node affinity against a node's
// labels, and taints against tolerations. It is pure: it reads what it is given.
//
// The label keys a Provisioner may constrain are v1alpha5.WellKnownLabels, next to the CRD
// markers that repeat them.
package scheduling
