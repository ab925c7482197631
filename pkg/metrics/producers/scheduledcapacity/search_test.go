package scheduledcapacity

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func mustLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("loading %s, %v", name, err)
	}
	return loc
}

func mustParse(t testing.TB, f Fields) *Pattern {
	t.Helper()
	p, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%v), %v", f, err)
	}
	return p
}

// at parses "2006-01-02 15:04[:05] MST-offset" style instants in loc, with an
// explicit UTC offset so that repeated local times are unambiguous.
func at(t testing.TB, value string) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02 15:04 -0700", "2006-01-02 15:04:05 -0700"} {
		if parsed, err := time.Parse(layout, value); err == nil {
			return parsed
		}
	}
	t.Fatalf("bad instant %q", value)
	return time.Time{}
}

func TestNextAndPrev(t *testing.T) {
	for _, tc := range []struct {
		name     string
		zone     string
		fields   Fields
		t        string
		wantNext string // "" means never
		wantPrev string
	}{
		{"daily at midnight", "UTC", Fields{}, "2024-05-10 12:00 +0000", "2024-05-11 00:00 +0000", "2024-05-10 00:00 +0000"},
		{"exact match is prev, not next", "UTC", Fields{Hours: str("9")}, "2024-05-10 09:00 +0000", "2024-05-11 09:00 +0000", "2024-05-10 09:00 +0000"},
		{"seconds after a match", "UTC", Fields{Minutes: str("*"), Hours: str("*")}, "2024-05-10 09:00:30 +0000", "2024-05-10 09:01 +0000", "2024-05-10 09:00 +0000"},
		{"weekdays at nine, from friday evening", "UTC", Fields{Hours: str("9"), Weekdays: str("mon-fri")}, "2024-05-10 18:00 +0000", "2024-05-13 09:00 +0000", "2024-05-10 09:00 +0000"},
		{"year wrap", "UTC", Fields{Hours: str("23"), Minutes: str("59"), Days: str("31"), Months: str("dec")}, "2024-12-31 23:59:01 +0000", "2025-12-31 23:59 +0000", "2024-12-31 23:59 +0000"},
		{"new year from december", "UTC", Fields{Days: str("1"), Months: str("jan")}, "2024-12-15 00:00 +0000", "2025-01-01 00:00 +0000", "2024-01-01 00:00 +0000"},
		{"day 31 skips 30-day months", "UTC", Fields{Days: str("31")}, "2024-04-01 00:00 +0000", "2024-05-31 00:00 +0000", "2024-03-31 00:00 +0000"},
		{"day 30 skips february", "UTC", Fields{Days: str("30")}, "2024-01-30 00:00 +0000", "2024-03-30 00:00 +0000", "2024-01-30 00:00 +0000"},
		{"feb 29 only in leap years", "UTC", Fields{Days: str("29"), Months: str("feb")}, "2024-03-01 00:00 +0000", "2028-02-29 00:00 +0000", "2024-02-29 00:00 +0000"},
		{"feb 29 skips 2100", "UTC", Fields{Days: str("29"), Months: str("feb")}, "2097-01-01 00:00 +0000", "2104-02-29 00:00 +0000", "2096-02-29 00:00 +0000"},
		{"feb 29 on a monday", "UTC", Fields{Days: str("29"), Months: str("feb"), Weekdays: str("mon")}, "2016-03-01 00:00 +0000", "2044-02-29 00:00 +0000", "2016-02-29 00:00 +0000"},
		{"first monday of the month (AND)", "UTC", Fields{Hours: str("8"), Days: str("1-7"), Weekdays: str("mon")}, "2024-05-07 00:00 +0000", "2024-06-03 08:00 +0000", "2024-05-06 08:00 +0000"},
		{"friday the 13th", "UTC", Fields{Days: str("13"), Weekdays: str("fri")}, "2024-09-14 00:00 +0000", "2024-12-13 00:00 +0000", "2024-09-13 00:00 +0000"},
		{"time zone shifts the day", "Asia/Kolkata", Fields{Hours: str("9")}, "2024-05-10 04:00 +0000", "2024-05-11 09:00 +0530", "2024-05-10 09:00 +0530"},

		// America/Los_Angeles springs forward at 2024-03-10 02:00 PST -> 03:00 PDT.
		{"spring forward: skipped time fires at the transition", "America/Los_Angeles", Fields{Hours: str("2"), Minutes: str("30")},
			"2024-03-10 00:00 -0800", "2024-03-10 03:00 -0700", "2024-03-09 02:30 -0800"},
		{"spring forward: prev after the transition", "America/Los_Angeles", Fields{Hours: str("2"), Minutes: str("30")},
			"2024-03-10 04:00 -0700", "2024-03-11 02:30 -0700", "2024-03-10 03:00 -0700"},
		{"spring forward: skipped time and 3:00 share an instant", "America/Los_Angeles", Fields{Hours: str("2,3"), Minutes: str("0,30")},
			"2024-03-10 01:59 -0800", "2024-03-10 03:00 -0700", "2024-03-09 03:30 -0800"},
		{"spring forward: after the shared instant", "America/Los_Angeles", Fields{Hours: str("2,3"), Minutes: str("0,30")},
			"2024-03-10 03:00 -0700", "2024-03-10 03:30 -0700", "2024-03-10 03:00 -0700"},
		{"spring forward: every minute continues at 3:00", "America/Los_Angeles", Fields{Hours: str("*"), Minutes: str("*")},
			"2024-03-10 01:59 -0800", "2024-03-10 03:00 -0700", "2024-03-10 01:59 -0800"},

		// It falls back at 2024-11-03 02:00 PDT -> 01:00 PST.
		{"fall back: repeated time fires at its first occurrence", "America/Los_Angeles", Fields{Hours: str("1"), Minutes: str("30")},
			"2024-11-03 00:00 -0700", "2024-11-03 01:30 -0700", "2024-11-02 01:30 -0700"},
		{"fall back: not again in the repeated hour", "America/Los_Angeles", Fields{Hours: str("1"), Minutes: str("30")},
			"2024-11-03 01:45 -0700", "2024-11-04 01:30 -0800", "2024-11-03 01:30 -0700"},
		{"fall back: prev from the second 1:15", "America/Los_Angeles", Fields{Hours: str("1"), Minutes: str("30")},
			"2024-11-03 01:15 -0800", "2024-11-04 01:30 -0800", "2024-11-03 01:30 -0700"},
		{"fall back: every 15 minutes skips the repeated hour", "America/Los_Angeles", Fields{Hours: str("*"), Minutes: str("*/15")},
			"2024-11-03 01:50 -0700", "2024-11-03 02:00 -0800", "2024-11-03 01:45 -0700"},
		{"fall back: inside the repeated hour", "America/Los_Angeles", Fields{Hours: str("*"), Minutes: str("*/15")},
			"2024-11-03 01:20 -0800", "2024-11-03 02:00 -0800", "2024-11-03 01:45 -0700"},
		{"fall back: 2:00 exists once", "America/Los_Angeles", Fields{Hours: str("2")},
			"2024-11-03 01:59 -0800", "2024-11-03 02:00 -0800", "2024-11-02 02:00 -0700"},

		// Australia/Lord_Howe shifts by 30 minutes: 2024-10-06 02:00 +1030 -> 02:30 +1100.
		{"half-hour spring forward", "Australia/Lord_Howe", Fields{Hours: str("2"), Minutes: str("15")},
			"2024-10-05 12:00 +1030", "2024-10-06 02:30 +1100", "2024-10-05 02:15 +1030"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := mustLocation(t, tc.zone)
			p := mustParse(t, tc.fields)
			now := at(t, tc.t)
			next, ok := p.Next(now, loc)
			if tc.wantNext == "" {
				if ok {
					t.Errorf("Next(%v) = %v, want never", now, next)
				}
			} else if want := at(t, tc.wantNext); !ok || !next.Equal(want) {
				t.Errorf("Next(%v) = %v, %v; want %v", now, next, ok, want.In(loc))
			}
			if want := at(t, tc.wantPrev); func() bool { prev, ok := p.Prev(now, loc); return !ok || !prev.Equal(want) }() {
				prev, ok := p.Prev(now, loc)
				t.Errorf("Prev(%v) = %v, %v; want %v", now, prev, ok, want.In(loc))
			}
		})
	}
}

