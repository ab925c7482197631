package scheduledcapacity

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, that its errors name a field, and
// that an accepted pattern round-trips through Fields and fires both before
// and after a DST transition.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), "", "", "", "", "")
	f.Add(uint8(31), "*/15", "9-17", "1-7", "jan-jun/2", "Mon-Fri")
	f.Add(uint8(31), "0,30", "2", "29", "feb", "sun")
	f.Add(uint8(24), "", "", "30", "Feb", "")
	f.Add(uint8(16), "", "", "", "", "fri-sun,7")
	f.Add(uint8(1), "5/7", "", "", "", "")
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2024, 11, 3, 1, 30, 0, 0, la)
	f.Fuzz(func(t *testing.T, present uint8, minutes, hours, days, months, weekdays string) {
		pick := func(bit uint8, v string) *string {
			if present&bit == 0 {
				return nil
			}
			return &v
		}
		fields := Fields{pick(1, minutes), pick(2, hours), pick(4, days), pick(8, months), pick(16, weekdays)}
		p, err := Parse(fields)
		if err != nil {
			var fieldErr *FieldError
			if !errors.As(err, &fieldErr) {
				t.Fatalf("Parse() error %T %v is not a *FieldError", err, err)
			}
			if !strings.Contains("minutes hours days months weekdays", fieldErr.Path) || fieldErr.Reason == "" {
				t.Fatalf("Parse() error %q names no field", err)
			}
			return
		}
		again, err := Parse(p.Fields())
		if err != nil || *again != *p {
			t.Fatalf("Parse(%v.Fields()) = %v, %v", p, again, err)
		}
		next, ok := p.Next(now, la)
		if !ok || !next.After(now) {
			t.Fatalf("%v: Next(%v) = %v, %v", p, now, next, ok)
		}
		prev, ok := p.Prev(now, la)
		if !ok || prev.After(now) {
			t.Fatalf("%v: Prev(%v) = %v, %v", p, now, prev, ok)
		}
		if before, ok := p.Prev(next.Add(-time.Nanosecond), la); !ok || !before.Equal(prev) {
			t.Fatalf("%v: Prev just before Next(%v) = %v, want %v", p, now, before, prev)
		}
	})
}
