package main

import (
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/test/scale/scaletest"
)

func TestParseProc(t *testing.T) {
	// A command name with a space and a parenthesis, as the kernel writes it.
	stat := "4242 (kube apiserver)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 12 0 100 0 0"
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 4*time.Second {
		t.Errorf("parseStatCPU = %s, %v; want 4s (400 ticks)", cpu, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Error("a truncated stat line was accepted")
	}
	rss, err := parseStatusRSS("Name:\tcontroller\nVmRSS:\t  153600 kB\nThreads:\t12\n")
	if err != nil || rss != 150<<20 {
		t.Errorf("parseStatusRSS = %d, %v; want 150 MiB", rss, err)
	}
	if _, err := parseStatusRSS("Name:\tzombie\n"); err == nil {
		t.Error("a status without VmRSS was accepted")
	}
}

const exposition = `# TYPE requests_total counter
requests_total{verb="get",resource="pods",code="200"} 10
requests_total{verb="get",resource="pods",code="404"} 2
requests_total{verb="patch",resource="nodes",code="200"} 4
# TYPE reconcile_seconds histogram
reconcile_seconds_bucket{controller="a",le="+Inf"} 4
reconcile_seconds_sum{controller="a"} 2
reconcile_seconds_count{controller="a"} 4
reconcile_seconds_bucket{controller="b",le="+Inf"} 1
reconcile_seconds_sum{controller="b"} 10
reconcile_seconds_count{controller="b"} 1
`

func TestSeries(t *testing.T) {
	before, err := scaletest.ParseExposition(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	after, err := scaletest.ParseExposition(strings.NewReader(strings.NewReplacer(
		`code="200"} 10`, `code="200"} 30`, `reconcile_seconds_sum{controller="a"} 2`, `reconcile_seconds_sum{controller="a"} 5`,
		`reconcile_seconds_count{controller="a"} 4`, `reconcile_seconds_count{controller="a"} 10`).Replace(exposition)))
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Sum("requests_total", map[string]string{"verb": "get"})[""]; got != 32 {
		t.Errorf("sum of the gets %g, want 32", got)
	}
	r := rates(before.Sum("requests_total", nil, "verb", "code"), after.Sum("requests_total", nil, "verb", "code"), 10)
	if len(r) != 1 || r["get 200"] != 2 {
		t.Errorf("rates %v, want only get 200 at 2/s", r)
	}
	if got := meanDuration(before, after, "reconcile_seconds", map[string]string{"controller": "a"}); got != 500*time.Millisecond {
		t.Errorf("mean reconcile of a %s, want 500ms (3 s over 6)", got)
	}
	if got := meanDuration(before, after, "reconcile_seconds", map[string]string{"controller": "b"}); got != 0 {
		t.Errorf("mean reconcile of b %s, want 0 without observations", got)
	}
}

func TestSquare(t *testing.T) {
	w := square{cycle: 17 * time.Second, offset: 5 * time.Second}
	// time + 5 s crosses a multiple of 17 s at 12 s (low→high), 29 s (high→low), 46 s (low→high).
	at := func(s float64) time.Time { return time.Unix(0, int64(s*float64(time.Second))) }
	for _, tc := range []struct {
		seen     float64
		replicas int64
		changed  float64
	}{
		{seen: 12.4, replicas: 2, changed: 12},
		{seen: 30, replicas: 1, changed: 29},
		// Seen after the next change, for the one before it: a lag over a cycle.
		{seen: 30, replicas: 2, changed: 12},
		{seen: 46, replicas: 2, changed: 46},
	} {
		if got := w.changeFor(tc.replicas, at(tc.seen)); !got.Equal(at(tc.changed)) {
			t.Errorf("changeFor(%d, %gs) = %s, want %gs", tc.replicas, tc.seen, got.Sub(at(0)), tc.changed)
		}
	}
	if !w.high(at(20)) || w.high(at(10)) {
		t.Error("the wave is high from 12 s to 29 s only")
	}
	if got := w.query(); got != "5 + 5 * (floor((vector(time()) + 5) / 17) % 2)" {
		t.Errorf("query %q", got)
	}
}

func TestNextBoundary(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, int64(s*float64(time.Second))) }
	for _, tc := range []struct{ t, want float64 }{{t: 20, want: 20}, {t: 20.1, want: 30}, {t: 29.9, want: 30}} {
		if got := nextBoundary(at(tc.t), 10*time.Second); !got.Equal(at(tc.want)) {
			t.Errorf("nextBoundary(%gs) = %s, want %gs", tc.t, got.Sub(at(0)), tc.want)
		}
	}
}
