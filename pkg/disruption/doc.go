// Package disruption decides, without I/O, which of a NodePool's nodes Karpenter may disrupt
// and why: the budgets that bound how many at once, drift of a NodeClaim from its NodePool and
// EC2NodeClass, and when a node becomes consolidatable. The disruption controllers read the
// cluster and act on what it decides.
package disruption
