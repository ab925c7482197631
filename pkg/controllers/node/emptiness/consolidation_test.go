package emptiness_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/node/emptiness"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
)

// TestConsolidationDecidesOnTheEmptyNodesOfAProvisionerItConsolidates is finding 15 of issue
// 34: a Provisioner may set ttlSecondsAfterEmpty and consolidation.enabled together (v0.5's
// manifests apply unchanged), and then both deleted its empty nodes, each on its own clock:
// consolidation counts an empty node as room for the pods of the nodes it removes while the
// emptiness controller deletes it under them. Consolidation wins: it decides on the
// Provisioner's empty nodes like on the others, and the emptiness controller leaves them,
// clearing a mark left from before consolidation was enabled.
func TestConsolidationDecidesOnTheEmptyNodesOfAProvisionerItConsolidates(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Kwok: true})
	ctx := t.Context()
	both := builders.Provisioner(builders.ProvisionerOptions{Name: "both"})
	both.Spec.TTLSecondsAfterEmpty = ptr.To[int64](1)
	both.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true)}
	if err := env.Client.Create(ctx, both); err != nil {
		t.Fatal(err)
	}
	// Empty for an hour, by the mark the emptiness controller left before consolidation was on.
	node := environment.KwokNode("empty", map[string]string{v1alpha5.ProvisionerNameLabelKey: both.Name}, builders.Resources("cpu", "4", "memory", "16Gi"))
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[v1alpha5.EmptinessTimestampAnnotationKey] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{emptiness.Name}, Clock: clock.RealClock{},
	}})

	eventually.Holds(t, "the emptiness mark cleared and the node kept", func() (bool, string, error) {
		current := &corev1.Node{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), current)
		if apierrors.IsNotFound(err) || (err == nil && current.DeletionTimestamp != nil) {
			t.Fatal("the emptiness controller deleted an empty node of a Provisioner that consolidation decides on")
		}
		if err != nil {
			return false, "", err
		}
		stamp, marked := current.Annotations[v1alpha5.EmptinessTimestampAnnotationKey]
		return !marked, stamp, nil
	})
	expectEvent(t, env, node.Name, emptiness.ReasonNotEmpty)
}
