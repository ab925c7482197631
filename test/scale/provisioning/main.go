// Command provisioning measures the allocator on the sandbox's stack (real control plane,
// kube-scheduler, kwok, the AWS emulator, the controller as a process). See
// docs/benchmarks.md.
//
// --workload latency (the default): pods are created at once for a Provisioner, and for each
// pod it reports the time from its creation to the scheduler marking it Unschedulable (the
// scheduler's part), from then to the CreateFleet call that launched its node (Karpenter's),
// and to the pod Running, with the number of CreateFleet calls and of nodes.
//
// --workload diverse: the pods of test/scale/provisioning/workload, covering every constraint
// kind, are created at once; it reports the nodes launched before kube-scheduler bound its
// first pod (the plan of the batch; the controller binds most pods itself as their nodes
// launch, and kube-scheduler those with claims still to bind, or all with --bind-pods=false)
// and after it (extra launches: the plan and kube-scheduler
// disagreed), the pods a node was launched for more than once (a pod the plan had given a
// node that kube-scheduler then gave to others), and the pods still pending at the end. Extra
// launches without pods launched for twice are for pods that reached the controller after its
// first batch had closed (kube-scheduler marking them unschedulable more than the idle window
// apart).
//
//	go run ./test/scale/provisioning [--workload latency|diverse] [--pods 1000,1] [--batch-idle-duration 1s,200ms] [--batch-early-launch] [--bind-pods=false] [--cpu-profile FILE]
//
// Each (batch idle duration, pod count) pair runs on a fresh stack.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/test/sandbox"
	"karpenter.sh/karpenter/test/scale/provisioning/workload"
	"karpenter.sh/karpenter/test/scale/scaletest"
)

const (
	provisionerName = "latency"
	timeout         = 10 * time.Minute
)

// The flags every run shares: the controller's batch maximum, and the file of the latency runs'
// CPU profiles (none when empty).
var (
	batchMaxDuration   time.Duration
	earlyLaunch        bool
	bindPods           bool
	cpuProfile         string
	cpuProfileDuration time.Duration
	keep               bool
)

func main() {
	workloadName := flag.String("workload", "latency", "latency: identical pods, timed; diverse: every constraint kind, launches counted")
	podCounts := flag.String("pods", "1000,1", "pod counts to measure, comma-separated")
	idleDurations := flag.String("batch-idle-duration", "1s,200ms", "the controller's --batch-idle-duration values to measure, comma-separated")
	flag.DurationVar(&batchMaxDuration, "batch-max-duration", 0, "the controller's --batch-max-duration; its default when zero")
	flag.BoolVar(&earlyLaunch, "batch-early-launch", false, "the controller's --batch-early-launch")
	flag.BoolVar(&bindPods, "bind-pods", true, "the controller's --bind-pods")
	flag.StringVar(&cpuProfile, "cpu-profile", "", "latency workload: file to write a CPU profile of the controller to, taken from the first pod's creation for --cpu-profile-duration (runs it with --profiling); with several runs the file name gets -<idle>-<pods>; read it with go tool pprof")
	flag.DurationVar(&cpuProfileDuration, "cpu-profile-duration", 30*time.Second, "how long --cpu-profile samples")
	flag.BoolVar(&keep, "keep", false, "keep the stacks' directory, with every process's log (the controller's passes among them), and print its path")
	flag.Parse()
	// envtest logs through controller-runtime's logger; the harness prints only its table.
	ctrllog.SetLogger(logr.Discard())
	if *workloadName != "latency" && *workloadName != "diverse" {
		fmt.Fprintf(os.Stderr, "provisioning: --workload %q is neither latency nor diverse\n", *workloadName)
		os.Exit(2)
	}
	if err := run(*workloadName, *podCounts, *idleDurations); err != nil {
		fmt.Fprintf(os.Stderr, "provisioning latency: %v\n", err)
		os.Exit(1)
	}
}

