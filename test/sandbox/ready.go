package sandbox

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ready reads object and reports whether its Ready condition is True, with the condition's
// reason and message when it is not.
func Ready(ctx context.Context, c client.Client, object *unstructured.Unstructured) (bool, string, error) {
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(object.GroupVersionKind())
	namespace := object.GetNamespace()
	if namespace == "" {
		namespace = Namespace
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: object.GetName()}, current); err != nil {
		return false, "", err
	}
	conditions, _, err := unstructured.NestedSlice(current.Object, "status", "conditions")
	if err != nil {
		return false, "", err
	}
	for _, condition := range conditions {
		fields, ok := condition.(map[string]any)
		if !ok || fields["type"] != "Ready" {
			continue
		}
		if fields["status"] == "True" {
			return true, "", nil
		}
		return false, fmt.Sprintf("Ready=%v %v: %v", fields["status"], fields["reason"], fields["message"]), nil
	}
	return false, "no Ready condition yet", nil
}
