package operator

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestManagerOptions(t *testing.T) {
	for _, tc := range []struct {
		name           string
		options        Options
		wantNamespaces []string
		wantSkip       bool
	}{
		{name: "production", options: Options{LeaderElection: true, LeaderElectionNamespace: "karpenter", MetricsBindAddress: ":8080"}},
		{name: "namespaced cache", options: Options{Namespaces: []string{"a", "b"}}, wantNamespaces: []string{"a", "b"}},
		{name: "controllers built again", options: Options{SkipNameValidation: true}, wantSkip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := managerOptions(tc.options)
			if got.Scheme == nil || got.Cache.DefaultTransform == nil {
				t.Error("the scheme or the managed-fields transform is missing")
			}
			if got.LeaderElection != tc.options.LeaderElection || got.LeaderElectionID != LeaderElectionID ||
				got.LeaderElectionNamespace != tc.options.LeaderElectionNamespace || !got.LeaderElectionReleaseOnCancel {
				t.Errorf("leader election %v %q %q release %v", got.LeaderElection, got.LeaderElectionID, got.LeaderElectionNamespace, got.LeaderElectionReleaseOnCancel)
			}
			if got.Metrics.BindAddress != tc.options.MetricsBindAddress {
				t.Errorf("metrics address %q, want %q", got.Metrics.BindAddress, tc.options.MetricsBindAddress)
			}
			if len(got.Cache.DefaultNamespaces) != len(tc.wantNamespaces) {
				t.Errorf("cached namespaces %v, want %v", got.Cache.DefaultNamespaces, tc.wantNamespaces)
			}
			for _, namespace := range tc.wantNamespaces {
				if _, ok := got.Cache.DefaultNamespaces[namespace]; !ok {
					t.Errorf("namespace %s is not cached", namespace)
				}
			}
			if skip := ptr.Deref(got.Controller.SkipNameValidation, false); skip != tc.wantSkip {
				t.Errorf("SkipNameValidation %v, want %v", skip, tc.wantSkip)
			}
		})
	}
}
