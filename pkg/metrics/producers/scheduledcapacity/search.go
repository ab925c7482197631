package scheduledcapacity

import (
	"math/bits"
	"time"
)

// searchYears bounds every search. Dates matching a pattern repeat with the
// 400-year Gregorian cycle (146097 days, a whole number of weeks), so a pattern
// that Parse accepted fires at least once in any window this long.
const searchYears = 401

// civil is a wall-clock minute, independent of any time zone.
type civil struct {
	year                     int
	month, day, hour, minute int
}

func civilOf(t time.Time) civil {
	return civil{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute()}
}

func (c civil) naive() time.Time {
	return time.Date(c.year, time.Month(c.month), c.day, c.hour, c.minute, 0, 0, time.UTC)
}

func (c civil) add(d time.Duration) civil {
	return civilOf(c.naive().Add(d))
}

// Next returns the first instant after t at which the pattern fires in loc,
// and false only if it never does (impossible for a parsed pattern).
func (p *Pattern) Next(t time.Time, loc *time.Location) (time.Time, bool) {
	return p.nextExcluding(t, loc, nil)
}

// Prev returns the last instant at or before t at which the pattern fired in
// loc, and false if it did not fire in the preceding 400 years.
func (p *Pattern) Prev(t time.Time, loc *time.Location) (time.Time, bool) {
	t = t.In(loc)
	// Every local minute after the wall clock of t fires after t, except during
	// the repeated interval following a fall-back transition, where the wall
	// clock has already been further ahead.
	from := civilOf(t)
	if start, _ := t.ZoneBounds(); !start.IsZero() {
		_, before := start.Add(-time.Second).Zone()
		_, after := t.Zone()
		if repeat := time.Duration(before-after) * time.Second; repeat > 0 && t.Sub(start) < repeat {
			from = from.add(repeat)
		}
	}
	for {
		c, ok := p.prevLocal(from)
		if !ok {
			return time.Time{}, false
		}
		if fire := resolve(c, loc); !fire.After(t) {
			return fire, true
		}
		from = c.add(-time.Minute)
	}
}

// nextExcluding returns the first instant after t at which p fires and
// exclude (when not nil) does not.
func (p *Pattern) nextExcluding(t time.Time, loc *time.Location, exclude *Pattern) (time.Time, bool) {
	t = t.In(loc)
	// Local minutes before the wall clock of t fire at or before t.
	from := civilOf(t)
	for {
		c, ok := p.nextLocal(from, exclude)
		if !ok {
			return time.Time{}, false
		}
		from = c.add(time.Minute)
		fire := resolve(c, loc)
		if !fire.After(t) {
			continue // a repeated local time, or t's own minute
		}
		// Distinct local times share an instant only when a spring-forward
		// transition skips them, so exclude may fire here through another one.
		if exclude != nil && exclude.firesAt(fire, loc) {
			t = fire
			continue
		}
		return fire, true
	}
}

func (p *Pattern) firesAt(instant time.Time, loc *time.Location) bool {
	next, ok := p.Next(instant.Add(-time.Nanosecond), loc)
	return ok && next.Equal(instant)
}

// resolve returns the instant at which the wall clock of loc first reaches c:
// the earlier of two occurrences, or the transition that skipped c.
func resolve(c civil, loc *time.Location) time.Time {
	naive := c.naive().Unix()
	guess := time.Date(c.year, time.Month(c.month), c.day, c.hour, c.minute, 0, 0, loc)
	_, offset := guess.Zone()
	start, end := guess.ZoneBounds()
	if start.IsZero() && end.IsZero() {
		return guess // a zone without transitions
	}
	offsets := []int{offset}
	var transitions []time.Time
	for _, transition := range []time.Time{start, end} {
		if transition.IsZero() {
			continue
		}
		transitions = append(transitions, transition)
		_, after := transition.Zone()
		_, before := transition.Add(-time.Second).Zone()
		offsets = append(offsets, before, after)
	}
	var earliest time.Time
	for _, offset := range offsets {
		candidate := time.Unix(naive-int64(offset), 0).In(loc)
		if _, actual := candidate.Zone(); actual == offset && (earliest.IsZero() || candidate.Before(earliest)) {
			earliest = candidate
		}
	}
	if !earliest.IsZero() {
		return earliest
	}
	for _, transition := range transitions {
		_, after := transition.Zone()
		_, before := transition.Add(-time.Second).Zone()
		at := transition.Unix()
		if before < after && naive-int64(before) >= at && naive-int64(after) < at {
			return transition.In(loc)
		}
	}
	return guess
}

