package expiration_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/eventually"
)

// TestAPodNoProvisionerServesFreezesNeitherExpiryNorConsolidation is finding 34.6: one pod
// that no Provisioner could ever give a node (a typo in its node selector) waits for capacity
// for ever, and while any pod waited, expiry and consolidation did nothing, for the whole
// cluster. Only pods some Provisioner could serve hold them back: the expired node and the
// underused one both go.
func TestAPodNoProvisionerServesFreezesNeitherExpiryNorConsolidation(t *testing.T) {
	f := newDisruptionFixture(t, true)
	env, cloud, launched, spare := f.env, f.cloud, f.launched, f.spare
	ctx := t.Context()
	// No Provisioner launches in that zone, and no node is there.
	typo := builders.Deployment(builders.DeploymentOptions{Name: "typo", Replicas: 1, Pod: builders.PodOptions{
		NodeSelector: map[string]string{corev1.LabelTopologyZone: "us-west-2z"},
	}})
	if err := env.Client.Create(ctx, typo); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the typo's pod waits for capacity", func() (bool, string, error) {
		list := &corev1.PodList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{"app": "typo"}); err != nil {
			return false, "", err
		}
		return len(list.Items) == 1 && pods.IsProvisionable(&list.Items[0]), fmt.Sprintf("%d pods", len(list.Items)), nil
	})
	f.startDisruption(t)

	for _, node := range launched {
		t.Run(node.Name, func(t *testing.T) {
			eventually.Holds(t, "node "+node.Name+" is gone, its instance terminated", func() (bool, string, error) {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, "", err
				}
				return apierrors.IsNotFound(err) && slices.Contains(cloud.DeleteCalls(), node.Spec.ProviderID), "", nil
			})
			waitRunning(t, env, node.Labels[v1alpha5.ProvisionerNameLabelKey], spare.Name)
		})
	}
}
