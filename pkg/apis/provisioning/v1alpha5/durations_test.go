package v1alpha5_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

// TestLargeDurationsRefusedAtAdmission is finding 4 of issue 34: a count of seconds times
// time.Second overflows past 9223372036 seconds (about 292 years), so
// terminationGracePeriodSeconds: 10000000000 became a drain deadline 267 years in the past
// (every pod deleted at once) and the same in a TTL expired or emptied every node at once. The
// CRD refuses what a duration cannot hold, and says the bound.
func TestLargeDurationsRefusedAtAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	ctx := context.Background()
	for _, field := range []string{"ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "terminationGracePeriodSeconds"} {
		for _, tc := range []struct {
			value    string
			admitted bool
		}{
			{"0", true},
			{"30", true},
			{"9223372036", true}, // the longest time.Duration, in whole seconds
			{"9223372037", false},
			{"10000000000", false},
			{"9223372036854775807", false},
		} {
			t.Run(fmt.Sprintf("%s %s", field, tc.value), func(t *testing.T) {
				object := manifests.Decode(t, fmt.Sprintf("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: durations}\nspec: {%s: %s}", field, tc.value))
				err := env.Client.Create(ctx, object, client.DryRunAll)
				want := fmt.Sprintf("spec.%s: Invalid value: \"integer\": must be at most 9223372036 seconds (about 292 years)", field)
				switch {
				case tc.admitted && err != nil:
					t.Errorf("rejected with\n  %v\nwant admitted", err)
				case !tc.admitted && err == nil:
					t.Errorf("admitted, want a message containing\n  %s", want)
				case !tc.admitted && !strings.Contains(err.Error(), want):
					t.Errorf("rejected with\n  %v\nwant a message containing\n  %s", err, want)
				}
			})
		}
	}
}
