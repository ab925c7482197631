package disruption_test

import (
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/disruption"
)

func scheduled(nodes, schedule string, duration time.Duration, zone string, reasons ...v1.DisruptionReason) v1.Budget {
	b := v1.Budget{Nodes: nodes, Schedule: &schedule, Duration: &metav1.Duration{Duration: duration}, Reasons: reasons}
	if zone != "" {
		b.TimeZone = &zone
	}
	return b
}

func TestAllowed(t *testing.T) {
	// Monday 2026-11-30 08:59:30 UTC.
	monday := time.Date(2026, 11, 30, 8, 59, 30, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		budgets    []v1.Budget
		reason     v1.DisruptionReason
		total      int
		disrupting int
		now        time.Time
		want       int
		wantErr    bool
	}{
		{name: "no budgets bound nothing", total: 10, want: math.MaxInt32, now: monday},
		{name: "a count", budgets: []v1.Budget{{Nodes: "3"}}, total: 10, want: 3, now: monday},
		{name: "a count less those disrupting", budgets: []v1.Budget{{Nodes: "3"}}, total: 10, disrupting: 2, want: 1, now: monday},
		{name: "never below zero", budgets: []v1.Budget{{Nodes: "1"}}, total: 10, disrupting: 3, want: 0, now: monday},
		{name: "a percentage rounds up", budgets: []v1.Budget{{Nodes: "10%"}}, total: 5, want: 1, now: monday},
		{name: "10% of 25 is 3", budgets: []v1.Budget{{Nodes: "10%"}}, total: 25, want: 3, now: monday},
		{name: "0% allows none", budgets: []v1.Budget{{Nodes: "0%"}}, total: 25, want: 0, now: monday},
		{name: "100% allows all", budgets: []v1.Budget{{Nodes: "100%"}}, total: 7, want: 7, now: monday},
		{name: "no nodes allow none", budgets: []v1.Budget{{Nodes: "10%"}}, total: 0, want: 0, now: monday},
		{name: "the most restrictive wins", budgets: []v1.Budget{{Nodes: "50%"}, {Nodes: "2"}, {Nodes: "30%"}}, total: 10, want: 2, now: monday},
		{name: "a budget for other reasons does not apply", budgets: []v1.Budget{{Nodes: "10"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}},
			reason: v1.DisruptionReasonEmpty, total: 10, want: 10, now: monday},
		{name: "a budget for the reason applies", budgets: []v1.Budget{{Nodes: "10"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted}}},
			reason: v1.DisruptionReasonDrifted, total: 10, want: 0, now: monday},
		// Upstream's example: no disruption during business hours.
		{name: "a schedule not yet open", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 10, now: monday},
		{name: "a schedule as it opens", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 0, now: monday.Add(30 * time.Second)},
		{name: "a schedule open", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 0, now: monday.Add(7 * time.Hour)},
		{name: "a schedule just before it closes", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 0, now: time.Date(2026, 11, 30, 16, 59, 59, 0, time.UTC)},
		{name: "a schedule as it closes", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 10, now: time.Date(2026, 11, 30, 17, 0, 1, 0, time.UTC)},
		{name: "a schedule on a day it skips", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "")},
			total: 10, want: 10, now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)},
		{name: "a macro", budgets: []v1.Budget{scheduled("1", "@daily", 10*time.Minute, "")},
			total: 10, want: 1, now: time.Date(2026, 11, 30, 0, 5, 0, 0, time.UTC)},
		{name: "a macro past its duration", budgets: []v1.Budget{scheduled("1", "@daily", 10*time.Minute, "")},
			total: 10, want: math.MaxInt32, now: time.Date(2026, 11, 30, 0, 15, 0, 0, time.UTC)},
		// 09:00 in Berlin is 08:00 UTC in winter.
		{name: "a schedule in a time zone", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "Europe/Berlin")},
			total: 10, want: 0, now: monday},
		{name: "a time zone past its window", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "Europe/Berlin")},
			total: 10, want: 10, now: time.Date(2026, 11, 30, 16, 0, 1, 0, time.UTC)},
		// In summer Berlin is UTC+2: 09:00 there is 07:00 UTC.
		{name: "a time zone in daylight saving", budgets: []v1.Budget{{Nodes: "10"}, scheduled("0", "0 9 * * mon-fri", 8*time.Hour, "Europe/Berlin")},
			total: 10, want: 0, now: time.Date(2026, 7, 6, 7, 0, 30, 0, time.UTC)},
		{name: "an unknown time zone fails closed", budgets: []v1.Budget{{Nodes: "10"}, scheduled("5", "@daily", time.Hour, "Mars/Olympus")},
			total: 10, want: 0, now: monday, wantErr: true},
		{name: "an unreadable schedule fails closed", budgets: []v1.Budget{scheduled("5", "61 * * * *", time.Hour, "")},
			total: 10, want: 0, now: monday, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := disruption.Allowed(tc.budgets, tc.reason, tc.total, tc.disrupting, tc.now)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("Allowed = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