func run(workloadName, podCounts, idleDurations string) error {
	dir, err := os.MkdirTemp("", "karpenter-latency-")
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "the stacks' logs are in %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	binaries, err := scaletest.Build(filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	if earlyLaunch {
		fmt.Printf("controller --batch-early-launch\n\n")
	}
	if batchMaxDuration > 0 {
		fmt.Printf("controller --batch-max-duration=%s\n\n", batchMaxDuration)
	}
	if !bindPods {
		fmt.Printf("controller --bind-pods=false\n\n")
	}
	if workloadName == "diverse" {
		fmt.Printf("| batch idle | pods | nodes launched | before kube-scheduler's first bind | extra launches | pods launched for twice | pods pending at the end | $/h | pending → Running p50 / p99 |\n")
		fmt.Printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	} else {
		fmt.Printf("| batch idle | pods | passes (mean planning) | CreateFleet calls | nodes | $/h | created → Unschedulable p50 / p99 | pending → CreateFleet p50 / p99 | in order p50 / p99 | pending → Running p50 / p99 |\n")
		fmt.Printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	}
	for idle := range strings.SplitSeq(idleDurations, ",") {
		idleDuration, err := time.ParseDuration(idle)
		if err != nil {
			return fmt.Errorf("--batch-idle-duration %q, %w", idle, err)
		}
		for count := range strings.SplitSeq(podCounts, ",") {
			pods, err := strconv.Atoi(count)
			if err != nil || pods < 1 {
				return fmt.Errorf("--pods %q is not a positive count", count)
			}
			stackDir := filepath.Join(dir, fmt.Sprintf("stack-%s-%d", idle, pods))
			if workloadName == "diverse" {
				d, err := measureDiverse(stackDir, binaries, idleDuration, pods)
				if err != nil {
					return fmt.Errorf("%d diverse pods with a %s idle window, %w", pods, idle, err)
				}
				fmt.Printf("| %s | %d | %d | %d | %d | %d | %d | %.4f | %s / %s |\n", idleDuration, d.pods, d.planned+d.extra, d.planned, d.extra, d.relaunched, d.pending, d.pricePerHour,
					scaletest.FormatPercentile(d.toRunning, 50), scaletest.FormatPercentile(d.toRunning, 99))
				if len(d.extraFor) > 0 {
					fmt.Printf("\npods on extra launches, by group: %v\n\n", d.extraFor)
				}
				continue
			}
			profile := cpuProfile
			if profile != "" && (strings.Contains(idleDurations, ",") || strings.Contains(podCounts, ",")) {
				profile = fmt.Sprintf("%s-%s-%d", profile, idleDuration, pods)
			}
			r, err := measure(stackDir, binaries, idleDuration, pods, profile)
			if err != nil {
				return fmt.Errorf("%d pods with a %s idle window, %w", pods, idle, err)
			}
			fmt.Printf("| %s | %d | %s | %d | %d | %.4f | %s / %s | %s / %s | %s / %s | %s / %s |\n", idleDuration, pods, r.passes, r.fleetCalls, r.nodes, r.pricePerHour,
				scaletest.FormatPercentile(r.toUnschedulable, 50), scaletest.FormatPercentile(r.toUnschedulable, 99),
				scaletest.FormatPercentile(r.toLaunch, 50), scaletest.FormatPercentile(r.toLaunch, 99),
				scaletest.FormatPercentile(r.toLaunchInOrder, 50), scaletest.FormatPercentile(r.toLaunchInOrder, 99), scaletest.FormatPercentile(r.toRunning, 50), scaletest.FormatPercentile(r.toRunning, 99))
			fmt.Fprintf(os.Stderr, "%d pods, %s idle: nodes by instance type %v\n", pods, idleDuration, r.nodeTypes)
		}
	}
	return nil
}

type result struct {
	// passes is how many batches the controller planned (its karpenter_provisioner_batch_size
	// count) and their mean planning time, "n/a" when its metrics could not be read.
	passes            string
	fleetCalls, nodes int
	nodeTypes         map[string]int
	// pricePerHour is what the instances still running at the end cost, in $/h.
	pricePerHour                         float64
	toUnschedulable, toLaunch, toRunning []time.Duration
	// toLaunchInOrder pairs the pods marked Unschedulable, earliest first, with the launch
	// calls of the nodes they ran on, earliest first: the pods are identical, and which of them
	// kube-scheduler binds to which node is not Karpenter's to choose.
	toLaunchInOrder []time.Duration
}

// controllerArgs are the controller flags the harness's own flags ask for.
func controllerArgs(profiling bool) []string {
	var args []string
	if profiling {
		args = append(args, "--profiling")
	}
	if batchMaxDuration > 0 {
		args = append(args, "--batch-max-duration="+batchMaxDuration.String())
	}
	if earlyLaunch {
		args = append(args, "--batch-early-launch")
	}
	if !bindPods {
		args = append(args, "--bind-pods=false")
	}
	return args
}

