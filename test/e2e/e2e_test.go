package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/test/sandbox"
)

// The queue example's HorizontalAutoscaler wants one node per 10 messages and waits this long
// before scaling down; the controller evaluates every controllerPeriod.
const (
	queueScaleDownWindow = 15 * time.Second
	controllerPeriod     = 2 * time.Second
)

func TestExamplesApplyAndBecomeReady(t *testing.T) {
	examples, err := sandbox.Examples()
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 3 {
		t.Fatalf("docs/examples holds %d files, want the queue, reserved-capacity and scheduled examples", len(examples))
	}
	for _, file := range slices.Sorted(maps.Keys(examples)) {
		t.Run(file, func(t *testing.T) {
			apply(t, examples[file])
			waitReady(t, examples[file])
		})
	}
}

func TestPrometheusUnavailableNeverScalesDown(t *testing.T) {
	apply(t, example(t, "queue-workers.yaml"))
	purgeQueue(t)
	waitGroup(t, "queue-workers", 0)
	sendMessages(t, 20)
	waitGroup(t, "queue-workers", 2)

	if err := stack.Env.Prometheus.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := stack.Env.Prometheus.Restart(context.Background()); err != nil {
				t.Fatalf("restarting Prometheus, %v", err)
			}
		}
	}
	defer restart()
	purgeQueue(t)
	purged := time.Now()

	// Without Prometheus the empty queue is invisible. Watch past the scale-down window and a
	// few more evaluations: the metric must be reported unavailable and the group kept.
	eventually.Holds(t, "the HorizontalAutoscaler reporting its metric unavailable past its scale-down window", func() (bool, string, error) {
		g, err := observe(t, "queue-workers")
		if err != nil {
			return false, "", err
		}
		if g.specReplicas != 2 || g.desired < 2 {
			t.Fatalf("scaled down without metrics: %s", g)
		}
		return !g.active && time.Since(purged) > queueScaleDownWindow+3*controllerPeriod, g.String(), nil
	}, eventually.Timeout(waitTimeout))

	restart()
	waitGroup(t, "queue-workers", 0)
}

func TestControllerKilledMidScaleConvergesWithoutLostOrRepeatedStep(t *testing.T) {
	apply(t, example(t, "queue-workers.yaml"))
	purgeQueue(t)
	waitGroup(t, "queue-workers", 0)

	// Every instance the group ever has during the test: a repeated step would launch more
	// than the final size, a lost one fewer.
	launched := map[string]bool{}
	record := func(g group) {
		for id := range g.instances {
			launched[id] = true
		}
	}
	sendMessages(t, 30)
	eventually.Holds(t, "queue-workers scaling to 3", func() (bool, string, error) {
		g, err := observe(t, "queue-workers")
		if err != nil {
			return false, "", err
		}
		record(g)
		return g.specReplicas == 3, g.String(), nil
	}, eventually.Timeout(waitTimeout))
	stack.KillController()
	g, err := observe(t, "queue-workers")
	if err != nil {
		t.Fatal(err)
	}
	record(g)
	t.Logf("controller killed mid-scale: %s", g)

	// More work arrives while the controller is down.
	sendMessages(t, 30)
	if err := stack.StartController(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "queue-workers converging on 6", func() (bool, string, error) {
		g, err := observe(t, "queue-workers")
		if err != nil {
			return false, "", err
		}
		record(g)
		inService := 0
		for _, state := range g.instances {
			if state == "InService" {
				inService++
			}
		}
		return g.specReplicas == 6 && g.statusReplicas == 6 && inService == 6 && g.nodesReady == 6, g.String(), nil
	}, eventually.Timeout(waitTimeout))
	if len(launched) != 6 {
		t.Errorf("instances launched during the test: %d (%v), want exactly 6", len(launched), slices.Sorted(maps.Keys(launched)))
	}
	final, err := observe(t, "queue-workers")
	if err != nil {
		t.Fatal(err)
	}
	for id := range launched {
		if final.instances[id] != "InService" {
			t.Errorf("instance %s is %q, want InService: the group went down and up again", id, final.instances[id])
		}
	}

	purgeQueue(t)
	waitGroup(t, "queue-workers", 0)
}

func TestQueueBacklogScalesNodeGroupFromZeroAndBack(t *testing.T) {
	t.Parallel()
	apply(t, example(t, "queue-workers.yaml"))
	purgeQueue(t)
	waitGroup(t, "queue-workers", 0)

	sendMessages(t, 25) // ceil(25 / 10) = 3 nodes
	waitGroup(t, "queue-workers", 3)

	purgeQueue(t)
	waitGroup(t, "queue-workers", 0)
}

