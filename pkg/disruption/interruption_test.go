package disruption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
)

func TestInterruption(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		grace       *metav1.Duration
		wantOK      bool
		wantErr     bool
		wantDrainBy time.Time
		wantFirst   bool
	}{
		{name: "none recorded"},
		{name: "two weeks ahead: drained ten minutes before, replaced first",
			annotations: Interruption{Reason: "scheduled_change", Deadline: now.Add(14 * 24 * time.Hour)}.Annotations(),
			wantOK:      true, wantDrainBy: now.Add(14*24*time.Hour - DefaultInterruptionDrain), wantFirst: true},
		{name: "its terminationGracePeriod is its drain",
			annotations: Interruption{Reason: "scheduled_change", Deadline: now.Add(2 * time.Hour)}.Annotations(), grace: &metav1.Duration{Duration: time.Hour},
			wantOK: true, wantDrainBy: now.Add(time.Hour), wantFirst: true},
		{name: "a drain and a replacement away: replaced first",
			annotations: Interruption{Reason: "scheduled_change", Deadline: now.Add(DefaultInterruptionDrain + ReplacementLead)}.Annotations(),
			wantOK:      true, wantDrainBy: now.Add(ReplacementLead), wantFirst: true},
		{name: "nearer: drained at once",
			annotations: Interruption{Reason: "scheduled_change", Deadline: now.Add(DefaultInterruptionDrain + ReplacementLead - time.Second)}.Annotations(),
			wantOK:      true, wantDrainBy: now.Add(ReplacementLead - time.Second)},
		{name: "a deadline that does not read", annotations: map[string]string{v1.InterruptionReasonAnnotationKey: "scheduled_change", v1.InterruptionDeadlineAnnotationKey: "soon"},
			wantErr: true},
		{name: "a deadline without a reason", annotations: map[string]string{v1.InterruptionDeadlineAnnotationKey: now.Format(time.RFC3339)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", Annotations: tc.annotations}, Spec: v1.NodeClaimSpec{TerminationGracePeriod: tc.grace}}
			in, ok, err := InterruptionOf(nc)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("InterruptionOf: %+v, %v, %v; want ok %v, error %v", in, ok, err, tc.wantOK, tc.wantErr)
			}
			if !ok {
				return
			}
			if got := in.DrainBy(nc); !got.Equal(tc.wantDrainBy) {
				t.Errorf("DrainBy %s, want %s", got, tc.wantDrainBy)
			}
			if got := in.ReplaceFirst(nc, now); got != tc.wantFirst {
				t.Errorf("ReplaceFirst %v, want %v", got, tc.wantFirst)
			}
		})
	}
}
