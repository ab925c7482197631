package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"karpenter.sh/karpenter/pkg/test/environment"
)

// access is one question to the apiserver's authorizer, for a service account of the release.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	resource := a.resource
	if a.group != "" {
		resource += "." + a.group
	}
	if a.subresource != "" {
		resource += "/" + a.subresource
	}
	where := "every namespace (or cluster-wide)"
	if a.namespace != "" {
		where = "namespace " + a.namespace
	}
	if a.name != "" {
		resource += " " + a.name
	}
	return fmt.Sprintf("%s %s in %s", a.verb, resource, where)
}

// TestReleaseRBAC proves least privilege with SubjectAccessReviews against the installed
// release: each service account may do what its binary needs, and the sample of what it must
// not do is denied.
func TestReleaseRBAC(t *testing.T) {
	t.Parallel()
	env := environment.New(t, environment.Options{})
	path := filepath.Join(t.TempDir(), "current.yaml")
	if err := os.WriteFile(path, render(t, "v0.0.0-test"), 0o600); err != nil {
		t.Fatal(err)
	}
	apply(t, env, path)
	checkRBAC(t, env)
}

// checkRBAC asks the apiserver, for each service account of an install in namespace karpenter
// (the release or the chart), whether it may do what its binary needs and nothing more.
func checkRBAC(t *testing.T, env *environment.Environment) {
	var controllerNeeds []access
	for _, resource := range []string{"horizontalautoscalers", "metricsproducers", "scalablenodegroups"} {
		for _, verb := range []string{"get", "list", "watch"} {
			controllerNeeds = append(controllerNeeds, access{verb: verb, group: "autoscaling.karpenter.sh", resource: resource})
		}
		for _, verb := range []string{"update", "patch"} {
			controllerNeeds = append(controllerNeeds, access{verb: verb, group: "autoscaling.karpenter.sh", resource: resource, subresource: "status", namespace: "team-a"})
		}
	}
	for _, target := range []access{
		{group: "apps", resource: "deployments"},
		{group: "apps", resource: "statefulsets"},
		{group: "autoscaling.karpenter.sh", resource: "scalablenodegroups"},
		{group: "example.com", resource: "workers"},
	} {
		for _, verb := range []string{"get", "update", "patch"} {
			controllerNeeds = append(controllerNeeds, access{verb: verb, group: target.group, resource: target.resource, subresource: "scale", namespace: "team-a"})
		}
	}
	for _, resource := range []string{"nodes", "pods"} {
		for _, verb := range []string{"get", "list", "watch"} {
			controllerNeeds = append(controllerNeeds, access{verb: verb, resource: resource})
		}
	}
	// The allocator reads Provisioners and DaemonSets and writes Provisioners' status; the
	// kubelets register the Nodes of the instances it launches, which the NodeClaim lifecycle
	// patches. The node lifecycle opens a Ready node, drains and releases a deleted one (evict,
	// and delete past the drain deadline), deletes one that never joined or whose instance is
	// gone.
	for _, verb := range []string{"get", "list", "watch"} {
		controllerNeeds = append(controllerNeeds,
			access{verb: verb, group: "karpenter.sh", resource: "provisioners"},
			access{verb: verb, group: "apps", resource: "daemonsets"})
	}
	for _, verb := range []string{"patch", "delete"} {
		controllerNeeds = append(controllerNeeds, access{verb: verb, resource: "nodes"})
	}
	controllerNeeds = append(controllerNeeds,
		access{verb: "create", resource: "pods", subresource: "eviction", namespace: "team-a"},
		access{verb: "delete", resource: "pods", namespace: "team-a"},
		access{verb: "patch", group: "karpenter.sh", resource: "provisioners", subresource: "status"},
		access{verb: "create", resource: "events", namespace: "team-a"},
		access{verb: "patch", resource: "events", namespace: "team-a"},
		access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-leader-election"},
		access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: namespace},
		access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-leader-election"},
	)
	controllerMustNot := []access{
		{verb: "get", resource: "secrets", namespace: namespace},
		{verb: "list", resource: "secrets"},
		{verb: "list", resource: "configmaps"},
		{verb: "create", resource: "pods", namespace: "team-a"},
		{verb: "update", resource: "pods", namespace: "team-a"},
		{verb: "update", resource: "nodes"},
		// Karpenter never creates a Node: the kubelet registers it.
		{verb: "create", resource: "nodes"},
		{verb: "update", group: "apps", resource: "deployments", namespace: "team-a"},
		{verb: "create", group: "autoscaling.karpenter.sh", resource: "horizontalautoscalers", namespace: "team-a"},
		{verb: "delete", group: "autoscaling.karpenter.sh", resource: "scalablenodegroups", namespace: "team-a"},
		{verb: "update", group: "autoscaling.karpenter.sh", resource: "horizontalautoscalers", namespace: "team-a"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler"},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-webhook.webhookcertificates.00-of-01"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-webhook.webhookcertificates.00-of-01"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "validation.webhook.karpenter.sh"},
	}
	webhookNeeds := []access{
		{verb: "get", resource: "secrets", namespace: namespace, name: "karpenter-webhook-cert"},
		{verb: "list", resource: "secrets", namespace: namespace},
		{verb: "watch", resource: "secrets", namespace: namespace},
		{verb: "update", resource: "secrets", namespace: namespace, name: "karpenter-webhook-cert"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: namespace},
		{verb: "list", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations"},
		{verb: "watch", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "validation.webhook.karpenter.sh"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "defaulting.webhook.karpenter.sh"},
		{verb: "get", resource: "namespaces", name: namespace},
		// blockOwnerDeletion on the configurations' owner reference, under OwnerReferencesPermissionEnforcement
		{verb: "update", resource: "namespaces", subresource: "finalizers", name: namespace},
		// whether a HorizontalAutoscaler's author may scale its target
		{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"},
	}
	// knative's leases, one per leader-aware reconciler: <component>.<queue>.00-of-01.
	for _, lease := range []string{"karpenter-webhook.webhookcertificates.00-of-01", "karpenter-webhook.defaultingwebhook.00-of-01", "karpenter-webhook.validationwebhook.00-of-01"} {
		for _, verb := range []string{"get", "update"} {
			webhookNeeds = append(webhookNeeds, access{verb: verb, group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: lease})
		}
	}
	webhookMustNot := []access{
		{verb: "get", resource: "secrets", namespace: namespace, name: "another-secret"},
		{verb: "update", resource: "secrets", namespace: namespace, name: "another-secret"},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-leader-election"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "karpenter-leader-election"},
		{verb: "get", resource: "secrets", namespace: "default"},
		{verb: "list", resource: "secrets"},
		{verb: "create", resource: "secrets", namespace: namespace},
		{verb: "delete", resource: "secrets", namespace: namespace, name: "karpenter-webhook-cert"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "someone-elses"},
		{verb: "delete", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "defaulting.webhook.karpenter.sh"},
		{verb: "get", resource: "namespaces", name: "default"},
		{verb: "update", resource: "namespaces", subresource: "finalizers", name: "default"},
		{verb: "update", resource: "namespaces", name: namespace},
		{verb: "delete", resource: "namespaces", name: namespace},
		{verb: "list", group: "autoscaling.karpenter.sh", resource: "horizontalautoscalers"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		{verb: "list", resource: "configmaps", namespace: namespace},
		{verb: "update", group: "apps", resource: "deployments", subresource: "scale", namespace: "team-a"},
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
	}

	for _, account := range []struct {
		name           string
		needs, mustNot []access
	}{
		{"karpenter", controllerNeeds, controllerMustNot},
		{"karpenter-webhook", webhookNeeds, webhookMustNot},
	} {
		t.Run(account.name, func(t *testing.T) {
			user := "system:serviceaccount:" + namespace + ":" + account.name
			// The authorizer caches roles and bindings: wait for it to see the release's.
			for _, a := range account.needs {
				deadline := time.Now().Add(30 * time.Second)
				for !allowed(t, env, user, a) {
					if time.Now().After(deadline) {
						t.Errorf("%s may not %s", account.name, a)
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			for _, a := range account.mustNot {
				if allowed(t, env, user, a) {
					t.Errorf("%s may %s, which it does not need", account.name, a)
				}
			}
		})
	}
}

func allowed(t *testing.T, env *environment.Environment, user string, a access) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name,
		},
	}}
	if err := env.Client.Create(context.Background(), review); err != nil {
		t.Fatalf("reviewing %s, %v", a, err)
	}
	return review.Status.Allowed
}
