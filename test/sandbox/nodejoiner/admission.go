package nodejoiner

import (
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/environment"
)

// Capacities tells what a kubelet on an instance of a type reports as its capacity and as
// allocatable; *awsemulator.Emulator implements it.
type Capacities interface {
	NodeCapacity(instanceType string) map[string]string
	NodeAllocatable(instanceType string) map[string]string
}

// Admission is a mutating admission webhook for the Nodes a Karpenter from before NodeClaims
// creates itself (labelled karpenter.sh/provisioner-name, not kwok's yet; the upgrade test runs
// one): it adds what the instance's kubelet would report — the instance type's capacity, and
// allocatable less what the kubelet reserves — and the annotation that hands the Node to kwok,
// which then reports it Ready and runs its pods. It must happen as the Node is created: kwok
// v0.7.0 only takes a Node it sees created (it holds the Node's Lease from then on), never one
// annotated later. The Nodes the kubelets of NewKubelets register are complete already and pass
// unchanged.
func Admission(capacities Capacities) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview, %v", err), http.StatusBadRequest)
			return
		}
		response := admit(capacities, review.Request.Object.Raw)
		response.UID = review.Request.UID
		if len(response.Patches) > 0 {
			patch, err := json.Marshal(response.Patches)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			response.Patch, response.PatchType = patch, ptr.To(admissionv1.PatchTypeJSONPatch)
		}
		review.Request, review.Response = nil, &response.AdmissionResponse
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
}

func admit(capacities Capacities, raw []byte) admission.Response {
	node := &corev1.Node{}
	if err := json.Unmarshal(raw, node); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if node.Labels[v1alpha5.ProvisionerNameLabelKey] == "" {
		return admission.Allowed("not launched by a Provisioner")
	}
	if node.Annotations[environment.KwokNodeAnnotation] != "" {
		return admission.Allowed("registered by a kubelet")
	}
	instanceType := node.Labels[corev1.LabelInstanceTypeStable]
	capacity, err := resources(node.Name, capacities.NodeCapacity(instanceType))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	allocatable, err := resources(node.Name, capacities.NodeAllocatable(instanceType))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	node.Status = environment.KwokNode(node.Name, node.Labels, capacity).Status
	if len(allocatable) > 0 {
		node.Status.Allocatable = allocatable
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[environment.KwokNodeAnnotation] = environment.KwokNodeAnnotationValue
	mutated, err := json.Marshal(node)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(raw, mutated)
}
