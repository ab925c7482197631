package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/node/emptiness"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/test/awsemulator"
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
			if err := waitReady(ctx, stack, object); err != nil {
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

	shop := sandbox.Shop()
	var replicas int32
	for _, d := range shop {
		replicas += ptr.Deref(d.Spec.Replicas, 0)
	}
	t.step("%d shop pods arrive for Provisioner %q (spot): web 16 × 500m and api 10 × 2 CPU spread over the zones, cache 4 × 1 CPU one per node",
		replicas, sandbox.ProvisionerName)
	t.watchLaunches(stack)
	for _, d := range shop {
		if err := c.Create(ctx, d); err != nil {
			return fmt.Errorf("creating the story's deployment %s, %w", d.Name, err)
		}
	}
	if err := t.waitShop(ctx, int(replicas)); err != nil {
		return err
	}
	t.step("kubectl get nodeclaims: each launched node's NodeClaim, matched by provider id to the Node its kubelet registered")
	t.kubectl(ctx, stack.Env.KubeconfigPath, "get", "nodeclaims")

	t.step("the shop scales down to cache 1 × 1 CPU, web and api to 0; Provisioner %q opts in to consolidation, which decides on its empty nodes too, in place of its ttlSecondsAfterEmpty", sandbox.ProvisionerName)
	provisioner := &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: sandbox.ProvisionerName}}
	// With both, ttlSecondsAfterEmpty would not apply, and the webhook would warn so.
	consolidate := []byte(`{"spec":{"consolidation":{"enabled":true,"budget":"50%"},"ttlSecondsAfterEmpty":null}}`)
	if err := c.Patch(ctx, provisioner, client.RawPatch(types.MergePatchType, consolidate)); err != nil {
		return fmt.Errorf("enabling consolidation on provisioner %s, %w", sandbox.ProvisionerName, err)
	}
	for _, d := range shop {
		scaled := []byte(`{"spec":{"replicas":0}}`)
		if d.Name == "shop-cache" {
			scaled = []byte(`{"spec":{"replicas":1}}`)
		}
		if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, scaled)); err != nil {
			return fmt.Errorf("scaling the story's deployment %s, %w", d.Name, err)
		}
	}
	if err := t.waitConsolidated(ctx, 1); err != nil {
		return err
	}
	if err := t.playNodePoolChapter(ctx, stack); err != nil {
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
	// launches, once set, is the Provisioner's and NodePool's chapters: instances launched, nodes
	// Ready, shop pods Running.
	launches *launches
}

// removalReasons are the Events on a node the timeline prints: the reallocator's actions and
// the emptiness TTL's.
var removalReasons = []string{consolidation.ReasonDeleted, consolidation.ReasonReplacing, emptiness.ReasonEmptyDeleted}

// launches is what the timeline printed of the Provisioner's chapter.
type launches struct {
	emulator *awsemulator.Emulator
	printed  map[string]bool // instance id (launched), "terminated/" id, node name (Ready), "event/" uid
	running  int             // shop pods Running; -1 before the first line
	cost     float64         // $/h of the running instances
	nodes    int
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

// kubectl prints a kubectl command's output under the timeline's clock, indented as its lines;
// a failure is printed too: the story does not depend on it.
func (t *timeline) kubectl(ctx context.Context, kubeconfig string, args ...string) {
	out, err := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput() //nolint:gosec // G204: kubectl with the story's own arguments.
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Printf("%s    %s\n", clockSince(t.begin), line)
	}
	if err != nil {
		fmt.Printf("%s    (kubectl %s: %v)\n", clockSince(t.begin), strings.Join(args, " "), err)
	}
}

// watchLaunches starts the Provisioner's chapter of the timeline.
func (t *timeline) watchLaunches(stack *sandbox.Stack) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.launches = &launches{emulator: stack.Emulator, printed: map[string]bool{}, running: -1}
}