func (p *Pattern) matchesDate(year, month, day int) bool {
	return p.months&(1<<month) != 0 && p.days&(1<<day) != 0 && p.weekdays&(1<<weekday(year, month, day)) != 0
}

// nextLocal returns the first local minute at or after from that matches p
// and, when exclude is not nil, does not match exclude.
func (p *Pattern) nextLocal(from civil, exclude *Pattern) (civil, bool) {
	// When p's times of day are all exclude's, no time on an excluded date is left.
	timesExcluded := exclude != nil && p.hours&^exclude.hours == 0 && p.minutes&^exclude.minutes == 0
	for year := from.year; year <= from.year+searchYears; year++ {
		month0 := 1
		if year == from.year {
			month0 = from.month
		}
		for month, ok := nextBit(p.months, month0); ok; month, ok = nextBit(p.months, month+1) {
			atFromMonth := year == from.year && month == from.month
			day0 := 1
			if atFromMonth {
				day0 = from.day
			}
			last := daysIn(year, month)
			for day, ok := nextBit(p.days, day0); ok && day <= last; day, ok = nextBit(p.days, day+1) {
				if p.weekdays&(1<<weekday(year, month, day)) == 0 {
					continue
				}
				dateExcluded := exclude != nil && exclude.matchesDate(year, month, day)
				if dateExcluded && timesExcluded {
					continue
				}
				atFromDay := atFromMonth && day == from.day
				hour0 := 0
				if atFromDay {
					hour0 = from.hour
				}
				for hour, ok := nextBit(p.hours, hour0); ok; hour, ok = nextBit(p.hours, hour+1) {
					minutes := p.minutes
					if dateExcluded && exclude.hours&(1<<hour) != 0 {
						minutes &^= exclude.minutes
					}
					minute0 := 0
					if atFromDay && hour == from.hour {
						minute0 = from.minute
					}
					if minute, ok := nextBit(minutes, minute0); ok {
						return civil{year, month, day, hour, minute}, true
					}
				}
			}
		}
	}
	return civil{}, false
}

// prevLocal returns the last local minute at or before from that matches p.
func (p *Pattern) prevLocal(from civil) (civil, bool) {
	for year := from.year; year >= from.year-searchYears; year-- {
		month0 := 12
		if year == from.year {
			month0 = from.month
		}
		for month, ok := prevBit(p.months, month0); ok; month, ok = prevBit(p.months, month-1) {
			atFromMonth := year == from.year && month == from.month
			day0 := daysIn(year, month)
			if atFromMonth {
				day0 = min(from.day, day0)
			}
			for day, ok := prevBit(p.days, day0); ok; day, ok = prevBit(p.days, day-1) {
				if p.weekdays&(1<<weekday(year, month, day)) == 0 {
					continue
				}
				atFromDay := atFromMonth && day == from.day
				hour0 := 23
				if atFromDay {
					hour0 = from.hour
				}
				for hour, ok := prevBit(p.hours, hour0); ok; hour, ok = prevBit(p.hours, hour-1) {
					minute0 := 59
					if atFromDay && hour == from.hour {
						minute0 = from.minute
					}
					if minute, ok := prevBit(p.minutes, minute0); ok {
						return civil{year, month, day, hour, minute}, true
					}
				}
			}
		}
	}
	return civil{}, false
}

// nextBit returns the lowest member of set that is >= from.
func nextBit(set uint64, from int) (int, bool) {
	if from >= 64 {
		return 0, false
	}
	if from > 0 {
		set &^= 1<<from - 1
	}
	if set == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(set), true
}

// prevBit returns the highest member of set that is <= upTo.
func prevBit(set uint64, upTo int) (int, bool) {
	if upTo < 0 {
		return 0, false
	}
	if upTo < 63 {
		set &= 1<<(upTo+1) - 1
	}
	if set == 0 {
		return 0, false
	}
	return 63 - bits.LeadingZeros64(set), true
}

func isLeap(year int) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

func daysIn(year, month int) int {
	if month == 2 && !isLeap(year) {
		return 28
	}
	return daysInMonth[month]
}

// weekday returns 0 (Sunday) to 6 for a proleptic Gregorian date, counting
// days from 1970-01-01, a Thursday.
func weekday(year, month, day int) int {
	// Shift the year to start in March so the leap day is its last day.
	if month <= 2 {
		year--
		month += 12
	}
	era := floorDiv(year, 400)
	yearOfEra := year - era*400
	dayOfYear := (153*(month-3)+2)/5 + day - 1
	dayOfEra := yearOfEra*365 + yearOfEra/4 - yearOfEra/100 + dayOfYear
	days := era*146097 + dayOfEra - 719468
	return ((days+4)%7 + 7) % 7
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