func TestWeekday(t *testing.T) {
	for day := time.Date(1599, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() < 2410; day = day.AddDate(0, 0, 1) {
		if got := weekday(day.Year(), int(day.Month()), day.Day()); got != int(day.Weekday()) {
			t.Fatalf("weekday(%v) = %d, want %d", day, got, day.Weekday())
		}
	}
}

// bruteForce lists the instants in [from, to) at which p fires in loc,
// following the definition literally: walking whole minutes, an instant fires
// when the wall clock first reaches a matching local minute (one skipped by a
// spring-forward jump included). It shares no code with the search.
func bruteForce(p *Pattern, loc *time.Location, from, to time.Time) []time.Time {
	matches := func(c time.Time) bool {
		return p.minutes&(1<<c.Minute()) != 0 && p.hours&(1<<c.Hour()) != 0 && p.days&(1<<c.Day()) != 0 &&
			p.months&(1<<int(c.Month())) != 0 && p.weekdays&(1<<int(c.Weekday())) != 0
	}
	wall := func(u time.Time) time.Time {
		l := u.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	var fires []time.Time
	// Start three hours early so the highest wall clock reached is known.
	reached := wall(from.Add(-3 * time.Hour))
	for u := from.Add(-3 * time.Hour).Truncate(time.Minute).Add(time.Minute); u.Before(to); u = u.Add(time.Minute) {
		w := wall(u)
		fired := false
		for c := reached.Add(time.Minute); !c.After(w); c = c.Add(time.Minute) {
			fired = fired || matches(c)
		}
		if w.After(reached) {
			reached = w
		}
		if fired && !u.Before(from) {
			fires = append(fires, u)
		}
	}
	return fires
}

func randomField(r *rand.Rand, lo, hi int, names []string) *string {
	value := func() string {
		v := lo + r.IntN(hi-lo+1)
		if names != nil && r.IntN(2) == 0 {
			return names[v-lo]
		}
		return fmt.Sprint(v)
	}
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return str("*")
	case 2:
		return str(fmt.Sprintf("*/%d", 1+r.IntN(hi-lo+1)))
	case 3:
		a, b := lo+r.IntN(hi-lo+1), lo+r.IntN(hi-lo+1)
		if a > b {
			a, b = b, a
		}
		return str(fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(3)))
	default:
		var list []string
		for range 1 + r.IntN(4) {
			list = append(list, value())
		}
		return str(strings.Join(list, ","))
	}
}

