package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// ProvisionerOptions describe a Provisioner; zero fields are left out.
type ProvisionerOptions struct {
	// Name defaults to a unique provisioner-N.
	Name string
	// Labels, Taints and Requirements are those of the nodes the Provisioner launches.
	Labels       map[string]string
	Taints       []corev1.Taint
	Requirements []v1alpha5.NodeSelectorRequirement
	// Limits bound the total capacity launched.
	Limits corev1.ResourceList
}

// Provisioner is a Provisioner as options describe it.
func Provisioner(o ProvisionerOptions) *v1alpha5.Provisioner {
	provisioner := &v1alpha5.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: name(o.Name, "provisioner")},
		Spec:       v1alpha5.ProvisionerSpec{Labels: o.Labels, Taints: o.Taints, Requirements: o.Requirements},
	}
	if o.Limits != nil {
		provisioner.Spec.Limits = &v1alpha5.Limits{Resources: o.Limits}
	}
	return provisioner
}