func (t *timeline) run(ctx context.Context) {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		t.observeLaunches(ctx)
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

// observeLaunches prints each instance launched for a Provisioner or a NodePool (type, zone,
// capacity type, price), each of their nodes going Ready and the shop pods Running.
func (t *timeline) observeLaunches(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.launches
	if l == nil {
		return
	}
	l.cost, l.nodes = 0, 0
	for _, instance := range l.emulator.EC2Instances() {
		if instance.State == "shutting-down" || instance.State == "terminated" {
			if l.printed[instance.InstanceID] && !l.printed["terminated/"+instance.InstanceID] {
				l.printed["terminated/"+instance.InstanceID] = true
				fmt.Printf("%s    terminated %s %-12s in %s  %-9s $%.4f/h\n", clockSince(t.begin), instance.InstanceID, instance.InstanceType,
					instance.AvailabilityZone, instance.CapacityType, instance.PricePerHour)
			}
			continue
		}
		l.cost += instance.PricePerHour
		l.nodes++
		if !l.printed[instance.InstanceID] {
			l.printed[instance.InstanceID] = true
			fmt.Printf("%s    launched %s %-12s in %s  %-9s $%.4f/h\n", clockSince(t.begin), instance.InstanceID, instance.InstanceType,
				instance.AvailabilityZone, instance.CapacityType, instance.PricePerHour)
		}
	}
	for _, poolLabel := range []string{v1alpha5.ProvisionerNameLabelKey, v1.NodePoolLabelKey} {
		launched := &corev1.NodeList{}
		if err := t.client.List(ctx, launched, client.HasLabels{poolLabel}); err != nil {
			continue
		}
		for _, node := range launched.Items {
			if nodes.IsReady(&node) && !l.printed[node.Name] {
				l.printed[node.Name] = true
				fmt.Printf("%s    node %s Ready (%s, %s %s)\n", clockSince(t.begin), node.Name, node.Labels[corev1.LabelInstanceTypeStable], poolLabel, node.Labels[poolLabel])
			}
		}
	}
	// Why nodes went: the reallocator's and the emptiness TTL's Events.
	events := &corev1.EventList{}
	if err := t.client.List(ctx, events); err == nil {
		for _, e := range events.Items {
			if e.InvolvedObject.Kind != "Node" || !slices.Contains(removalReasons, e.Reason) || l.printed["event/"+string(e.UID)] {
				continue
			}
			l.printed["event/"+string(e.UID)] = true
			fmt.Printf("%s    node %s %s: %s\n", clockSince(t.begin), e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	pods := &corev1.PodList{}
	if err := t.client.List(ctx, pods, client.InNamespace(sandbox.Namespace), client.HasLabels{sandbox.ShopLabel}); err != nil {
		return
	}
	running := 0
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			running++
		}
	}
	if running != l.running {
		l.running = running
		fmt.Printf("%s    shop pods Running %d/%d\n", clockSince(t.begin), running, len(pods.Items))
	}
}

// waitShop waits until pods shop pods run, then prints what their nodes cost.
func (t *timeline) waitShop(ctx context.Context, pods int) error {
	var last string
	if err := waitFor(ctx, fmt.Sprintf("%d shop pods Running", pods), &last, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		last = fmt.Sprintf("%d Running", t.launches.running)
		return t.launches.running == pods, nil
	}); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.step("%d shop pods Running on %d launched nodes: $%.4f/h in total", pods, t.launches.nodes, t.launches.cost)
	return nil
}

// waitConsolidated waits until pods shop pods run on one launched node, the others removed
// by consolidation and emptiness, then prints what is left of the cost.
func (t *timeline) waitConsolidated(ctx context.Context, pods int) error {
	peak := t.launches.cost
	var last string
	if err := waitFor(ctx, fmt.Sprintf("%d shop pods Running on one launched node", pods), &last, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		last = fmt.Sprintf("%d Running on %d nodes", t.launches.running, t.launches.nodes)
		return t.launches.running == pods && t.launches.nodes == 1, nil
	}); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.step("%d shop pods Running on %d launched node: $%.4f/h in total, down from $%.4f/h", pods, t.launches.nodes, t.launches.cost, peak)
	return nil
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
