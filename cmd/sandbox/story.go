package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/test/sandbox"
)

const (
	stepTimeout  = 3 * time.Minute
	pollInterval = 500 * time.Millisecond
	// The story's workload: a Deployment on the reserved-capacity group.
	workload = "web"
)

func applyExamples(ctx context.Context, stack *sandbox.Stack, logf func(string, ...any)) error {
	examples, err := sandbox.Examples()
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		if err := sandbox.Apply(ctx, stack.Env.Client, examples[name]); err != nil {
			return err
		}
		logf("applied docs/examples/%s", name)
	}
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		for _, object := range examples[name] {
			what := fmt.Sprintf("%s/%s Ready", strings.ToLower(object.GetKind()), object.GetName())
			var last string
			if err := waitFor(ctx, what, &last, func() (bool, error) {
				ready, why, err := sandbox.Ready(ctx, stack.Env.Client, object)
				last = why
				return ready, err
			}); err != nil {
				return err
			}
		}
	}
	logf("every example is Ready")
	return nil
}

// playStory drives the examples through load and back, printing the timeline as it goes.
func playStory(ctx context.Context, stack *sandbox.Stack, begin time.Time) error {
	c := stack.Env.Client
	storyBegin := time.Now()
	t := &timeline{client: c, begin: begin}
	ctx, stopTimeline := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		t.run(ctx)
	}()
	defer func() {
		stopTimeline()
		watching.Wait()
	}()

	t.step("40 messages arrive on SQS queue %q; queue-workers wants one node per 10", sandbox.QueueName)
	if err := stack.Emulator.SendMessages(sandbox.QueueName, 40, "job"); err != nil {
		return err
	}
	if err := t.waitGroup(ctx, "queue-workers", 4, 4); err != nil {
		return err
	}
	t.step("the workers drain the queue")
	if err := stack.Emulator.PurgeQueue(sandbox.QueueName); err != nil {
		return err
	}
	if err := t.waitGroup(ctx, "queue-workers", 0, 0); err != nil {
		return err
	}

	t.step("Deployment %q asks for 10 pods of 1 CPU on the general group (4 CPUs per node); CPU reservations target 70%%", workload)
	if err := c.Create(ctx, sandbox.Workload(workload, 10)); err != nil {
		return fmt.Errorf("creating the story's deployment, %w", err)
	}
	if err := t.waitPods(ctx, 10); err != nil {
		return err
	}
	t.step("Deployment %q scales down to 1 pod", workload)
	if err := c.Patch(ctx, sandbox.Workload(workload, 1), client.Merge); err != nil {
		return fmt.Errorf("scaling the story's deployment, %w", err)
	}
	if err := t.waitGroup(ctx, "general", 1, 1); err != nil {
		return err
	}
	if err := t.waitPods(ctx, 1); err != nil {
		return err
	}
	t.step("story done in %s", time.Since(storyBegin).Round(time.Second))
	return nil
}

// timeline prints a line for a node group each time what a user would watch changes: the
// metric its HorizontalAutoscaler reads, desired and current replicas, Ready nodes, and for
// the general group the story's pods Running.
type timeline struct {
	client client.Client
	begin  time.Time

	mu   sync.Mutex
	last map[string]groupState
}

type groupState struct {
	metric           string
	desired, current int32
	nodesReady       int
	podsRunning      int
	pods             int
}

func (s groupState) String(group string) string {
	line := fmt.Sprintf("%-13s %-22s desired %-2d current %-2d nodes Ready %-2d", group, s.metric, s.desired, s.current, s.nodesReady)
	if group == "general" {
		line += fmt.Sprintf(" pods Running %d/%d", s.podsRunning, s.pods)
	}
	return line
}

func (t *timeline) step(format string, args ...any) {
	fmt.Printf("%s  ▶ %s\n", clockSince(t.begin), fmt.Sprintf(format, args...))
}

func (t *timeline) run(ctx context.Context) {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		for _, group := range []string{"queue-workers", "general"} {
			state, err := t.observe(ctx, group)
			if err != nil {
				continue
			}
			t.mu.Lock()
			if t.last == nil {
				t.last = map[string]groupState{}
			}
			if previous, ok := t.last[group]; !ok || previous != state {
				t.last[group] = state
				fmt.Printf("%s    %s\n", clockSince(t.begin), state.String(group))
			}
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (t *timeline) observe(ctx context.Context, group string) (groupState, error) {
	var state groupState
	ha := &v1alpha1.HorizontalAutoscaler{}
	if err := t.client.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: group}, ha); err != nil {
		return state, err
	}
	state.desired = ptr.Deref(ha.Status.DesiredReplicas, 0)
	state.metric = "metric n/a"
	if len(ha.Status.CurrentMetrics) > 0 && ha.Status.CurrentMetrics[0].Prometheus != nil &&
		ha.Status.CurrentMetrics[0].Prometheus.Current.Value != nil {
		value := ha.Status.CurrentMetrics[0].Prometheus.Current.Value.AsApproximateFloat64()
		if group == "general" {
			state.metric = fmt.Sprintf("cpu reserved %.0f%%", value*100)
		} else {
			state.metric = fmt.Sprintf("queue length %.0f", value)
		}
	}
	sng := &v1alpha1.ScalableNodeGroup{}
	if err := t.client.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: group}, sng); err != nil {
		return state, err
	}
	state.current = ptr.Deref(sng.Status.Replicas, 0)
	groupNodes := &corev1.NodeList{}
	if err := t.client.List(ctx, groupNodes, client.MatchingLabels{sandbox.NodeGroupLabel: group}); err != nil {
		return state, err
	}
	for _, node := range groupNodes.Items {
		if nodes.IsReady(&node) {
			state.nodesReady++
		}
	}
	if group == "general" {
		pods := &corev1.PodList{}
		if err := t.client.List(ctx, pods, client.InNamespace(sandbox.Namespace), client.MatchingLabels{"app": workload}); err != nil {
			return state, err
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil {
				continue
			}
			state.pods++
			if pod.Status.Phase == corev1.PodRunning {
				state.podsRunning++
			}
		}
	}
	return state, nil
}

// waitGroup waits until the group has replicas instances in service and nodes Ready nodes,
// and its HorizontalAutoscaler wants no other size.
func (t *timeline) waitGroup(ctx context.Context, group string, replicas int32, nodes int) error {
	var last string
	return waitFor(ctx, fmt.Sprintf("%s at %d replicas with %d nodes Ready", group, replicas, nodes), &last, func() (bool, error) {
		state, err := t.observe(ctx, group)
		last = state.String(group)
		return err == nil && state.desired == replicas && state.current == replicas && state.nodesReady == nodes, nil
	})
}

// waitPods waits until exactly running pods of the story's Deployment run and the general
// group is steady (desired = current).
func (t *timeline) waitPods(ctx context.Context, running int) error {
	var last string
	return waitFor(ctx, fmt.Sprintf("%d pods Running on general", running), &last, func() (bool, error) {
		state, err := t.observe(ctx, "general")
		last = state.String("general")
		return err == nil && state.pods == running && state.podsRunning == running && state.desired == state.current, nil
	})
}

// waitFor polls done until it returns true, an error, or stepTimeout passes; last, when set,
// describes the latest observation for the timeout's message.
func waitFor(ctx context.Context, what string, last *string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		ok, err := done()
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				//nolint:errorlint // err, possibly nil, is context for the timeout, not its cause.
				return fmt.Errorf("waiting for %s: not within %s (last: %s, error: %v)", what, stepTimeout, *last, err)
			}
			return ctx.Err()
		case <-ticker.C:
		}
	}
}
