package nodejoiner

import (
	"context"
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// Capacities tells what a kubelet on an instance of a type reports;
// *awsemulator.Emulator implements it.
type Capacities interface {
	NodeCapacity(instanceType string) map[string]string
}

// Admission is a mutating admission webhook for the Nodes Karpenter creates (those labelled
// karpenter.sh/provisioner-name): it adds what the instance's kubelet would report — the
// instance type's capacity — and the annotation that hands the Node to kwok, which then
// reports it Ready and runs its pods. It must happen as the Node is created: kwok v0.7.0 only
// takes a Node it sees created (it holds the Node's Lease from then on), never one annotated
// later. So the Node is Ready about a second after its creation, not after the instance's boot.
func Admission(capacities Capacities) http.Handler {
	return &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		node := &corev1.Node{}
		if err := json.Unmarshal(req.Object.Raw, node); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if node.Labels[v1alpha5.ProvisionerNameLabelKey] == "" {
			return admission.Allowed("not launched by a Provisioner")
		}
		capacity, err := resources(node.Name, capacities.NodeCapacity(node.Labels[corev1.LabelInstanceTypeStable]))
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		booted := environment.KwokNode(node.Name, node.Labels, capacity)
		node.Status = booted.Status
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[environment.KwokNodeAnnotation] = environment.KwokNodeAnnotationValue
		mutated, err := json.Marshal(node)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	})}
}
