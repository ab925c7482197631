package capacity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityOf returns the quantity of name in list, zero when absent.
func quantityOf(list corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if quantity, ok := list[name]; ok {
		return quantity
	}
	return resource.Quantity{}
}
