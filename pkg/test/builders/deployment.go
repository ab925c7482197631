package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DeploymentOptions describe a Deployment.
type DeploymentOptions struct {
	// Name defaults to a unique deployment-N, Namespace to "default".
	Name, Namespace string
	Replicas        int32
	// Pod is the template; its labels, app=<name> when it has none, select the pods. Its name
	// and namespace are ignored.
	Pod PodOptions
}

// Deployment is a Deployment as options describe it.
func Deployment(o DeploymentOptions) *appsv1.Deployment {
	deploymentName := name(o.Name, "deployment")
	labels := o.Pod.Labels
	if len(labels) == 0 {
		labels = map[string]string{"app": deploymentName}
	}
	template := o.Pod
	template.Name, template.Labels = deploymentName, labels
	pod := Pod(template)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deploymentName, Namespace: namespace(o.Namespace)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
		},
	}
}
