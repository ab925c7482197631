package operator

import "testing"

func TestRequestKind(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		verb, resource      string
	}{
		{"GET", "/apis/apps/v1/namespaces/a/deployments/b/scale", "", "get", "deployments/scale"},
		{"PUT", "/apis/apps/v1/namespaces/a/deployments/b/scale", "", "update", "deployments/scale"},
		{"PATCH", "/apis/autoscaling.karpenter.sh/v1alpha1/namespaces/a/horizontalautoscalers/b/status", "", "patch", "horizontalautoscalers/status"},
		{"GET", "/api/v1/pods", "", "list", "pods"},
		{"GET", "/api/v1/namespaces/a/pods", "true", "watch", "pods"},
		{"GET", "/api/v1/nodes/n", "", "get", "nodes"},
		{"GET", "/api/v1/namespaces/a", "", "get", "namespaces"},
		{"POST", "/api/v1/namespaces/a/events", "", "create", "events"},
		{"DELETE", "/api/v1/nodes/n", "", "delete", "nodes"},
		{"DELETE", "/api/v1/namespaces/a/pods", "", "deletecollection", "pods"},
		{"GET", "/apis", "", "get", "nonresource"},
		{"GET", "/version", "", "get", "nonresource"},
	} {
		verb, resource := requestKind(tc.method, tc.path, tc.watch)
		if verb != tc.verb || resource != tc.resource {
			t.Errorf("%s %s: %s %s, want %s %s", tc.method, tc.path, verb, resource, tc.verb, tc.resource)
		}
	}
}
