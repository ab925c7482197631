package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// BlockDeviceMapping is a volume of the node.
type BlockDeviceMapping struct {
	// DeviceName is the device the volume is attached as (/dev/xvda, /dev/sdh).
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS is the EBS volume.
	// +kubebuilder:validation:XValidation:message="snapshotID or volumeSize must be defined",rule="has(self.snapshotID) || has(self.volumeSize)"
	// +kubebuilder:validation:XValidation:message="snapshotID must be set when volumeInitializationRate is set",rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')"
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume says the volume holds the kubelet's and container runtime's state, and so the
	// node's ephemeral storage. At most one volume is the root volume.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume, with kmsKeyID or the account's default key.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS provisioned for io1, io2 and gp3 volumes (gp3: 3,000-16,000; io1, io2:
	// 100-64,000).
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the KMS key (id, alias or ARN) that encrypts the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the EBS snapshot the volume starts from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput provisioned for a gp3 volume, in MiB/s (125-1,000).
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeInitializationRate is the rate, in MiB/s (100-300), at which the volume is filled
	// from its snapshot; set with snapshotID.
	// +kubebuilder:validation:Minimum:=100
	// +kubebuilder:validation:Maximum:=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// VolumeSize of the volume in Gi, G, Ti or T (100Gi); the volume type bounds it (gp2, gp3:
	// 1-16,384 GiB; io1, io2: 4-16,384; st1, sc1: 125-16,384; standard: 1-1,024).
	// +kubebuilder:validation:Pattern:="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-4][0-9]|5[0-8])Ti|([1-9]|[1-5][0-9]|6[0-4])T)$"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType of the volume: standard, io1, io2, gp2, sc1, st1 or gp3.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says what to do with a node's instance-store disks.
// +kubebuilder:validation:Enum={RAID0}
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 makes one RAID-0 array of the instance-store NVMe disks for
// /var/lib/containerd and /var/lib/kubelet: the node's ephemeral storage, faster and larger.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// RAID0 says the policy makes the instance-store disks one RAID-0 array; a nil policy (unset)
// leaves them alone.
func (p *InstanceStorePolicy) RAID0() bool { return p != nil && *p == InstanceStorePolicyRAID0 }

// NetworkInterface is a network interface of the node.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum:=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's index on its network card.
	// +kubebuilder:validation:Minimum:=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface (an ENA interface) or efa-only (an EFA interface without IP
	// addresses).
	// +kubebuilder:validation:Enum:={interface,efa-only}
	// +required
	InterfaceType InterfaceType `json:"interfaceType"`
}

// InterfaceType is the type of a network interface.
type InterfaceType string

// Interface types.
const (
	InterfaceTypeInterface InterfaceType = "interface"
	InterfaceTypeEFAOnly   InterfaceType = "efa-only"
)

// MetadataOptions configure the instance metadata service (IMDS) of a node.
type MetadataOptions struct {
	// HTTPEndpoint enables or disables the metadata service.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 enables or disables the metadata service's IPv6 endpoint.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops the metadata service's token may
	// travel (1-64): 1 keeps it from pods outside the host network.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is required (IMDSv2 only: every request carries a session token) or optional
	// (IMDSv1 allowed too).
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// ConnectionTracking sets the idle timeouts, in seconds, of connection tracking on a node's
// network interfaces.
// +kubebuilder:validation:XValidation:message="at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)"
type ConnectionTracking struct {
	// TCPEstablishedTimeout is the timeout of idle established TCP connections (60-432,000).
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is the timeout of idle UDP flows that saw more than one
	// request-response transaction (60-180).
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is the timeout of idle UDP flows that saw traffic in one direction or a single
	// request-response transaction (30-60).
	// +kubebuilder:validation:Minimum:=30
	// +kubebuilder:validation:Maximum:=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions configure the processors of a node.
type CPUOptions struct {
	// NestedVirtualization, enabled, limits the node to instance types that support nested
	// virtualization and turns it on.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}
