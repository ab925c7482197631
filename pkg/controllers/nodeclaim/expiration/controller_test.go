package expiration_test

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/controllers/nodeclaim/expiration"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

func TestExpiration(t *testing.T) {
	created := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(created.Add(time.Hour))
	claim := func(name, pool, expireAfter string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if pool != "" {
			nc.Labels = map[string]string{v1.NodePoolLabelKey: pool}
		}
		if expireAfter != "" {
			nc.Spec.ExpireAfter = v1.MustParseNillableDuration(expireAfter)
		}
		return nc
	}
	for _, tc := range []struct {
		name        string
		nc          *v1.NodeClaim
		wantDeleted bool
		wantRequeue time.Duration
	}{
		{name: "past expireAfter", nc: claim("old", "default", "30m"), wantDeleted: true},
		{name: "exactly at expireAfter", nc: claim("due", "default", "1h"), wantDeleted: true},
		{name: "before expireAfter", nc: claim("young", "default", "90m"), wantRequeue: 30 * time.Minute},
		{name: "Never", nc: claim("never", "default", "Never")},
		{name: "a Provisioner's", nc: claim("provisioner", "", "30m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubefake.NewClientBuilder().WithObjects(tc.nc).Build()
			recorder := record.NewFakeRecorder(10)
			controller, err := expiration.New(expiration.Options{Client: c, Recorder: recorder, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			result, err := controller.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: tc.nc.Name}})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(t.Context(), client.ObjectKeyFromObject(tc.nc), &v1.NodeClaim{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted || result.RequeueAfter != tc.wantRequeue {
				t.Errorf("deleted %v, requeue after %s; want %v, %s", deleted, result.RequeueAfter, tc.wantDeleted, tc.wantRequeue)
			}
			if tc.wantDeleted && len(recorder.Events) != 1 {
				t.Errorf("%d Events, want one", len(recorder.Events))
			}
		})
	}
}