// measure starts a stack, creates pods at once and waits until all run; with a profile file it
// also profiles the controller's CPU from the first creation on.
func measure(dir string, binaries scaletest.Binaries, idle time.Duration, count int, profile string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stack, err := sandbox.Start(ctx, sandbox.Options{
		Dir: dir, ControllerBinary: binaries.Controller, WebhookBinary: binaries.Webhook,
		BatchIdleDuration: idle, ControllerArgs: controllerArgs(profile != ""),
	})
	if err != nil {
		return result{}, err
	}
	defer func() { _ = stack.Stop() }()
	if err := stack.Env.Client.Create(ctx, builders.Provisioner(builders.ProvisionerOptions{Name: provisionerName})); err != nil {
		return result{}, err
	}
	seen, stopWatching, err := watchPods(ctx, stack, "app=latency", count)
	if err != nil {
		return result{}, err
	}
	defer stopWatching()

	profiled := make(chan error, 1)
	if profile != "" {
		go func() {
			profiled <- scaletest.Download(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", stack.MetricsAddress, int(cpuProfileDuration.Seconds())), profile)
		}()
	} else {
		profiled <- nil
	}
	// At once: as many creations in flight as a burst from a Deployment controller.
	creating, creatingCtx := errgroup.WithContext(ctx)
	creating.SetLimit(32)
	for i := range count {
		pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("latency-%04d", i), Namespace: sandbox.Namespace,
			Labels:       map[string]string{"app": "latency"},
			NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: provisionerName},
			Requests:     builders.Resources("cpu", "500m", "memory", "512Mi")})
		creating.Go(func() error {
			if err := stack.Env.Client.Create(creatingCtx, pod); err != nil {
				return err
			}
			seen.created(pod.Name)
			return nil
		})
	}
	if err := creating.Wait(); err != nil {
		return result{}, fmt.Errorf("creating pods, %w", err)
	}
	select {
	case <-seen.done:
	case <-ctx.Done():
		return result{}, fmt.Errorf("not every pod Running within %s", timeout)
	}
	r, err := seen.result(stack)
	r.passes = passes(ctx, stack)
	if profileErr := <-profiled; profileErr != nil {
		return r, fmt.Errorf("profiling the controller, %w", profileErr)
	}
	return r, err
}

// passes reads how many batches the controller planned, and how long planning one took on
// average, from its /metrics.
func passes(ctx context.Context, stack *sandbox.Stack) string {
	metrics, _, err := scaletest.Scrape(ctx, "http://"+stack.MetricsAddress+"/metrics")
	if err != nil {
		return "n/a"
	}
	if _, ok := metrics["karpenter_provisioner_batch_size"]; !ok {
		return "n/a"
	}
	_, batches := metrics.Histogram("karpenter_provisioner_batch_size", nil)
	seconds, planned := metrics.Histogram("karpenter_provisioner_scheduling_duration_seconds", nil)
	if planned == 0 {
		return fmt.Sprint(batches)
	}
	mean := time.Duration(seconds / planned * float64(time.Second))
	return fmt.Sprintf("%v (%v)", batches, mean.Round(time.Millisecond))
}

// observations are what the watch saw, each at the harness's clock, which is the in-process
// emulator's too.
type observations struct {
	count         int
	done          chan struct{} // closed once count pods run
	mu            sync.Mutex
	creation      map[string]time.Time // pod → its creation returned
	unschedulable map[string]time.Time // pod → first seen Unschedulable
	running       map[string]time.Time // pod → first seen Running
	node          map[string]string    // pod → node
}

// created notes when the creation of a pod returned: the harness's clock, as the object's
// creationTimestamp has whole seconds only.
func (o *observations) created(pod string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.creation[pod] = now
}

