package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"karpenter.sh/karpenter/test/scale/scaletest"
)

// clockTicks is the kernel's USER_HZ, the unit of a process's CPU time in /proc: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// procSample is a process's CPU time and resident memory, read from /proc.
type procSample struct {
	cpu time.Duration
	rss int64 // bytes
}

func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/stat, %w", pid, err)
	}
	rss, err := parseStatusRSS(string(status))
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/status, %w", pid, err)
	}
	return procSample{cpu: cpu, rss: rss}, nil
}

// parseStatCPU is utime + stime of a /proc/<pid>/stat line. The command name, field 2, is in
// parentheses and may hold spaces, so fields are counted after its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing CPU ticks %q, %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// parseStatusRSS is VmRSS of /proc/<pid>/status, in bytes.
func parseStatusRSS(status string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		value, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmRSS %q is not in kB", value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing VmRSS %q, %w", value, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// meanDuration is the mean of the observations a histogram or summary of seconds gained
// between two scrapes.
func meanDuration(before, after scaletest.Series, name string, match map[string]string) time.Duration {
	sumBefore, countBefore := before.Histogram(name, match)
	sumAfter, countAfter := after.Histogram(name, match)
	if countAfter <= countBefore {
		return 0
	}
	return time.Duration((sumAfter - sumBefore) / (countAfter - countBefore) * float64(time.Second))
}

// rates is (after − before) ÷ seconds for every key of after; a key new in after started at 0.
func rates(before, after map[string]float64, seconds float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if r := (v - before[k]) / seconds; r > 0 {
			out[k] = r
		}
	}
	return out
}

// square is the metric of the lag targets: a square wave between low and high with the given
// cycle, each target shifted by its offset so that changes fall everywhere in a period. It is
// the PromQL query below, evaluated at time t.
type square struct {
	cycle, offset time.Duration
}

// query is the wave in PromQL: 5 while floor((time() + offset) / cycle) is even, 10 while odd.
func (w square) query() string {
	return fmt.Sprintf("5 + 5 * (floor((vector(time()) + %g) / %g) %% 2)", w.offset.Seconds(), w.cycle.Seconds())
}

// high tells whether the wave is at 10 at t.
func (w square) high(t time.Time) bool {
	return int64(math.Floor(float64(t.UnixNano()+w.offset.Nanoseconds())/float64(w.cycle.Nanoseconds())))%2 != 0
}

// lastChange is the last time at or before t the wave went to the level it had at t.
func (w square) lastChange(t time.Time) time.Time {
	shifted := t.UnixNano() + w.offset.Nanoseconds()
	edge := shifted - shifted%w.cycle.Nanoseconds()
	return time.Unix(0, edge-w.offset.Nanoseconds())
}

// changeFor is the change of the wave a target reached replicas (1 at the low level, 2 at the
// high one) for, seen at seen: the last change to that level before seen.
func (w square) changeFor(replicas int64, seen time.Time) time.Time {
	change := w.lastChange(seen)
	if w.high(change) != (replicas == 2) {
		change = change.Add(-w.cycle)
	}
	return change
}

// nextBoundary is the first multiple of period (since the Unix epoch) at or after t.
func nextBoundary(t time.Time, period time.Duration) time.Time {
	if r := t.UnixNano() % period.Nanoseconds(); r != 0 {
		return t.Add(period - time.Duration(r))
	}
	return t
}
