package disruption_test

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
)

func TestSavingsThreshold(t *testing.T) {
	for _, tc := range []struct {
		value *string
		want  float64
	}{
		{value: nil, want: 0.1},
		{value: ptr.To("0%"), want: 0},
		{value: ptr.To("5%"), want: 0.05},
		{value: ptr.To("100%"), want: 1},
		// The schema refuses these; should one get through, the controller's threshold holds.
		{value: ptr.To("5"), want: 0.1},
		{value: ptr.To("150%"), want: 0.1},
		{value: ptr.To("-5%"), want: 0.1},
	} {
		np := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{SavingsThreshold: tc.value}}}
		if got := disruption.SavingsThreshold(np, 0.1); got != tc.want {
			t.Errorf("savingsThreshold %v: %g, want %g", tc.value, got, tc.want)
		}
	}
}