func (o *observations) observe(object any) {
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.unschedulable[pod.Name]; !ok && unschedulable(pod) {
		o.unschedulable[pod.Name] = now
	}
	if _, ok := o.running[pod.Name]; !ok && pod.Status.Phase == corev1.PodRunning {
		o.running[pod.Name] = now
		o.node[pod.Name] = pod.Spec.NodeName
		if len(o.running) == o.count {
			close(o.done)
		}
	}
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// result maps each pod to its node, the node to its instance (providerID) and the instance to
// the CreateFleet call that launched it.
func (o *observations) result(stack *sandbox.Stack) (result, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := result{pricePerHour: runningPrice(stack)}
	fleetReceived := map[string]time.Time{} // instance id → its CreateFleet call
	for _, request := range stack.Emulator.FleetRequests() {
		if request.TagSpecifications["instance"][v1alpha5.ProvisionerNameLabelKey] != provisionerName {
			continue
		}
		r.fleetCalls++
		for _, id := range request.InstanceIDs {
			fleetReceived[id] = request.Received
		}
	}
	nodeInstance := map[string]string{}
	nodeList := &corev1.NodeList{}
	if err := stack.Env.Client.List(context.Background(), nodeList); err != nil {
		return r, err
	}
	for _, node := range nodeList.Items {
		if node.Labels[v1alpha5.ProvisionerNameLabelKey] == provisionerName {
			r.nodes++
			if r.nodeTypes == nil {
				r.nodeTypes = map[string]int{}
			}
			r.nodeTypes[node.Labels[corev1.LabelInstanceTypeStable]]++
			nodeInstance[node.Name] = node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]
		}
	}
	var pendingTimes, launchTimes []time.Time
	for pod, pending := range o.unschedulable {
		launched, ok := fleetReceived[nodeInstance[o.node[pod]]]
		if !ok {
			return r, fmt.Errorf("pod %s runs on %q, which no CreateFleet call of the Provisioner launched", pod, o.node[pod])
		}
		if created, ok := o.creation[pod]; ok {
			// The informer may see the pod marked before its creation call returned.
			r.toUnschedulable = append(r.toUnschedulable, max(pending.Sub(created), 0))
		}
		r.toLaunch = append(r.toLaunch, launched.Sub(pending))
		pendingTimes, launchTimes = append(pendingTimes, pending), append(launchTimes, launched)
		r.toRunning = append(r.toRunning, o.running[pod].Sub(pending))
	}
	slices.SortFunc(pendingTimes, time.Time.Compare)
	slices.SortFunc(launchTimes, time.Time.Compare)
	for i := range pendingTimes {
		r.toLaunchInOrder = append(r.toLaunchInOrder, max(launchTimes[i].Sub(pendingTimes[i]), 0))
	}
	return r, nil
}

// diverseResult is what a diverse run saw.
type diverseResult struct {
	pods, planned, extra, pending int
	// pricePerHour is what the instances still running at the end cost, in $/h.
	pricePerHour float64
	toRunning    []time.Duration
	// relaunched counts the pods a node was launched for more than once.
	relaunched int
	// extraFor counts, by the workload's app label, the pods that run on extra launches.
	extraFor map[string]int
}

// settle is how long a diverse run waits for its last pods once every launch it could see
// is done: time for a second batch, were the plan and kube-scheduler to disagree.
const settle = time.Minute

// measureDiverse starts a stack, creates the diverse workload at once and waits until every
// pod runs, or until nothing changed for settle.
func measureDiverse(dir string, binaries scaletest.Binaries, idle time.Duration, count int) (diverseResult, error) {
	const name = "diverse"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stack, err := sandbox.Start(ctx, sandbox.Options{
		Dir: dir, ControllerBinary: binaries.Controller, WebhookBinary: binaries.Webhook,
		BatchIdleDuration: idle, ControllerArgs: controllerArgs(false),
	})
	if err != nil {
		return diverseResult{}, err
	}
	defer func() { _ = stack.Stop() }()
	w := workload.NewDiverse(name, sandbox.Namespace, count)
	for _, p := range w.Provisioners {
		if err := stack.Env.Client.Create(ctx, p); err != nil {
			return diverseResult{}, err
		}
	}
	for _, o := range w.Storage {
		if err := stack.Env.Client.Create(ctx, o); err != nil {
			return diverseResult{}, err
		}
	}
	seen, stopWatching, err := watchPods(ctx, stack, "workload="+name, len(w.Pods))
	if err != nil {
		return diverseResult{}, err
	}
	defer stopWatching()
	creating, creatingCtx := errgroup.WithContext(ctx)
	creating.SetLimit(32)
	for _, pod := range w.Pods {
		creating.Go(func() error { return stack.Env.Client.Create(creatingCtx, pod) })
	}
	if err := creating.Wait(); err != nil {
		return diverseResult{}, fmt.Errorf("creating pods, %w", err)
	}
	// Until every pod runs, or neither pods nor launches changed for settle.
	last, lastRunning, lastLaunches := time.Now(), -1, -1
	for {
		select {
		case <-seen.done:
		case <-ctx.Done():
			return diverseResult{}, fmt.Errorf("not settled within %s", timeout)
		case <-time.After(time.Second):
			running, launches := seen.runningCount(), len(launchTimes(stack, name))
			if running != lastRunning || launches != lastLaunches {
				last, lastRunning, lastLaunches = time.Now(), running, launches
			}
			if time.Since(last) < settle {
				continue
			}
		}
		break
	}
	firstScheduled, err := workload.FirstScheduled(ctx, stack.Env.Client, sandbox.Namespace)
	if err != nil {
		return diverseResult{}, err
	}
	r := seen.diverseResult(launchTimes(stack, name), firstScheduled)
	r.pricePerHour = runningPrice(stack)
	if r.relaunched, err = countRelaunched(ctx, stack, len(w.Pods)); err != nil {
		return r, err
	}
	// Which pods the extra launches were for: those running on a node launched after
	// kube-scheduler's first bind, by the workload's group.
	nodeList := &corev1.NodeList{}
	if err := stack.Env.Client.List(ctx, nodeList); err != nil {
		return r, err
	}
	launched := launchTimes(stack, name)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	late := map[string]bool{}
	for _, node := range nodeList.Items {
		instance := node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]
		if at, ok := launched[instance]; ok && !firstScheduled.IsZero() && !at.Before(firstScheduled) {
			late[node.Name] = true
		}
	}
	r.extraFor = map[string]int{}
	for _, pod := range w.Pods {
		if late[seen.node[pod.Name]] {
			r.extraFor[pod.Labels["app"]]++
		}
	}
	return r, nil
}

