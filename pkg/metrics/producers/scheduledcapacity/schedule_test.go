package scheduledcapacity

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// workHours is active 9:00-17:00 on weekdays.
var workHours = BehaviorSpec{
	Replicas: 10,
	Start:    Fields{Hours: str("9"), Weekdays: str("mon-fri")},
	End:      &Fields{Hours: str("17"), Weekdays: str("mon-fri")},
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      Spec
		now       string
		wantValue int32
		wantTime  string // "" when the value never changes
		wantNext  int32
	}{
		{"no behaviours", Spec{DefaultReplicas: 3}, "2024-05-10 12:00 +0000", 3, "", 0},
		{"inside work hours", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{workHours}},
			"2024-05-10 12:00 +0000", 10, "2024-05-10 17:00 +0000", 1},
		{"friday evening waits for monday", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{workHours}},
			"2024-05-10 17:00 +0000", 1, "2024-05-13 09:00 +0000", 10},
		{"active from the start instant", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{workHours}},
			"2024-05-13 09:00 +0000", 10, "2024-05-13 17:00 +0000", 1},
		{"in the time zone", Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{workHours}},
			"2024-05-10 12:00 +0000", 1, "2024-05-10 09:00 -0700", 10},
		{"overlap: first listed wins", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 20, Start: Fields{Hours: str("12")}, End: &Fields{Hours: str("13")}},
			workHours,
		}}, "2024-05-10 12:30 +0000", 20, "2024-05-10 13:00 +0000", 10},
		{"overlap: later behaviour shows through", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 20, Start: Fields{Hours: str("12")}, End: &Fields{Hours: str("13")}},
			workHours,
		}}, "2024-05-10 10:00 +0000", 10, "2024-05-10 12:00 +0000", 20},
		{"overlap: listed second only fills gaps", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			workHours,
			{Replicas: 20, Start: Fields{Hours: str("12")}, End: &Fields{Hours: str("13")}},
		}}, "2024-05-10 10:00 +0000", 10, "2024-05-10 17:00 +0000", 1},
		{"transitions to the same value are skipped", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			workHours,
			{Replicas: 1, Start: Fields{Hours: str("18")}, End: &Fields{Hours: str("20")}},
		}}, "2024-05-10 17:30 +0000", 1, "2024-05-13 09:00 +0000", 10},
		{"always active: no end", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 7, Start: Fields{Minutes: str("*"), Hours: str("*")}},
			workHours,
		}}, "2024-05-10 12:00 +0000", 7, "", 0},
		{"no end: active after its first start ever", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 7, Start: Fields{Days: str("29"), Months: str("feb"), Weekdays: str("mon")}},
		}}, "2024-05-10 12:00 +0000", 7, "", 0},
		{"no end, later behaviours hidden once active", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			workHours,
			{Replicas: 7, Start: Fields{Minutes: str("*"), Hours: str("*")}},
		}}, "2024-05-10 18:00 +0000", 7, "2024-05-13 09:00 +0000", 10},
		{"same start and end never activates", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 5, Start: Fields{Hours: str("9")}, End: &Fields{Hours: str("9")}},
		}}, "2024-05-10 12:00 +0000", 1, "", 0},
		{"end wins a tie, start later re-activates", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 5, Start: Fields{Hours: str("*")}, End: &Fields{Hours: str("17")}},
		}}, "2024-05-10 17:00 +0000", 1, "2024-05-10 18:00 +0000", 5},
		{"hourly start, daily end", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 5, Start: Fields{Hours: str("*")}, End: &Fields{Hours: str("17")}},
		}}, "2024-05-10 16:59 +0000", 5, "2024-05-10 17:00 +0000", 1},
		{"start covered by end on all but one date", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 5, Start: Fields{Days: str("*")}, End: &Fields{Days: str("1-14,16-31")}},
		}}, "2024-05-20 12:00 +0000", 1, "2024-06-15 00:00 +0000", 5},
		{"leap day sale", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 50, Start: Fields{Days: str("29"), Months: str("feb")}, End: &Fields{Days: str("1"), Months: str("mar")}},
		}}, "2024-03-01 00:00 +0000", 1, "2028-02-29 00:00 +0000", 50},
		{"month end", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Days: str("31"), Hours: str("20")}, End: &Fields{Days: str("1")}},
		}}, "2024-04-01 12:00 +0000", 1, "2024-05-31 20:00 +0000", 4},
		{"year wrap", Spec{DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Days: str("24"), Months: str("dec")}, End: &Fields{Days: str("2"), Months: str("jan")}},
		}}, "2024-12-31 12:00 +0000", 4, "2025-01-02 00:00 +0000", 1},
		{"spring forward: start in the skipped hour", Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Hours: str("2"), Minutes: str("30")}, End: &Fields{Hours: str("6")}},
		}}, "2024-03-10 01:00 -0800", 1, "2024-03-10 03:00 -0700", 4},
		{"spring forward: start and end collapse, end wins", Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Hours: str("2"), Minutes: str("30")}, End: &Fields{Hours: str("3")}},
		}}, "2024-03-10 01:00 -0800", 1, "2024-03-11 02:30 -0700", 4},
		{"fall back: window through the repeated hour", Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Hours: str("1"), Minutes: str("30")}, End: &Fields{Hours: str("2")}},
		}}, "2024-11-03 01:40 -0800", 4, "2024-11-03 02:00 -0800", 1},
		{"fall back: ends in the repeated hour", Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{
			{Replicas: 4, Start: Fields{Hours: str("0")}, End: &Fields{Hours: str("1"), Minutes: str("30")}},
		}}, "2024-11-03 01:40 -0800", 1, "2024-11-04 00:00 -0800", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSchedule(tc.spec)
			if err != nil {
				t.Fatalf("NewSchedule() error = %v", err)
			}
			got := s.Evaluate(at(t, tc.now))
			if got.Value != tc.wantValue {
				t.Errorf("Value = %d, want %d", got.Value, tc.wantValue)
			}
			switch {
			case tc.wantTime == "" && got.Next != nil:
				t.Errorf("Next = %v at %v, want none", got.Next.Value, got.Next.Time)
			case tc.wantTime == "":
			case got.Next == nil:
				t.Errorf("Next = none, want %d at %s", tc.wantNext, tc.wantTime)
			case !got.Next.Time.Equal(at(t, tc.wantTime)) || got.Next.Value != tc.wantNext:
				t.Errorf("Next = %d at %v, want %d at %s", got.Next.Value, got.Next.Time, tc.wantNext, tc.wantTime)
			}
		})
	}
}

func TestNewScheduleErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     Spec
		wantPath string
		want     string
	}{
		{"unknown time zone", Spec{Timezone: "Mars/Olympus"}, "timezone", `timezone: "Mars/Olympus" is not an IANA time zone`},
		{"local time zone", Spec{Timezone: "Local"}, "timezone", `timezone: "Local" is not an IANA time zone`},
		{"bad start", Spec{Behaviors: []BehaviorSpec{workHours, {Start: Fields{Weekdays: str("Mun")}}}},
			"behaviors[1].start.weekdays", `behaviors[1].start.weekdays: "Mun" is not a weekday`},
		{"bad end", Spec{Behaviors: []BehaviorSpec{{Start: Fields{}, End: &Fields{Days: str("31"), Months: str("feb")}}}},
			"behaviors[0].end.days", `behaviors[0].end.days: "31" never occurs in months "feb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSchedule(tc.spec)
			var fieldErr *FieldError
			if !errors.As(err, &fieldErr) {
				t.Fatalf("NewSchedule() error = %v, want a *FieldError", err)
			}
			if fieldErr.Path != tc.wantPath || err.Error() != tc.want {
				t.Errorf("NewSchedule() error = %s (path %s), want %s (path %s)", err, fieldErr.Path, tc.want, tc.wantPath)
			}
		})
	}
}

// TestEvaluateIsConsistent checks, for random schedules, that the value holds
// at every pattern firing before Next, and that Next is where it changes.
func TestEvaluateIsConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	loc := mustLocation(t, "America/Los_Angeles")
	var fieldsList []Fields
	for len(fieldsList) < 40 {
		f := Fields{Minutes: randomField(r, 0, 59, nil), Hours: randomField(r, 0, 23, nil), Weekdays: randomField(r, 0, 6, nil)}
		if r.IntN(3) == 0 {
			f.Days = randomField(r, 1, 31, nil)
		}
		if _, err := Parse(f); err == nil {
			fieldsList = append(fieldsList, f)
		}
	}
	for i := range 60 {
		spec := Spec{Timezone: loc.String(), DefaultReplicas: int32(r.IntN(3))}
		for range 1 + r.IntN(3) {
			b := BehaviorSpec{Replicas: int32(r.IntN(3)), Start: fieldsList[r.IntN(len(fieldsList))]}
			if r.IntN(5) != 0 {
				end := fieldsList[r.IntN(len(fieldsList))]
				b.End = &end
			}
			spec.Behaviors = append(spec.Behaviors, b)
		}
		s, err := NewSchedule(spec)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2024, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, loc)
		got := s.Evaluate(now)
		horizon := now.Add(3 * 24 * time.Hour)
		if got.Next != nil {
			if got.Next.Value == got.Value || !got.Next.Time.After(now) {
				t.Fatalf("case %d: Next = %+v from value %d at %v", i, got.Next, got.Value, now)
			}
			if at := s.Evaluate(got.Next.Time); at.Value != got.Next.Value {
				t.Errorf("case %d: value at Next.Time %v = %d, Next.Value %d", i, got.Next.Time, at.Value, got.Next.Value)
			}
			if got.Next.Time.Before(horizon) {
				horizon = got.Next.Time
			}
		}
		// The value can only change where some pattern fires.
		for _, b := range s.behaviors {
			for _, p := range []*Pattern{b.start, b.end} {
				if p == nil {
					continue
				}
				fire, ok := p.Next(now, loc)
				for checked := 0; ok && fire.Before(horizon) && checked < 100; checked++ {
					if v := s.Evaluate(fire).Value; v != got.Value {
						t.Fatalf("case %d (%+v): value at %v = %d, but Evaluate(%v) = %d with Next %+v", i, spec, fire, v, now, got.Value, got.Next)
					}
					fire, ok = p.Next(fire, loc)
				}
			}
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	s, err := NewSchedule(Spec{Timezone: "America/Los_Angeles", DefaultReplicas: 1, Behaviors: []BehaviorSpec{
		{Replicas: 30, Start: Fields{Days: str("29"), Months: str("nov"), Hours: str("6")}, End: &Fields{Days: str("2"), Months: str("dec")}},
		workHours,
		{Replicas: 3, Start: Fields{Hours: str("7"), Weekdays: str("sat,sun")}, End: &Fields{Hours: str("22"), Weekdays: str("sat,sun")}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2024, 3, 10, 1, 30, 0, 0, s.Location())
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(now)
		now = now.Add(17 * time.Minute)
	}
}
