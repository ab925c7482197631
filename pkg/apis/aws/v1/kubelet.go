package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the part of the kubelet's configuration an EC2NodeClass sets, named
// and typed as the kubelet's own KubeletConfiguration (k8s.io/kubelet/config/v1beta1). Karpenter
// also reads it: maxPods, podsPerCore and the reservations decide what fits on a node.
// +kubebuilder:validation:XValidation:message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",rule="has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"
// +kubebuilder:validation:XValidation:message="evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",rule="has(self.evictionSoft) ? self.evictionSoft.all(e, has(self.evictionSoftGracePeriod) && e in self.evictionSoftGracePeriod) : true"
// +kubebuilder:validation:XValidation:message="evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",rule="has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, has(self.evictionSoft) && e in self.evictionSoft) : true"
type KubeletConfiguration struct {
	// ClusterDNS are the IP addresses of the cluster's DNS servers, for the pods' resolv.conf.
	// Unset, the family's default (the cluster's kube-dns service).
	// +listType=atomic
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods is the most pods the node runs. Unset, as many as its network interfaces have
	// IP addresses for (AL2, AL2023, Bottlerocket) or 110.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore is the most pods the node runs per processor core; maxPods still caps it.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved are the resources (cpu, memory, ephemeral-storage, pid) held back for the
	// operating system's daemons.
	// +kubebuilder:validation:MaxProperties:=4
	// +kubebuilder:validation:XValidation:message="valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="systemReserved values are quantities (100m, 1Gi, 1000)",rule="self.all(x, isQuantity(self[x]))"
	// +kubebuilder:validation:XValidation:message="systemReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved are the resources (cpu, memory, ephemeral-storage, pid) held back for the
	// kubelet and container runtime. Unset, the family's default for the instance type.
	// +kubebuilder:validation:MaxProperties:=4
	// +kubebuilder:validation:XValidation:message="valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="kubeReserved values are quantities (100m, 1Gi, 1000)",rule="self.all(x, isQuantity(self[x]))"
	// +kubebuilder:validation:XValidation:message="kubeReserved value cannot be a negative resource quantity",rule="self.all(x, !self[x].startsWith('-'))"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard are the thresholds, a quantity (500Mi) or a percentage (10%) of the signal's
	// capacity, below which the kubelet evicts pods at once.
	// +kubebuilder:validation:MaxProperties:=6
	// +kubebuilder:validation:XValidation:message="valid keys for evictionHard are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +kubebuilder:validation:XValidation:message="evictionHard values are a quantity (500Mi) or a percentage of at most 100 (10%, 7.5%)",rule="self.all(x, self[x].endsWith('%') ? self[x].matches('^[0-9.]+%$') && double(self[x].substring(0, self[x].size() - 1)) <= 100.0 : isQuantity(self[x]))"
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are the thresholds, a quantity (500Mi) or a percentage (10%) of the signal's
	// capacity, below which the kubelet evicts pods once the signal's grace period in
	// evictionSoftGracePeriod has passed.
	// +kubebuilder:validation:MaxProperties:=6
	// +kubebuilder:validation:XValidation:message="valid keys for evictionSoft are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +kubebuilder:validation:XValidation:message="evictionSoft values are a quantity (500Mi) or a percentage of at most 100 (10%, 7.5%)",rule="self.all(x, self[x].endsWith('%') ? self[x].matches('^[0-9.]+%$') && double(self[x].substring(0, self[x].size() - 1)) <= 100.0 : isQuantity(self[x]))"
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is, for each signal of evictionSoft, how long it must stay below
	// its threshold before the kubelet evicts pods (1m30s).
	// +kubebuilder:validation:MaxProperties:=6
	// +kubebuilder:validation:XValidation:message="valid keys for evictionSoftGracePeriod are ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available']",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +kubebuilder:validation:XValidation:message="evictionSoftGracePeriod values are non-negative durations of hours, minutes and seconds (1m30s)",rule="self.all(x, duration(self[x]) >= duration('0s'))"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period, in seconds, the kubelet gives a pod
	// it evicts for a soft threshold.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage, in percent, above which the kubelet
	// always garbage-collects images; above imageGCLowThresholdPercent.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage, in percent, the kubelet garbage-collects
	// images down to; below imageGCHighThresholdPercent.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enforces the CPU limits of containers with CFS quota.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}
