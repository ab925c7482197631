package scheduling_test

import (
	"flag"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling/check"
)

func workloadInput(pods int) scheduling.Input {
	types := workloadInstanceTypes()
	return scheduling.Input{Pods: workloadPods(pods), Pools: []scheduling.Pool{workloadProvisioner(types)}}
}

// verifyWorkload fails unless every pod is placed and every placement passes the checker.
func verifyWorkload(tb testing.TB, in scheduling.Input, r *scheduling.Results) {
	tb.Helper()
	for _, e := range r.Unschedulable {
		tb.Errorf("pod %s unschedulable: %s", e.Pod.Name, e.Reason)
	}
	verified(tb, in, r)
}

// verified fails for each error the independent checker finds in the plan (the first twenty),
// and reports whether it found none.
func verified(tb testing.TB, in scheduling.Input, r *scheduling.Results) bool {
	tb.Helper()
	errs := check.Verify(in, r)
	for i, err := range errs {
		if i == 20 {
			tb.Errorf("... and %d more", len(errs)-i)
			break
		}
		tb.Error(err)
	}
	return len(errs) == 0
}

// TestWorkload runs the benchmark workload at sizes that fit in `go test`, on the synthetic
// catalogue and the emulator's real one, with the checker and the lower bound, planned by the
// one-pod-at-a-time scheduler and with the batch packer (Input.Pack), which never costs more.
func TestWorkload(t *testing.T) {
	for _, catalogue := range []struct {
		name  string
		types []*cloudprovider.InstanceType
	}{{"synthetic", workloadInstanceTypes()}, {"real", emulatorInstanceTypes(t)}} {
		name, types := catalogue.name, catalogue.types
		for _, n := range []int{100, 1000} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				in := scheduling.Input{Pods: workloadPods(n), Pools: []scheduling.Pool{workloadProvisioner(types)}}
				greedy := 0.0
				lb := lowerBound(t, types, in.Pods)
				for _, pack := range []bool{false, true} {
					in.Pack = nil
					if pack {
						in.Pack = unboundedPacker()
					}
					r := scheduling.Schedule(in)
					verifyWorkload(t, in, r)
					if len(r.Bindings) != n {
						t.Fatalf("pack %t: bound %d pods, want %d", pack, len(r.Bindings), n)
					}
					for _, node := range r.NewNodes {
						if len(node.Pods) == 0 {
							t.Errorf("pack %t: new node %s holds no pod", pack, node.Hostname)
						}
					}
					// Every hostname anti-affinity pod needs a node of its own.
					if len(r.NewNodes) < n/5 {
						t.Errorf("pack %t: %d new nodes, want at least %d", pack, len(r.NewNodes), n/5)
					}
					if r.Price() < lb*(1-1e-9) {
						t.Errorf("pack %t: %.4f usd/hr beats the lower bound %.4f usd/hr, which is then no bound", pack, r.Price(), lb)
					}
					if !pack {
						greedy = r.Price()
					} else if r.Price() > greedy*(1+1e-9) {
						t.Errorf("the batch packer's plan costs %.4f usd/hr, more than the scheduler's own %.4f", r.Price(), greedy)
					}
					t.Logf("%d pods, pack %t: %d nodes, %.4f usd/hr, lower bound %.4f usd/hr (%.3f×)", n, pack, len(r.NewNodes), r.Price(), lb, r.Price()/lb)
				}
			})
		}
	}
}

// withPacker is whether the scheduling benchmarks plan with the batch packer (Input.Pack),
// within packerBudget, the controller's default unless set; they report planner_packer 1 when
// the packer weighed every group, 0 without it or when its budget ran out first (the plan is
// then partly the one-pod-at-a-time scheduler's).
var (
	withPacker   = flag.Bool("packer", false, "BenchmarkScheduling and BenchmarkSchedulingRealCatalogue: plan with the batch packer (Input.Pack)")
	packerBudget = flag.Duration("packer-budget", scheduling.DefaultPackBudget, "with -packer: the batch packer's budget")
)

// benchmarkPacker is the packer the benchmarks' flags ask for, or nil.
func benchmarkPacker() *scheduling.Packer {
	if !*withPacker {
		return nil
	}
	return &scheduling.Packer{Budget: *packerBudget, Clock: clock.RealClock{}}
}

// unboundedPacker is a batch packer no budget stops.
func unboundedPacker() *scheduling.Packer {
	return &scheduling.Packer{Budget: time.Duration(math.MaxInt64), Clock: clock.RealClock{}}
}

// packerDecided is planner_packer: 1 if the batch packer weighed every group of the plan.
func packerDecided(r *scheduling.Results) float64 {
	return b2f(r.Packed.Planner() == "packer")
}

// BenchmarkScheduling times one full scheduling pass of the shared workload.
func BenchmarkScheduling(b *testing.B) {
	for _, n := range []int{100, 1000, 5000, 10000, 20000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			in := workloadInput(n)
			dropTerms(b, in.Pods)
			in.Pack = benchmarkPacker()
			lb := lowerBound(b, in.Pools[0].InstanceTypes, in.Pods)
			var r *scheduling.Results
			var elapsed, cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start, startCPU := time.Now(), processCPU(b)
				r = scheduling.Schedule(in)
				elapsed += time.Since(start)
				cpu += processCPU(b) - startCPU
			}
			b.StopTimer()
			verifyWorkload(b, in, r)
			b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "pods/sec")
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "pods/cpu-sec")
			b.ReportMetric(float64(len(r.NewNodes)), "nodes")
			b.ReportMetric(r.Price(), "usd/hr")
			b.ReportMetric(lb, "lb_usd/hr")
			b.ReportMetric(r.Price()/lb, "usd/lb")
			b.ReportMetric(packerDecided(r), "planner_packer")
			b.ReportMetric(float64(r.Packed.Took.Microseconds())/1000, "packer_ms")
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// processCPU is the CPU time the process has used. Per CPU-second, throughput is comparable
// between runs on a machine whose other load varies, which wall time is not.
func processCPU(tb testing.TB) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		tb.Fatalf("getrusage, %v", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
