package status

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

// Reasons of the NodePool's conditions.
const (
	ReasonValid                  = "Valid"
	ReasonNodeClassNotFound      = "NodeClassNotFound"
	ReasonNodeClassKindNotServed = "NodeClassKindNotServed"
	ReasonNodeClassNotReconciled = "NodeClassNotReconciled"
	ReasonNodeClassReady         = "NodeClassReady"
	ReasonNodeClassDeleting      = "NodeClassDeleting"
)

// Decide is the NodePool's status given its node class (nil when it does not exist) and the
// NodeClaims launched for it: the number of its nodes and the sum of their capacity, as its
// limits count them (NodeClaims being deleted included: their instances still run), and its
// conditions — ValidationSucceeded (its schema and CEL admitted it: nothing else is checked
// at run time), NodeClassReady (the class's own Ready condition, or why there is none) and
// Ready, True once both are. The stored status's transition times are kept where a condition
// does not change.
func Decide(np *v1.NodePool, class *awsv1.EC2NodeClass, claims []v1.NodeClaim) v1.NodePoolStatus {
	status := *np.Status.DeepCopy()
	status.Nodes = ptr.To(int64(len(claims)))
	status.Resources = capacity(claims)
	set := func(conditionType string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: conditionType, Status: s, Reason: reason, Message: message, ObservedGeneration: np.Generation})
	}
	set(v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValid, "")
	classStatus, reason, message := NodeClassReady(np.Spec.Template.Spec.NodeClassRef, class)
	set(v1.ConditionTypeNodeClassReady, classStatus, reason, message)
	if class != nil {
		status.NodeClassObservedGeneration = class.Generation
	}
	if classStatus == metav1.ConditionTrue {
		set(v1.ConditionTypeReady, metav1.ConditionTrue, v1.ConditionTypeReady, "")
	} else {
		set(v1.ConditionTypeReady, classStatus, reason, message)
	}
	return status
}

// NodeClassReady is the NodeClassReady condition: the class's Ready condition as it stands. The
// provisioning pass launches from the class only when it is True, and says why not otherwise.
func NodeClassReady(ref *v1.NodeClassReference, class *awsv1.EC2NodeClass) (metav1.ConditionStatus, string, string) {
	if ref == nil || ref.GroupKind() != awsv1.SchemeGroupVersion.WithKind("EC2NodeClass").GroupKind() {
		group, kind := "", ""
		if ref != nil {
			group, kind = ref.Group, ref.Kind
		}
		return metav1.ConditionFalse, ReasonNodeClassKindNotServed, fmt.Sprintf("nodeClassRef names %s of group %q: this Karpenter serves EC2NodeClass of group %s", kind, group, awsv1.SchemeGroupVersion.Group)
	}
	if class == nil {
		return metav1.ConditionFalse, ReasonNodeClassNotFound, fmt.Sprintf("EC2NodeClass %s does not exist", ref.Name)
	}
	if class.DeletionTimestamp != nil {
		return metav1.ConditionFalse, ReasonNodeClassDeleting, fmt.Sprintf("EC2NodeClass %s is being deleted", ref.Name)
	}
	ready := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case ready == nil:
		return metav1.ConditionUnknown, ReasonNodeClassNotReconciled, fmt.Sprintf("EC2NodeClass %s has no Ready condition yet", ref.Name)
	case ready.Status == metav1.ConditionTrue:
		return metav1.ConditionTrue, ReasonNodeClassReady, ""
	default:
		return ready.Status, ready.Reason, fmt.Sprintf("EC2NodeClass %s is not ready: %s", ref.Name, ready.Message)
	}
}

// capacity sums the NodeClaims' capacity, resource by resource; nil for none.
func capacity(claims []v1.NodeClaim) corev1.ResourceList {
	var total corev1.ResourceList
	for i := range claims {
		for name, quantity := range claims[i].Status.Capacity {
			if total == nil {
				total = corev1.ResourceList{}
			}
			sum := total[name]
			sum.Add(quantity)
			total[name] = sum
		}
	}
	return total
}
