package v1

// Labels of the karpenter.k8s.aws domain, named and valued as upstream's provider names them, so
// that NodePools, pods and tools written for upstream select the same nodes here.
const (
	LabelInstanceTenancy                      = "karpenter.k8s.aws/instance-tenancy"
	LabelCapacityReservationType              = "karpenter.k8s.aws/capacity-reservation-type"
	LabelCapacityReservationID                = "karpenter.k8s.aws/capacity-reservation-id"
	LabelCapacityReservationInterruptible     = "karpenter.k8s.aws/capacity-reservation-interruptible"
	LabelNodeClass                            = "karpenter.k8s.aws/ec2nodeclass"
	LabelInstanceEncryptionInTransitSupported = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	LabelInstanceCategory                     = "karpenter.k8s.aws/instance-category"
	LabelInstanceHypervisor                   = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceFamily                       = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration                   = "karpenter.k8s.aws/instance-generation"
	LabelInstanceLocalNVME                    = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceSize                         = "karpenter.k8s.aws/instance-size"
	LabelInstanceCPU                          = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUManufacturer              = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = "karpenter.k8s.aws/instance-memory"
	LabelInstanceEBSBandwidth                 = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceGPUName                      = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUManufacturer              = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory                    = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceAcceleratorName              = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = "karpenter.k8s.aws/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = "karpenter.k8s.aws/instance-capability-flex"
	LabelPlacementGroupID                     = "karpenter.k8s.aws/placement-group-id"
	LabelPlacementGroupPartition              = "karpenter.k8s.aws/placement-group-partition"

	// EC2NodeClassHashAnnotationKey is, on an EC2NodeClass and on each NodeClaim launched from
	// it, the hash of the class's fields that drift its nodes when they change.
	EC2NodeClassHashAnnotationKey = "karpenter.k8s.aws/ec2nodeclass-hash"
	// EC2NodeClassHashVersionAnnotationKey is how that hash was computed, as the NodePool's.
	EC2NodeClassHashVersionAnnotationKey = "karpenter.k8s.aws/ec2nodeclass-hash-version"

	// LabelTopologyZoneID is the zone id (usw2-az1) of a node, which names the same zone in
	// every account, unlike the zone's name.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
)

// InstanceTypeLabels are the labels of the karpenter.k8s.aws domain an instance type carries,
// which NodePools and NodeOverlays may require. The CEL rules of both CRDs repeat them; a test
// holds them equal.
var InstanceTypeLabels = []string{
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceCategory,
	LabelInstanceHypervisor,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceLocalNVME,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceCapabilityFlex,
}

// LaunchLabels are the labels of the karpenter.k8s.aws domain a launch decides beyond the
// instance type (its tenancy, capacity reservation and placement group), which NodePools may
// require as well.
var LaunchLabels = []string{
	LabelInstanceTenancy,
	LabelCapacityReservationType,
	LabelCapacityReservationID,
	LabelCapacityReservationInterruptible,
	LabelPlacementGroupID,
	LabelPlacementGroupPartition,
}
