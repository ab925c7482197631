package scheduledcapacity

import (
	"errors"
	"testing"
)

func str(v string) *string { return &v }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields Fields
		want   string // canonical String()
	}{
		{"defaults", Fields{}, "minutes=0 hours=0 days=* months=* weekdays=*"},
		{"numbers", Fields{Minutes: str("30"), Hours: str("9"), Days: str("15"), Months: str("6"), Weekdays: str("3")},
			"minutes=30 hours=9 days=15 months=6 weekdays=3"},
		{"stars", Fields{Minutes: str("*"), Hours: str("*"), Days: str("*"), Months: str("*"), Weekdays: str("*")},
			"minutes=* hours=* days=* months=* weekdays=*"},
		{"lists and ranges", Fields{Minutes: str("0,15-17,45"), Hours: str("9-17")},
			"minutes=0,15-17,45 hours=9-17 days=* months=* weekdays=*"},
		{"steps", Fields{Minutes: str("*/15"), Hours: str("8-18/5"), Days: str("*/10"), Months: str("2/4")},
			"minutes=0,15,30,45 hours=8,13,18 days=1,11,21,31 months=2,6,10 weekdays=*"},
		{"weekday names", Fields{Weekdays: str("Mon-Fri")}, "minutes=0 hours=0 days=* months=* weekdays=1-5"},
		{"full weekday names any case", Fields{Weekdays: str("MONDAY,wednesday,Friday")}, "minutes=0 hours=0 days=* months=* weekdays=1,3,5"},
		{"weekday 7 is Sunday", Fields{Weekdays: str("7")}, "minutes=0 hours=0 days=* months=* weekdays=0"},
		{"range ending on Sunday", Fields{Weekdays: str("fri-sun")}, "minutes=0 hours=0 days=* months=* weekdays=0,5,6"},
		{"numeric range to 7", Fields{Weekdays: str("5-7")}, "minutes=0 hours=0 days=* months=* weekdays=0,5,6"},
		{"sunday to saturday is every day", Fields{Weekdays: str("sun-sat")}, "minutes=0 hours=0 days=* months=* weekdays=*"},
		{"weekday step stays in 0-6", Fields{Weekdays: str("*/2")}, "minutes=0 hours=0 days=* months=* weekdays=0,2,4,6"},
		{"month names", Fields{Months: str("Jan,MAR,december")}, "minutes=0 hours=0 days=* months=1,3,12 weekdays=*"},
		{"month name range with step", Fields{Months: str("jan-jun/2")}, "minutes=0 hours=0 days=* months=1,3,5 weekdays=*"},
		{"whitespace", Fields{Minutes: str(" 5 , 10 - 12 "), Weekdays: str(" mon - wed / 2 ")},
			"minutes=5,10-12 hours=0 days=* months=* weekdays=1,3"},
		{"leading zeros", Fields{Minutes: str("05"), Hours: str("09")}, "minutes=5 hours=9 days=* months=* weekdays=*"},
		{"feb 29 exists", Fields{Days: str("29"), Months: str("feb")}, "minutes=0 hours=0 days=29 months=2 weekdays=*"},
		{"day 31 in some month", Fields{Days: str("31"), Months: str("apr,may")}, "minutes=0 hours=0 days=31 months=4,5 weekdays=*"},
		{"step equal to size", Fields{Minutes: str("*/60")}, "minutes=0 hours=0 days=* months=* weekdays=*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.fields)
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if got := p.String(); got != tc.want {
				t.Errorf("Parse() = %s, want %s", got, tc.want)
			}
			again, err := Parse(p.Fields())
			if err != nil || *again != *p {
				t.Errorf("Parse(Fields()) = %v, %v; want %v", again, err, p)
			}
		})
	}
}

func TestParseReportsEveryInvalidField(t *testing.T) {
	_, err := Parse(Fields{Hours: str("25"), Weekdays: str("Mun")})
	want := `hours: "25" is not an hour (0-23); weekdays: "Mun" is not a weekday`
	if err == nil || err.Error() != want {
		t.Fatalf("Parse() error = %v, want %s", err, want)
	}
	if n := len(AllFieldErrors(err)); n != 2 {
		t.Errorf("%d field errors, want 2", n)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields Fields
		want   string
	}{
		{"unknown weekday", Fields{Weekdays: str("Mun")}, `weekdays: "Mun" is not a weekday`},
		{"unknown weekday in list", Fields{Weekdays: str("mon, Mun")}, `weekdays: "Mun" is not a weekday`},
		{"unknown month", Fields{Months: str("Janu")}, `months: "Janu" is not a month`},
		{"minute out of range", Fields{Minutes: str("60")}, `minutes: "60" is not a minute (0-59)`},
		{"hour out of range", Fields{Hours: str("24")}, `hours: "24" is not an hour (0-23)`},
		{"day zero", Fields{Days: str("0")}, `days: "0" is not a day of the month (1-31)`},
		{"month thirteen", Fields{Months: str("13")}, `months: "13" is not a month (1-12)`},
		{"weekday eight", Fields{Weekdays: str("8")}, `weekdays: "8" is not a weekday (0-7)`},
		{"empty", Fields{Hours: str("")}, `hours: value is empty`},
		{"blank", Fields{Hours: str("  ")}, `hours: value is empty`},
		{"empty element", Fields{Minutes: str("1,,2")}, `minutes: "1,,2" has an empty list element`},
		{"trailing comma", Fields{Minutes: str("1,")}, `minutes: "1," has an empty list element`},
		{"backwards range", Fields{Hours: str("17-9")}, `hours: "17-9" is a range whose start is after its end`},
		{"backwards weekday range", Fields{Weekdays: str("fri-mon")}, `weekdays: "fri-mon" is a range whose start is after its end`},
		{"zero step", Fields{Minutes: str("*/0")}, `minutes: "*/0" has a step "0" that is not a positive number`},
		{"named step", Fields{Weekdays: str("*/mon")}, `weekdays: "*/mon" has a step "mon" that is not a positive number`},
		{"huge step", Fields{Hours: str("*/25")}, `hours: "*/25" has a step 25 larger than the field's 24 values`},
		{"negative number", Fields{Minutes: str("-5")}, `minutes: "-5" is missing a minute`},
		{"half range", Fields{Minutes: str("5-")}, `minutes: "5-" is missing a minute`},
		{"plus sign", Fields{Minutes: str("+5")}, `minutes: "+5" is not a minute`},
		{"quartz question mark", Fields{Days: str("?")}, `days: "?" is not a day of the month`},
		{"cron last day", Fields{Days: str("L")}, `days: "L" is not a day of the month`},
		{"nth weekday", Fields{Weekdays: str("mon#1")}, `weekdays: "mon#1" is not a weekday`},
		{"february 30", Fields{Days: str("30"), Months: str("Feb")}, `days: "30" never occurs in months "Feb"`},
		{"day 31 in 30-day months", Fields{Days: str("31"), Months: str("apr,jun,sep,nov")}, `days: "31" never occurs in months "apr,jun,sep,nov"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.fields)
			if err == nil {
				t.Fatalf("Parse() succeeded, want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse() error = %s\nwant %s", err, tc.want)
			}
			var fieldErr *FieldError
			if !errors.As(err, &fieldErr) {
				t.Errorf("Parse() error %T is not a *FieldError", err)
			}
		})
	}
}
