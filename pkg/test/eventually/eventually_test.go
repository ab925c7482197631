package eventually_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/test/eventually"
)

// recorder is a testing.TB that records Fatalf instead of ending the test, so a failing wait
// can be asserted on.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestHolds(t *testing.T) {
	fast := []eventually.Option{eventually.Interval(time.Millisecond), eventually.Timeout(time.Minute)}
	for _, tc := range []struct {
		name string
		// results are the condition's answers, one per check; the last repeats.
		results    []error
		doneAt     int
		wantChecks int
	}{
		{name: "holds at once", doneAt: 1, wantChecks: 1},
		{name: "holds on the third check", doneAt: 3, wantChecks: 3},
		{name: "an error is retried", results: []error{errors.New("unreachable"), nil}, doneAt: 1, wantChecks: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			checks := 0
			eventually.Holds(r, "the state", func() (bool, string, error) {
				checks++
				if checks <= len(tc.results) && tc.results[checks-1] != nil {
					return false, "", tc.results[checks-1]
				}
				return checks >= tc.doneAt, fmt.Sprintf("check %d", checks), nil
			}, fast...)
			if len(r.failures) > 0 || checks != tc.wantChecks {
				t.Errorf("failures %q after %d checks, want none after %d", r.failures, checks, tc.wantChecks)
			}
		})
	}
}

func TestHoldsReportsWhatItLastSaw(t *testing.T) {
	r := &recorder{TB: t}
	checks := 0
	eventually.Holds(r, "the group has 3 replicas", func() (bool, string, error) {
		checks++
		if checks%2 == 0 {
			return false, "", errors.New("connection refused")
		}
		return false, fmt.Sprintf("replicas=%d", checks), nil
	}, eventually.Interval(time.Millisecond), eventually.Timeout(50*time.Millisecond))
	if len(r.failures) != 1 {
		t.Fatalf("failures %q, want one", r.failures)
	}
	message := r.failures[0]
	for _, want := range []string{"the group has 3 replicas", "not within 50ms", "last seen: replicas="} {
		if !strings.Contains(message, want) {
			t.Errorf("failure %q does not contain %q", message, want)
		}
	}
	// The last check decides whether an error is reported.
	if hasErr := strings.Contains(message, "connection refused"); hasErr != (checks%2 == 0) {
		t.Errorf("failure %q after %d checks: reports the error %v, want %v", message, checks, hasErr, checks%2 == 0)
	}
}

func TestHoldsUsesDefaults(t *testing.T) {
	r := &recorder{TB: t}
	var times []time.Time
	eventually.Holds(r, "the second check", func() (bool, string, error) {
		times = append(times, time.Now())
		return len(times) == 2, "", nil
	})
	if len(r.failures) > 0 || len(times) != 2 {
		t.Fatalf("failures %q after %d checks, want none after 2", r.failures, len(times))
	}
	if gap := times[1].Sub(times[0]); gap < eventually.DefaultInterval/2 {
		t.Errorf("checks %s apart, want about %s", gap, eventually.DefaultInterval)
	}
}

func TestHoldsStopsWithTheTest(t *testing.T) {
	var r *recorder
	checks := 0
	t.Run("ending", func(t *testing.T) {
		// The subtest's context is cancelled when it ends: Holds on it then fails at once.
		r = &recorder{TB: t}
	})
	eventually.Holds(r, "anything", func() (bool, string, error) {
		checks++
		return false, "never", nil
	}, eventually.Timeout(time.Minute))
	if len(r.failures) != 1 || !strings.Contains(r.failures[0], "the test ended first") || checks != 1 {
		t.Errorf("failures %q after %d checks, want one for the ended test after 1", r.failures, checks)
	}
}