// countRelaunched counts the pods a node was launched for more than once, from the
// controller's Events. The controller writes them behind its launches, at its client's rate,
// so the last may still be on their way when every pod runs: it waits until every one of the
// workload's pods was told of its node (launched for it, or launching with room for it) and no
// more Events arrive for a few seconds, or a minute at most.
func countRelaunched(ctx context.Context, stack *sandbox.Stack, pods int) (int, error) {
	const quiet, patience = 5 * time.Second, time.Minute
	deadline := time.Now().Add(patience)
	lastTotal, lastChange := -1, time.Now()
	for {
		total, told, relaunched, err := workload.LaunchEvents(ctx, stack.Env.Client, sandbox.Namespace)
		if err != nil {
			return 0, err
		}
		if total != lastTotal {
			lastTotal, lastChange = total, time.Now()
		}
		if (told >= pods && time.Since(lastChange) >= quiet) || time.Now().After(deadline) {
			if told < pods {
				fmt.Fprintf(os.Stderr, "Events naming a node for only %d of %d pods after %s; counting those\n", told, pods, patience)
			}
			return relaunched, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// launchTimes are when the CreateFleet call that launched each instance for the workload's
// Provisioners was received, by instance id.
// runningPrice is what the stack's instances that are not terminated cost, in $/h at the
// emulator's prices: the run's plan, whichever batches launched it.
func runningPrice(stack *sandbox.Stack) float64 {
	total := 0.0
	for _, instance := range stack.Emulator.EC2Instances() {
		if instance.State != "terminated" && instance.State != "shutting-down" {
			total += instance.PricePerHour
		}
	}
	return total
}

func launchTimes(stack *sandbox.Stack, name string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, request := range stack.Emulator.FleetRequests() {
		if p := request.TagSpecifications["instance"][v1alpha5.ProvisionerNameLabelKey]; p != name && p != name+"-tainted" {
			continue
		}
		for _, id := range request.InstanceIDs {
			out[id] = request.Received
		}
	}
	return out
}

func (o *observations) runningCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.running)
}

// diverseResult splits the launches at kube-scheduler's first bind (firstScheduled): a batch's
// nodes are opened to pods only once all of them exist, so a launch after it is one the plan
// did not foresee.
func (o *observations) diverseResult(launches map[string]time.Time, firstScheduled time.Time) diverseResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := diverseResult{pods: o.count, pending: o.count - len(o.running)}
	for _, t := range launches {
		if firstScheduled.IsZero() || t.Before(firstScheduled) {
			r.planned++
		} else {
			r.extra++
		}
	}
	for pod, running := range o.running {
		if pending, ok := o.unschedulable[pod]; ok {
			r.toRunning = append(r.toRunning, running.Sub(pending))
		}
	}
	return r
}

// watchPods observes the sandbox namespace's pods the selector picks, count of them, until
// stop. An informer, not a bare watch: the apiserver may end a watch (a slow consumer on a
// busy machine), and an informer resumes it.
func watchPods(ctx context.Context, stack *sandbox.Stack, selector string, count int) (seen *observations, stop func(), err error) {
	clientset, err := kubernetes.NewForConfig(stack.Env.Config)
	if err != nil {
		return nil, nil, err
	}
	seen = &observations{count: count, creation: map[string]time.Time{}, unschedulable: map[string]time.Time{}, running: map[string]time.Time{}, node: map[string]string{}, done: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(sandbox.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen.observe,
		UpdateFunc: func(_, pod any) { seen.observe(pod) },
	}); err != nil {
		return nil, nil, err
	}
	informing, stopInforming := context.WithCancel(ctx)
	factory.Start(informing.Done())
	factory.WaitForCacheSync(informing.Done())
	return seen, func() {
		stopInforming()
		factory.Shutdown()
	}, nil
}
