package cloudprovider

import (
	corev1 "k8s.io/api/core/v1"
)

// InstanceType is a shape of node the cloud can launch. It is what the provisioning scheduler
// packs pods onto; the cloud provider that lists it decides how to launch it.
type InstanceType struct {
	// Name is the value of the node.kubernetes.io/instance-type label.
	Name string
	// Labels the node carries whichever offering it launches as, e.g. kubernetes.io/arch and
	// kubernetes.io/os. Zone and capacity type come from the Offering.
	Labels map[string]string
	// Capacity is what the node reports, including the pods it may run.
	Capacity corev1.ResourceList
	// Overhead is reserved on every node for the system and kubelet; pods get
	// Capacity - Overhead.
	Overhead corev1.ResourceList
	// Offerings are the zones and capacity types the type can be bought in.
	Offerings []Offering
	// VolumeLimits are, per CSI driver (e.g. ebs.csi.aws.com), how many of its volumes a node
	// of the type can attach, as the driver will report in the node's CSINode; a driver not
	// listed has no limit.
	VolumeLimits map[string]int64
}

// EBSCSIDriver is the EBS CSI driver's name, which its volumes' limits are counted under; the
// in-tree kubernetes.io/aws-ebs volumes are migrated to it.
const EBSCSIDriver = "ebs.csi.aws.com"

// Offering is one way to buy an instance type: where, how, at what price, and whether the
// cloud has it now.
type Offering struct {
	Zone         string
	CapacityType string
	// Price per hour, in US dollars.
	Price     float64
	Available bool
}

// Allocatable is the capacity left for pods.
func (t *InstanceType) Allocatable() corev1.ResourceList {
	allocatable := corev1.ResourceList{}
	for name, quantity := range t.Capacity {
		q := quantity.DeepCopy()
		if overhead, ok := t.Overhead[name]; ok {
			q.Sub(overhead)
		}
		allocatable[name] = q
	}
	return allocatable
}
