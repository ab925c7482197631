package instancetype

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EphemeralStorage is what of an EC2NodeClass decides the ephemeral storage its nodes report:
// the filesystem the kubelet and container runtime keep their state on.
type EphemeralStorage struct {
	// RootVolumeSize is the size of the EBS volume that holds that state.
	RootVolumeSize resource.Quantity
	// InstanceStoreRAID0 puts that state on one RAID-0 array of the instance-store NVMe disks
	// instead, on the types that have them (spec.instanceStorePolicy RAID0).
	InstanceStoreRAID0 bool
}

// capacity is the ephemeral storage a node of the type reports: with RAID0, the total size of
// its NVMe instance store, which EC2 gives in GB (10^9 bytes); otherwise, or for a type
// without NVMe instance store, the root volume's. nodeadm, bootstrap.sh and Bottlerocket build
// the array from NVMe instance-store disks only, so a type whose disks are not NVMe (h1, d2,
// x1) keeps its state on the root volume and reports that.
func (s EphemeralStorage) capacity(info ec2types.InstanceTypeInfo) resource.Quantity {
	if s.InstanceStoreRAID0 {
		if gb, ok := nvmeInstanceStoreGB(info); ok {
			return *resource.NewScaledQuantity(gb, resource.Giga)
		}
	}
	return s.RootVolumeSize.DeepCopy()
}

// nvmeInstanceStoreGB is the total size of the type's NVMe instance-store disks in GB; false
// when it has none.
func nvmeInstanceStoreGB(info ec2types.InstanceTypeInfo) (int64, bool) {
	s := info.InstanceStorageInfo
	if s == nil || s.TotalSizeInGB == nil || *s.TotalSizeInGB <= 0 || s.NvmeSupport == ec2types.EphemeralNvmeSupportUnsupported {
		return 0, false
	}
	return *s.TotalSizeInGB, true
}
