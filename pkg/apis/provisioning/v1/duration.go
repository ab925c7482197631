package v1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Never is the value of a NillableDuration that never elapses.
const Never = "Never"

// NillableDuration is a duration that may be Never, written as upstream writes it: a Go
// duration of hours, minutes and seconds ("720h", "1h30m") or "Never".
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
type NillableDuration struct {
	// Duration is nil for Never.
	Duration *time.Duration `json:"-"`
}

// ParseNillableDuration reads "Never" or a duration of hours, minutes and seconds.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("%q is neither %s nor a duration, %w", s, Never, err)
	}
	return NillableDuration{Duration: &d}, nil
}

// MustParseNillableDuration is ParseNillableDuration for constants; it panics on an error.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// String is "Never", or the duration in the shortest of upstream's forms ("720h", "1h30m").
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return formatDuration(*d.Duration)
}

// formatDuration writes whole hours, minutes and seconds without the zero parts, as a user
// would: "720h" rather than Go's "720h0m0s". Sub-second parts, which the schema's pattern
// refuses, are rounded away.
func formatDuration(d time.Duration) string {
	seconds := int64(d.Round(time.Second) / time.Second)
	if seconds <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, unit := range []struct {
		size   int64
		suffix string
	}{{3600, "h"}, {60, "m"}, {1, "s"}} {
		if n := seconds / unit.size; n > 0 {
			b.WriteString(strconv.FormatInt(n, 10) + unit.suffix)
			seconds %= unit.size
		}
	}
	return b.String()
}

// MarshalJSON writes the duration as a string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a string; null leaves the duration as it is.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string, %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured writes the duration as the string JSON holds, for server-side apply and
// unstructured conversion.
func (d NillableDuration) ToUnstructured() any {
	return d.String()
}