func TestReservedUtilizationAddsNodesUntilPodsRun(t *testing.T) {
	t.Parallel()
	apply(t, example(t, "reserved-capacity.yaml"))
	waitGroup(t, "general", 1)

	// Ten pods of one CPU on nodes of four: one node runs four, and CPU reservations above
	// the 70 % target add nodes until every pod runs.
	ctx := context.Background()
	web := sandbox.Workload("e2e-web", 10)
	if err := stack.Env.Client.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stack.Env.Client.Delete(ctx, web); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	eventually.Holds(t, "all 10 pods Running", func() (bool, string, error) {
		running, total, err := runningPods(t, "e2e-web")
		if err != nil {
			return false, "", err
		}
		g, err := observe(t, "general")
		if err != nil {
			return false, "", err
		}
		return running == 10 && total == 10, fmt.Sprintf("%d/%d Running; %s", running, total, g), nil
	}, eventually.Timeout(waitTimeout))
	g, err := observe(t, "general")
	if err != nil {
		t.Fatal(err)
	}
	if g.nodesReady < 3 {
		t.Errorf("10 pods of 1 CPU run on %d nodes of 4 CPUs", g.nodesReady)
	}

	if err := stack.Env.Client.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitGroup(t, "general", 1)
}

func TestScheduledCapacitySetsReplicasAtWallClockBoundaries(t *testing.T) {
	t.Parallel()
	objects := example(t, "scheduled-capacity.yaml")
	apply(t, objects)
	waitReady(t, objects)
	t.Cleanup(func() { apply(t, objects) })

	// A behavior one minute long, starting at the next minute with at least 20 s to spare,
	// in the test's time zone.
	zone, location := "UTC", time.UTC
	if name := os.Getenv("TZ"); name != "" {
		if loaded, err := time.LoadLocation(name); err == nil {
			zone, location = name, loaded
		}
	}
	now := time.Now().In(location)
	// The second minute boundary from now: a minute or more away, so the schedule is written
	// and evaluated before it starts even on a busy machine.
	start := now.Truncate(time.Minute).Add(2 * time.Minute)
	end := start.Add(time.Minute)
	pattern := func(at time.Time) map[string]string {
		return map[string]string{"minutes": strconv.Itoa(at.Minute()), "hours": strconv.Itoa(at.Hour())}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"scheduleSpec": map[string]any{
		"timezone": zone, "defaultReplicas": 0,
		"behaviors": []any{map[string]any{"replicas": 2, "start": pattern(start), "end": pattern(end)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	producer := &v1alpha1.MetricsProducer{}
	producer.Namespace, producer.Name = sandbox.Namespace, "batch-hours"
	if err := stack.Env.Client.Patch(ctx, producer, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	t.Logf("schedule: 2 replicas from %s to %s (%s)", start.Format(time.TimeOnly), end.Format(time.TimeOnly), zone)

	eventually.Holds(t, "the producer announcing the start", func() (bool, string, error) {
		if err := stack.Env.Client.Get(ctx, client.ObjectKeyFromObject(producer), producer); err != nil {
			return false, "", err
		}
		s := producer.Status.ScheduledCapacity
		if s == nil || s.NextValueTime == nil {
			return false, fmt.Sprintf("%+v", s), nil
		}
		return ptr.Deref(s.CurrentValue, -1) == 0 && s.NextValueTime.Time.Equal(start) && ptr.Deref(s.NextValue, -1) == 2,
			fmt.Sprintf("current %d, next %d at %s", ptr.Deref(s.CurrentValue, -1), ptr.Deref(s.NextValue, -1), s.NextValueTime), nil
	}, eventually.Timeout(waitTimeout))

	// Each boundary: the group must not change before it, and must follow after it.
	for _, boundary := range []struct {
		at       time.Time
		replicas int32
	}{{start, 2}, {end, 0}} {
		until := time.Until(boundary.at) + waitTimeout
		eventually.Holds(t, fmt.Sprintf("batch at %d from %s", boundary.replicas, boundary.at.Format(time.TimeOnly)), func() (bool, string, error) {
			g, err := observe(t, "batch")
			if err != nil {
				return false, "", err
			}
			if g.specReplicas == boundary.replicas && time.Now().Before(boundary.at) {
				t.Fatalf("batch set to %d before %s: %s", boundary.replicas, boundary.at.Format(time.TimeOnly), g)
			}
			return g.specReplicas == boundary.replicas && g.nodesReady == int(boundary.replicas), g.String(), nil
		}, eventually.Timeout(until))
	}
}
