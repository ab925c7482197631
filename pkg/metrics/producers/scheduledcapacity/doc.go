// Package scheduledcapacity evaluates the scheduleSpec of a MetricsProducer: a
// default replica count overridden by behaviours that are active between a
// start and an end pattern. It is pure (no client, no I/O) and free of API
// types, so the producer controller and the admission webhook both adapt
// their objects to Fields and Spec.
//
// # Patterns
//
// A Pattern is a strongly-typed crontab with five optional fields. Omitted
// minutes and hours mean 0; omitted days, months and weekdays mean any. Each
// field is a comma list whose elements are
//
//   - "*": every value of the field;
//   - "n": one value;
//   - "a-b": every value from a to b inclusive (a must not be after b);
//   - "*/s": every s-th value from the field's lowest value;
//   - "a-b/s": every s-th value from a to b;
//   - "a/s": every s-th value from a to the field's highest value.
//
// Ranges are minutes 0-59, hours 0-23, days 1-31 (day of the month), months
// 1-12 or jan..dec / january..december, weekdays 0-6 or sun..sat /
// sunday..saturday where 7 is also Sunday (so "fri-sun" and "5-7" are Friday
// to Sunday). Names are case-insensitive; spaces around elements are ignored.
// A step may not exceed the field's size (60 for minutes, 7 for weekdays,
// whose highest value for "*" and "a/s" is 6).
//
// Days and weekdays are combined with AND: {days: "1-7", weekdays: "mon"} is
// the first Monday of each month. This differs from Vixie cron (and from the
// robfig/cron library the original Karpenter used), which ORs the two when
// both are restricted; with separate typed fields the AND reading is the one a
// reader expects, and it makes "Friday the 13th" expressible. A pattern whose
// dates can never occur (days "30" in months "feb") is rejected by Parse.
//
// # Time zones and daylight saving
//
// Patterns are matched against the wall clock of the schedule's time zone, at
// minute resolution. A pattern fires at the first instant the wall clock
// reaches a matching local time. Hence:
//   - a local time skipped by a spring-forward transition (2:30 on the second
//     Sunday of March in America/Los_Angeles) fires at the transition itself
//     (3:00 PDT), as cron runs jobs of a skipped interval right after it;
//   - a local time repeated by a fall-back transition (1:30 on the first Sunday
//     of November) fires once, at its first occurrence (1:30 PDT).
//
// # Behaviours
//
// A behaviour is active at t when its most recent start at or before t is
// later than its most recent end at or before t; when a start and an end fire
// at the same instant the end wins, so a behaviour is active on [start, end).
// A behaviour without an end is active forever after its first start. When
// several behaviours are active, the first listed sets the value; when none
// is, the value is the default.
package scheduledcapacity
