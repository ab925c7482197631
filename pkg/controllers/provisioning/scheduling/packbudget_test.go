package scheduling_test

import (
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
)

// steppingClock moves a second on at every reading, so that a budget of n seconds lets the
// packer look at the clock a fixed number of times, whatever the machine's speed.
type steppingClock struct{ now time.Time }

func (c *steppingClock) Now() time.Time {
	c.now = c.now.Add(time.Second)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestPackBudget: the batch packer stops when its budget runs out, and whatever it got to, the
// plan is a whole, verified plan costing no more than the one-pod-at-a-time scheduler's and no
// less than the unbounded packer's; a budget of nothing gives the scheduler's own plan, and one
// it does not reach the unbounded packer's.
func TestPackBudget(t *testing.T) {
	types := emulatorInstanceTypes(t)
	in := scheduling.Input{Pods: workloadPods(100), Pools: []scheduling.Pool{workloadProvisioner(types)}}
	greedy := scheduling.Schedule(in)
	if got := greedy.Packed.Planner(); got != "greedy" {
		t.Fatalf("without the packer the planner is %q, want greedy", got)
	}
	in.Pack = unboundedPacker()
	packed := scheduling.Schedule(in)
	if packed.Packed.Planner() != "packer" || packed.Packed.Repacked == 0 || packed.Price() >= greedy.Price() {
		t.Fatalf("unbounded, the packer %+v made a plan of %.4f usd/hr against the scheduler's %.4f; want a cheaper one (the workload this test needs)",
			packed.Packed, packed.Price(), greedy.Price())
	}
	stoppedSome := false
	// Budgets of 0, 1, 3, 7, … readings: stops at the first group, within groups and between
	// them, then none.
	for budget := time.Duration(0); ; budget = 2*budget + time.Second {
		in.Pack = &scheduling.Packer{Budget: budget, Clock: &steppingClock{}}
		r := scheduling.Schedule(in)
		verifyWorkload(t, in, r)
		if r.Price() > greedy.Price()*(1+1e-9) || r.Price() < packed.Price()*(1-1e-9) {
			t.Errorf("budget %d readings: %.4f usd/hr, want between the packer's %.4f and the scheduler's %.4f", budget/time.Second, r.Price(), packed.Price(), greedy.Price())
		}
		if budget == 0 && (r.Packed.Planner() != "packer-stopped" || r.Packed.Groups != 0 || r.Price() != greedy.Price() || len(r.NewNodes) != len(greedy.NewNodes)) {
			t.Errorf("no budget: %+v, %d nodes for %.4f usd/hr; want it stopped before any group, the scheduler's %d nodes for %.4f", r.Packed, len(r.NewNodes), r.Price(), len(greedy.NewNodes), greedy.Price())
		}
		if !r.Packed.Stopped {
			if r.Price() != packed.Price() || len(r.NewNodes) != len(packed.NewNodes) {
				t.Errorf("budget %d readings, not reached: %d nodes for %.4f usd/hr, want the unbounded packer's %d for %.4f", budget/time.Second, len(r.NewNodes), r.Price(), len(packed.NewNodes), packed.Price())
			}
			break
		}
		stoppedSome = stoppedSome || r.Packed.Groups > 0
		if budget > time.Hour {
			t.Fatal("the packer never finished within its budget")
		}
	}
	if !stoppedSome {
		t.Error("no budget stopped the packer after it began weighing groups")
	}
}