// TestNextPrevMatchBruteForce compares Next and Prev with bruteForce over random
// patterns and instants, half of them near DST transitions.
func TestNextPrevMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zones := []string{"UTC", "America/Los_Angeles", "Europe/London", "Australia/Lord_Howe", "America/Santiago", "Asia/Kathmandu"}
	transitions := []string{"2024-03-10 10:00 +0000", "2024-11-03 09:00 +0000", "2024-03-31 01:00 +0000", "2024-10-27 01:00 +0000",
		"2024-10-05 15:30 +0000", "2024-04-06 15:00 +0000", "2024-09-08 04:00 +0000", "2024-04-07 03:00 +0000"}
	const window = 10 * 24 * time.Hour
	weekdayNames := []string{"sun", "Mon", "TUE", "wednesday", "thu", "fri", "Saturday"}
	monthNames := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	for i := range 150 {
		f := Fields{
			Minutes:  randomField(r, 0, 59, nil),
			Hours:    randomField(r, 0, 23, nil),
			Days:     randomField(r, 1, 31, nil),
			Months:   randomField(r, 1, 12, monthNames),
			Weekdays: randomField(r, 0, 6, weekdayNames),
		}
		p, err := Parse(f)
		if err != nil {
			continue // e.g. days 30-31 in February only
		}
		loc := mustLocation(t, zones[r.IntN(len(zones))])
		now := at(t, transitions[r.IntN(len(transitions))]).Add(time.Duration(r.Int64N(int64(12*time.Hour))) - 6*time.Hour)
		if r.IntN(2) == 0 {
			now = time.Date(2020+r.IntN(10), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
		}
		fires := bruteForce(p, loc, now.Add(-window), now.Add(window))
		var wantPrev, wantNext time.Time
		for _, fire := range fires {
			if !fire.After(now) {
				wantPrev = fire
			} else if wantNext.IsZero() {
				wantNext = fire
			}
		}
		name := fmt.Sprintf("case %d: %v in %s from %v", i, p, loc, now)
		next, ok := p.Next(now, loc)
		switch {
		case !ok:
			t.Errorf("%s: Next never fires", name)
		case !wantNext.IsZero() && !next.Equal(wantNext):
			t.Errorf("%s: Next = %v, brute force %v", name, next, wantNext.In(loc))
		case wantNext.IsZero() && next.Before(now.Add(window)):
			t.Errorf("%s: Next = %v, brute force found none before %v", name, next, now.Add(window))
		}
		prev, ok := p.Prev(now, loc)
		switch {
		case !ok:
			t.Errorf("%s: Prev never fired", name)
		case !wantPrev.IsZero() && !prev.Equal(wantPrev):
			t.Errorf("%s: Prev = %v, brute force %v", name, prev, wantPrev.In(loc))
		case wantPrev.IsZero() && !prev.Before(now.Add(-window)):
			t.Errorf("%s: Prev = %v, brute force found none after %v", name, prev, now.Add(-window))
		}
	}
}
