package scheduledcapacity

import (
	"fmt"
	"strings"
	"time"
)

// Time zones are read from the system's zoneinfo (the image carries Debian's tzdata), not
// embedded with time/tzdata: zone rules then update with the image, and test/image fails if the
// image lacks them.

// MaxTransitions bounds how many behaviour transitions Evaluate examines when
// looking for the next change of value. Transitions that do not change the
// value (a behaviour whose replicas equal the value it replaces) are the only
// ones that can exhaust it; the current value is always exact.
const MaxTransitions = 4096

// Spec is a scheduleSpec as the user wrote it.
type Spec struct {
	// Timezone is an IANA time zone name; empty means UTC.
	Timezone        string
	DefaultReplicas int32
	Behaviors       []BehaviorSpec
}

// BehaviorSpec is one behaviour as the user wrote it. A nil End never fires:
// the behaviour stays active from its first start on.
type BehaviorSpec struct {
	Replicas int32
	Start    Fields
	End      *Fields
}

// Schedule is a compiled Spec.
type Schedule struct {
	location        *time.Location
	defaultReplicas int32
	behaviors       []behavior
}

type behavior struct {
	replicas   int32
	start, end *Pattern // end is nil when the behaviour never ends
}

// Evaluation is the value of a schedule at an instant, and its next change.
type Evaluation struct {
	Value int32
	// Next is nil when the value never changes again, or does not change within
	// MaxTransitions behaviour transitions.
	Next *Change
}

// Change is an instant at which the value changes, and the value from then on.
type Change struct {
	Time  time.Time
	Value int32
}

// NewSchedule compiles a Spec. Errors are *FieldError or FieldErrors whose Paths are
// relative to the spec ("timezone", "behaviors[0].start.weekdays").
func NewSchedule(spec Spec) (*Schedule, error) {
	location, err := ParseTimezone(spec.Timezone)
	if err != nil {
		return nil, err
	}
	s := &Schedule{location: location, defaultReplicas: spec.DefaultReplicas}
	for i, b := range spec.Behaviors {
		start, err := Parse(b.Start)
		if err != nil {
			return nil, withPathPrefix(err, fmt.Sprintf("behaviors[%d].start.", i))
		}
		compiled := behavior{replicas: b.Replicas, start: start}
		if b.End != nil {
			if compiled.end, err = Parse(*b.End); err != nil {
				return nil, withPathPrefix(err, fmt.Sprintf("behaviors[%d].end.", i))
			}
		}
		s.behaviors = append(s.behaviors, compiled)
	}
	return s, nil
}

func withPathPrefix(err error, prefix string) error {
	fieldErrs := AllFieldErrors(err)
	if fieldErrs == nil {
		return fmt.Errorf("%s%w", prefix, err)
	}
	prefixed := make(FieldErrors, len(fieldErrs))
	for i, fieldErr := range fieldErrs {
		prefixed[i] = &FieldError{Path: prefix + fieldErr.Path, Value: fieldErr.Value, Reason: fieldErr.Reason}
	}
	return prefixed
}

// ParseTimezone loads an IANA time zone; empty means UTC. "Local" is refused:
// a schedule must not depend on the zone of the machine evaluating it.
func ParseTimezone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(name, "local") {
		return nil, &FieldError{Path: "timezone", Value: name, Reason: fmt.Sprintf("%q is not an IANA time zone", name)}
	}
	location, err := time.LoadLocation(name)
	if err != nil {
		return nil, &FieldError{Path: "timezone", Value: name, Reason: fmt.Sprintf("%q is not an IANA time zone", name)}
	}
	return location, nil
}

// Location is the time zone the schedule is evaluated in.
func (s *Schedule) Location() *time.Location {
	return s.location
}

// behaviorState is a behaviour's activity at the current instant of the
// search, and when it next flips (zero: never).
type behaviorState struct {
	active bool
	flips  time.Time
}

// Evaluate returns the value at now and the next instant it changes.
func (s *Schedule) Evaluate(now time.Time) Evaluation {
	states := make([]behaviorState, len(s.behaviors))
	for i := range s.behaviors {
		active := s.behaviors[i].activeAt(now, s.location)
		states[i] = behaviorState{active: active, flips: s.behaviors[i].nextFlip(now, active, s.location)}
	}
	current := s.value(states)
	for range MaxTransitions {
		// A behaviour that is active and never flips hides every later one for good.
		relevant := len(states)
		var at time.Time
		for i, state := range states {
			if state.flips.IsZero() {
				if state.active {
					relevant = i
					break
				}
				continue
			}
			if at.IsZero() || state.flips.Before(at) {
				at = state.flips
			}
		}
		if at.IsZero() || !s.canChange(states[:relevant], current) {
			return Evaluation{Value: current}
		}
		for i := range states[:relevant] {
			if states[i].flips.Equal(at) {
				states[i].active = !states[i].active
				states[i].flips = s.behaviors[i].nextFlip(at, states[i].active, s.location)
			}
		}
		if value := s.value(states); value != current {
			return Evaluation{Value: current, Next: &Change{Time: at, Value: value}}
		}
	}
	return Evaluation{Value: current}
}

// canChange reports whether flips of the relevant behaviours can ever move the
// value away from current: some behaviour that is active or will flip, or the
// value shown when none of them is active, must differ from it.
func (s *Schedule) canChange(relevant []behaviorState, current int32) bool {
	fallback := s.defaultReplicas
	if len(relevant) < len(s.behaviors) {
		fallback = s.behaviors[len(relevant)].replicas // active for good
	}
	if fallback != current {
		return true
	}
	for i, state := range relevant {
		if (state.active || !state.flips.IsZero()) && s.behaviors[i].replicas != current {
			return true
		}
	}
	return false
}

func (s *Schedule) value(states []behaviorState) int32 {
	for i, state := range states {
		if state.active {
			return s.behaviors[i].replicas
		}
	}
	return s.defaultReplicas
}

// activeAt reports whether the latest start at or before t is later than the
// latest end at or before t.
func (b *behavior) activeAt(t time.Time, loc *time.Location) bool {
	start, ok := b.start.Prev(t, loc)
	if !ok {
		return false
	}
	if b.end == nil {
		return true
	}
	end, ok := b.end.Prev(t, loc)
	return !ok || start.After(end)
}

// nextFlip returns the first instant after t at which the behaviour stops
// being active (its next end) or becomes active (its next start at which it
// does not also end); zero when there is none.
func (b *behavior) nextFlip(t time.Time, active bool, loc *time.Location) time.Time {
	var flip time.Time
	switch {
	case active && b.end == nil:
		return time.Time{}
	case active:
		flip, _ = b.end.Next(t, loc)
	default:
		flip, _ = b.start.nextExcluding(t, loc, b.end)
	}
	return flip
}
