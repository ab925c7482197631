// Package apis collects every API group Karpenter serves or consumes into one scheme.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	autoscalingv1alpha1 "karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	provisioningv1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	provisioningv1alpha1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	provisioningv1alpha5 "karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

var schemeBuilder = runtime.NewSchemeBuilder(
	clientgoscheme.AddToScheme,
	autoscalingv1alpha1.AddToScheme,
	provisioningv1alpha5.AddToScheme,
	provisioningv1.AddToScheme,
	provisioningv1alpha1.AddToScheme,
	awsv1.AddToScheme,
)

// AddToScheme registers the built-in Kubernetes types and Karpenter's own.
var AddToScheme = schemeBuilder.AddToScheme

// NewScheme returns a scheme holding every type Karpenter uses.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		// Registration of static types only fails on programming errors.
		panic(err)
	}
	return scheme
}
