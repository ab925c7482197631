package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/webhook/resourcesemantics"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/webhook"
)

// scaleAccess lets the users it lists scale anything, and nobody else.
type scaleAccess struct{ allowed []string }

func (s scaleAccess) MayScale(_ context.Context, user *authenticationv1.UserInfo, namespace string, target v1alpha1.CrossVersionObjectReference) error {
	for _, name := range s.allowed {
		if user != nil && user.Username == name {
			return nil
		}
	}
	return fmt.Errorf("%v may not scale %s %s in %s", user, target.Kind, target.Name, namespace)
}

// TestHorizontalAutoscalerNeedsScaleAccess goes through the type the admission controller
// uses: a create, or an update that changes the spec, is refused at spec.scaleTargetRef
// unless the requester may scale the target; an update that leaves the spec alone is not
// checked, so the controller's status writes and relabelling go through.
func TestHorizontalAutoscalerNeedsScaleAccess(t *testing.T) {
	access := scaleAccess{allowed: []string{"owner"}}
	decode := func(h *v1alpha1.HorizontalAutoscaler) resourcesemantics.GenericCRD {
		return admissionType(t, access, h)
	}
	as := func(ctx context.Context, user string) context.Context {
		return apis.WithUserInfo(ctx, &authenticationv1.UserInfo{Username: user})
	}
	stored := horizontalAutoscaler("ha", nil)
	webhook.DefaultHorizontalAutoscaler(stored)
	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	widened := stored.DeepCopy()
	widened.Spec.MaxReplicas = 1000

	ctx := context.Background()
	if err := decode(stored).Validate(as(apis.WithinCreate(ctx), "owner")); err != nil {
		t.Errorf("create by a user who may scale the target: %v", err)
	}
	for name, err := range map[string]*apis.FieldError{
		"create":         decode(stored).Validate(as(apis.WithinCreate(ctx), "intruder")),
		"spec change":    decode(widened).Validate(as(apis.WithinUpdate(ctx, decode(stored)), "intruder")),
		"no user at all": decode(stored).Validate(apis.WithinCreate(ctx)),
	} {
		if err == nil || !strings.HasSuffix(firstLine(err.Error()), ": spec.scaleTargetRef") {
			t.Errorf("%s by a user who may not scale the target: %v, want a refusal at spec.scaleTargetRef", name, err)
		}
	}
	if err := decode(relabelled).Validate(as(apis.WithinUpdate(ctx, decode(stored)), "intruder")); err != nil {
		t.Errorf("relabelling: %v", err)
	}
	if err := decode(widened).Validate(as(apis.WithinSubResourceUpdate(ctx, decode(stored), "status"), "intruder")); err != nil {
		t.Errorf("status update: %v", err)
	}
}
