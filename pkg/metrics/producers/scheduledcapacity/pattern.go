package scheduledcapacity

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Fields is the user's spelling of a pattern; nil fields take their defaults
// (minutes and hours 0, the others any).
type Fields struct {
	Minutes  *string
	Hours    *string
	Days     *string
	Months   *string
	Weekdays *string
}

// Pattern is a parsed set of local wall-clock minutes. Each field is a bit set
// indexed by the field's value.
type Pattern struct {
	minutes, hours, days, months, weekdays uint64
}

// FieldError reports an invalid field. Path names the field ("weekdays", or
// "behaviors[1].start.weekdays" once a Spec is compiled), Value is the field
// as written, and Reason quotes the offending element.
type FieldError struct {
	Path   string
	Value  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// field describes one pattern field: its valid values, its "*" span, and the
// names it accepts.
type field struct {
	path     string
	noun     string // with its article, for messages
	min, max int    // accepted numbers
	starMax  int    // highest value of "*" and "a/s" (differs from max only for weekdays)
	names    map[string]int
	// sevenIsSunday folds 7 onto 0 and lets a range end on Sunday ("fri-sun").
	sevenIsSunday bool
}

var (
	minutesField = field{path: "minutes", noun: "a minute", min: 0, max: 59, starMax: 59}
	hoursField   = field{path: "hours", noun: "an hour", min: 0, max: 23, starMax: 23}
	daysField    = field{path: "days", noun: "a day of the month", min: 1, max: 31, starMax: 31}
	monthsField  = field{path: "months", noun: "a month", min: 1, max: 12, starMax: 12, names: namesFrom(1,
		"january", "february", "march", "april", "may", "june",
		"july", "august", "september", "october", "november", "december")}
	weekdaysField = field{path: "weekdays", noun: "a weekday", min: 0, max: 7, starMax: 6, names: namesFrom(0,
		"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"), sevenIsSunday: true}
)

// namesFrom maps full names and their three-letter abbreviations to numbers
// counted from first.
func namesFrom(first int, full ...string) map[string]int {
	names := map[string]int{}
	for i, name := range full {
		names[name] = first + i
		names[name[:3]] = first + i
	}
	return names
}

// Parse validates fields and returns the pattern they describe. Errors are
// FieldErrors naming each invalid field and its offending element.
func Parse(f Fields) (*Pattern, error) {
	p := &Pattern{minutes: 1, hours: 1, days: starSet(daysField), months: starSet(monthsField), weekdays: starSet(weekdaysField)}
	var invalid FieldErrors
	for _, target := range []struct {
		field *field
		value *string
		set   *uint64
	}{
		{&minutesField, f.Minutes, &p.minutes},
		{&hoursField, f.Hours, &p.hours},
		{&daysField, f.Days, &p.days},
		{&monthsField, f.Months, &p.months},
		{&weekdaysField, f.Weekdays, &p.weekdays},
	} {
		if target.value == nil {
			continue
		}
		set, err := target.field.parse(*target.value)
		if err != nil {
			invalid = append(invalid, AllFieldErrors(err)...)
			continue
		}
		*target.set = set
	}
	if len(invalid) > 0 {
		return nil, invalid
	}
	if !p.datesExist() {
		return nil, FieldErrors{{Path: daysField.path, Value: deref(f.Days), Reason: fmt.Sprintf(
			"%q never occurs in months %q", deref(f.Days), deref(f.Months))}}
	}
	return p, nil
}

// FieldErrors are every invalid field of a pattern or schedule, in field order, so that one
// look at an error shows all there is to fix.
type FieldErrors []*FieldError

func (e FieldErrors) Error() string {
	messages := make([]string, len(e))
	for i, fieldErr := range e {
		messages[i] = fieldErr.Error()
	}
	return strings.Join(messages, "; ")
}

// Unwrap lets errors.As find each *FieldError.
func (e FieldErrors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, fieldErr := range e {
		errs[i] = fieldErr
	}
	return errs
}

// AllFieldErrors lists the *FieldError that err carries: each of a FieldErrors, or err itself;
// none for an error of another kind.
func AllFieldErrors(err error) []*FieldError {
	var all FieldErrors
	if errors.As(err, &all) {
		return all
	}
	var one *FieldError
	if errors.As(err, &one) {
		return []*FieldError{one}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func starSet(f field) uint64 {
	return rangeSet(f.min, f.starMax, 1)
}

func rangeSet(lo, hi, step int) uint64 {
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << v
	}
	return set
}

func (f *field) errorf(value, format string, args ...any) *FieldError {
	return &FieldError{Path: f.path, Value: value, Reason: fmt.Sprintf(format, args...)}
}

func (f *field) parse(value string) (uint64, error) {
	if strings.TrimSpace(value) == "" {
		return 0, f.errorf(value, "value is empty")
	}
	var set uint64
	for element := range strings.SplitSeq(value, ",") {
		element = strings.TrimSpace(element)
		if element == "" {
			return 0, f.errorf(value, "%q has an empty list element", value)
		}
		elementSet, err := f.parseElement(value, element)
		if err != nil {
			return 0, err
		}
		set |= elementSet
	}
	if f.sevenIsSunday && set&(1<<7) != 0 {
		set = set&^(1<<7) | 1 // 7 is Sunday, like 0
	}
	return set, nil
}

func (f *field) parseElement(value, element string) (uint64, error) {
	span, stepText, hasStep := strings.Cut(element, "/")
	span = strings.TrimSpace(span)
	step := 1
	if hasStep {
		stepText = strings.TrimSpace(stepText)
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || strings.HasPrefix(stepText, "+") {
			return 0, f.errorf(value, "%q has a step %q that is not a positive number", element, stepText)
		}
		if size := f.starMax - f.min + 1; n > size {
			return 0, f.errorf(value, "%q has a step %d larger than the field's %d values", element, n, size)
		}
		step = n
	}
	var lo, hi int
	switch from, to, isRange := strings.Cut(span, "-"); {
	case span == "*":
		lo, hi = f.min, f.starMax
	case isRange:
		var err error
		if lo, err = f.parseValue(value, from); err != nil {
			return 0, err
		}
		if hi, err = f.parseValue(value, to); err != nil {
			return 0, err
		}
		if f.sevenIsSunday && hi == 0 && lo > 0 {
			hi = 7 // "fri-sun" ends on the Sunday after Saturday
		}
		if lo > hi {
			return 0, f.errorf(value, "%q is a range whose start is after its end", element)
		}
	default:
		var err error
		if lo, err = f.parseValue(value, span); err != nil {
			return 0, err
		}
		hi = lo
		if hasStep {
			hi = f.starMax
		}
	}
	return rangeSet(lo, hi, step), nil
}

func (f *field) parseValue(value, token string) (int, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return 0, f.errorf(value, "%q is missing %s", value, f.noun)
	}
	if n, ok := f.names[strings.ToLower(token)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(token)
	if err != nil || strings.HasPrefix(token, "+") {
		return 0, f.errorf(value, "%q is not %s", token, f.noun)
	}
	if n < f.min || n > f.max {
		return 0, f.errorf(value, "%q is not %s (%d-%d)", token, f.noun, f.min, f.max)
	}
	return n, nil
}

// daysInMonth is the longest each month gets, February in a leap year.
var daysInMonth = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// datesExist reports whether some year has a date matching the pattern. Every
// calendar date, February 29 included, falls on every weekday within the
// 400-year Gregorian cycle, so only months and days can conflict.
func (p *Pattern) datesExist() bool {
	for month := 1; month <= 12; month++ {
		if p.months&(1<<month) != 0 && p.days&rangeSet(1, daysInMonth[month], 1) != 0 {
			return true
		}
	}
	return false
}

// Fields renders the pattern canonically: numbers, ranges and "*", every field
// set. Parse(p.Fields()) returns an equal pattern.
func (p *Pattern) Fields() Fields {
	render := func(f field, set uint64) *string {
		s := renderSet(f, set)
		return &s
	}
	return Fields{
		Minutes:  render(minutesField, p.minutes),
		Hours:    render(hoursField, p.hours),
		Days:     render(daysField, p.days),
		Months:   render(monthsField, p.months),
		Weekdays: render(weekdaysField, p.weekdays),
	}
}

func (p *Pattern) String() string {
	f := p.Fields()
	return fmt.Sprintf("minutes=%s hours=%s days=%s months=%s weekdays=%s", *f.Minutes, *f.Hours, *f.Days, *f.Months, *f.Weekdays)
}

func renderSet(f field, set uint64) string {
	if set == starSet(f) {
		return "*"
	}
	var elements []string
	for set != 0 {
		lo := bits.TrailingZeros64(set)
		hi := lo
		for hi+1 < 64 && set&(1<<(hi+1)) != 0 {
			hi++
		}
		set &^= rangeSet(lo, hi, 1)
		switch hi - lo {
		case 0:
			elements = append(elements, strconv.Itoa(lo))
		case 1:
			elements = append(elements, strconv.Itoa(lo), strconv.Itoa(hi))
		default:
			elements = append(elements, strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
		}
	}
	return strings.Join(elements, ",")
}
