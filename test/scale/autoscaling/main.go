// Command autoscaling measures the controller at scale on the sandbox's stack (real control
// plane, kwok, Prometheus, the AWS emulator, the controller as a process with its real flags):
// it creates N HorizontalAutoscalers, each on its own target (a Deployment; for the few whose
// decision lag is timed, a LagTarget whose status the harness keeps equal to its spec, see
// lagtarget.go), N MetricsProducers of each kind, P pods on K kwok nodes, lets them settle, then samples for a while the controller's
// CPU and RSS, kube-apiserver's CPU, the controller's API requests by verb and resource,
// Prometheus queries, reconciles against N ÷ period, the workqueue depth, and the decision lag
// of a few dozen targets whose metric is a square wave. See docs/benchmarks.md.
//
//	go run ./test/scale/autoscaling --autoscalers 100 --pods 1000 --nodes 100
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
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/sandbox"
	"karpenter.sh/karpenter/test/scale/scaletest"
)

const (
	namespace = sandbox.Namespace
	nodeGroup = "scale"
	creations = 32 // in flight at once
)

type options struct {
	autoscalers, producersPerKind, pods, nodes, lagTargets int
	period, duration, setupTimeout                         time.Duration
	controllerArgs                                         []string
	heapProfile, cpuProfile                                string
	scrapeInterval                                         time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.autoscalers, "autoscalers", 100, "HorizontalAutoscalers (N), each on its own Deployment")
	flag.IntVar(&o.producersPerKind, "producers-per-kind", -1, "MetricsProducers of each kind; N when negative")
	flag.IntVar(&o.pods, "pods", 1000, "pods (P), the targets' own included, on the kwok nodes")
	flag.IntVar(&o.nodes, "nodes", 100, "kwok nodes (K)")
	flag.IntVar(&o.lagTargets, "lag-targets", 30, "autoscalers, among the N, whose metric is a square wave whose changes are timed")
	flag.DurationVar(&o.period, "period", 10*time.Second, "the controller's --horizontalautoscaler-period, --metricsproducer-period and --resync-period")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long to sample once settled")
	flag.DurationVar(&o.setupTimeout, "setup-timeout", 20*time.Minute, "how long the stack may take to start and the objects to settle (5000 pods on a loaded machine take longer)")
	flag.StringVar(&o.heapProfile, "heap-profile", "", "file to write the controller's heap profile to at the end of sampling (runs it with --profiling); read it with go tool pprof")
	flag.DurationVar(&o.scrapeInterval, "scrape-interval", time.Second, "how often Prometheus scrapes the controller: serving /metrics is part of the controller's CPU, and clusters scrape every 15 – 60 s; the workqueue depth is sampled at this resolution")
	flag.StringVar(&o.cpuProfile, "cpu-profile", "", "file to write a CPU profile of the controller over the sampling to (runs it with --profiling); read it with go tool pprof")
	args := flag.String("controller-args", "", "more controller flags, space-separated, e.g. \"--horizontalautoscaler-workers=20\"")
	flag.Parse()
	// envtest logs through controller-runtime; the processes' own logs are in the stack's directory.
	ctrllog.SetLogger(logr.Discard())
	o.controllerArgs = strings.Fields(*args)
	if o.heapProfile != "" || o.cpuProfile != "" {
		o.controllerArgs = append([]string{"--profiling"}, o.controllerArgs...)
	}
	if o.producersPerKind < 0 {
		o.producersPerKind = o.autoscalers
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "autoscaling scale: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.autoscalers < 1 || o.nodes < 1 || o.lagTargets > o.autoscalers || o.period <= 0 || o.duration <= 0 || o.setupTimeout <= 0 {
		return fmt.Errorf("need at least one autoscaler and node, at most as many lag targets as autoscalers, and positive durations")
	}
	dir, err := os.MkdirTemp("", "karpenter-scale-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binaries, err := scaletest.Build(filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.setupTimeout+o.duration)
	defer cancel()
	stack, err := sandbox.Start(ctx, sandbox.Options{
		Dir: filepath.Join(dir, "stack"), ControllerBinary: binaries.Controller, WebhookBinary: binaries.Webhook,
		Period: o.period, ControllerArgs: o.controllerArgs, ScrapeInterval: o.scrapeInterval,
	})
	if err != nil {
		return err
	}
	defer func() { _ = stack.Stop() }()

	// The harness's own client, without client-go's default limit of 5 requests per second.
	config := rest.CopyConfig(stack.Env.Config)
	config.QPS, config.Burst = -1, 0
	c, err := client.New(config, client.Options{Scheme: stack.Env.Scheme})
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := installLagTargets(ctx, c); err != nil {
		return err
	}
	lag, err := followLagTargets(ctx, stack)
	if err != nil {
		return err
	}
	defer lag.stop()
	waves := lagWaves(o)
	if err := create(ctx, c, o, waves); err != nil {
		return err
	}
	if err := settle(ctx, c, o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created and settled in %s; sampling for %s\n", time.Since(begin).Round(time.Second), o.duration)
	m, err := sample(ctx, stack, o)
	if err != nil {
		return err
	}
	m.lag, m.lagAfterBoundary = lag.lags(waves, m.start, m.end, o.period)
	m.print(o)
	return nil
}

// lagWaves are the square waves of the lag targets: a cycle of 1.7 periods, so that changes
// fall at every phase of the period, and the targets spread over one cycle.
func lagWaves(o options) []square {
	cycle := (o.period * 17 / 10).Round(100 * time.Millisecond)
	waves := make([]square, o.lagTargets)
	for i := range waves {
		waves[i] = square{cycle: cycle, offset: (cycle * time.Duration(i) / time.Duration(max(o.lagTargets, 1))).Round(10 * time.Millisecond)}
	}
	return waves
}

func targetName(i int) string { return fmt.Sprintf("target-%05d", i) }

// deploymentTargets is how many autoscalers scale a Deployment: all but the lag targets.
func deploymentTargets(o options) int { return o.autoscalers - o.lagTargets }

// create makes the nodes, the targets and their autoscalers, the other pods and the producers.
func create(ctx context.Context, c client.Client, o options, waves []square) error {
	g, nodesCtx := errgroup.WithContext(ctx)
	g.SetLimit(creations)
	nodeNames := make([]string, o.nodes)
	for i := range o.nodes {
		nodeNames[i] = fmt.Sprintf("scale-node-%04d", i)
		node := environment.KwokNode(nodeNames[i], map[string]string{"karpenter.sh/node-group": nodeGroup},
			builders.Resources("cpu", "64", "memory", "256Gi", "pods", "250"))
		g.Go(func() error { return createPatiently(nodesCtx, c, node) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating nodes, %w", err)
	}
	g, ctx = errgroup.WithContext(ctx)
	g.SetLimit(creations)
	for i := range o.autoscalers {
		var target client.Object = builders.Deployment(builders.DeploymentOptions{Name: targetName(i), Namespace: namespace, Replicas: 1,
			Pod: builders.PodOptions{Requests: builders.Resources("cpu", "10m", "memory", "16Mi")}})
		ha := &v1alpha1.HorizontalAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: targetName(i), Namespace: namespace},
			Spec: v1alpha1.HorizontalAutoscalerSpec{
				ScaleTargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: targetName(i)},
				MinReplicas:    ptr.To[int32](1),
				MaxReplicas:    10,
				Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
					Query:  "vector(5)",
					Target: v1alpha1.MetricTarget{Type: v1alpha1.AverageValueMetricType, Value: resource.MustParse("5")},
				}}},
			},
		}
		if i < len(waves) {
			target = newLagTarget(targetName(i))
			ha.Spec.ScaleTargetRef = v1alpha1.CrossVersionObjectReference{APIVersion: lagTargetGVR.GroupVersion().String(), Kind: lagTargetKind, Name: targetName(i)}
			ha.Spec.Metrics[0].Prometheus.Query = waves[i].query()
			// Every change of the wave is acted on at once.
			ha.Spec.Behavior.ScaleDown = &v1alpha1.ScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}
		}
		g.Go(func() error {
			if err := createPatiently(ctx, c, target); err != nil {
				return err
			}
			return createPatiently(ctx, c, ha)
		})
	}
	// The pods beyond the Deployments' own, bound to the nodes in turn.
	for i := range max(o.pods-deploymentTargets(o), 0) {
		pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("filler-%05d", i), Namespace: namespace,
			Labels: map[string]string{"app": "filler"}, NodeName: nodeNames[i%len(nodeNames)],
			Requests: builders.Resources("cpu", "10m", "memory", "16Mi")})
		g.Go(func() error { return createPatiently(ctx, c, pod) })
	}
	for i := range o.producersPerKind {
		for _, mp := range producers(i) {
			g.Go(func() error { return createPatiently(ctx, c, mp) })
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating the objects, %w", err)
	}
	return nil
}

// createPatiently creates obj, again after a timeout or an internal error (the webhook or the
// API server slow on a loaded machine); AlreadyExists then means an earlier try went through.
func createPatiently(ctx context.Context, c client.Client, obj client.Object) error {
	retriable := func(err error) bool {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsTooManyRequests(err)
	}
	tries := 0
	return retry.OnError(wait.Backoff{Steps: 10, Duration: time.Second, Factor: 2, Cap: 30 * time.Second}, retriable, func() error {
		tries++
		err := c.Create(ctx, obj)
		if tries > 1 && apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// producers are one MetricsProducer of each kind.
func producers(i int) []*v1alpha1.MetricsProducer {
	selector := map[string]string{"karpenter.sh/node-group": nodeGroup}
	specs := map[string]v1alpha1.MetricsProducerSpec{
		"pending":  {PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: selector}},
		"reserved": {ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: selector}},
		"queue":    {Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: "arn:aws:sqs:us-west-2:123456789012:" + sandbox.QueueName}},
		"schedule": {ScheduleSpec: &v1alpha1.ScheduleSpec{DefaultReplicas: 1}},
	}
	var out []*v1alpha1.MetricsProducer
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range specs {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, &v1alpha1.MetricsProducer{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", kind, i), Namespace: namespace},
			Spec:       specs[kind],
		})
	}
	return out
}

// settle waits until every autoscaler has decided once and every pod runs.
func settle(ctx context.Context, c client.Client, o options) error {
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	for {
		// A loaded API server times out now and then; the next tick asks again, until the deadline.
		if decided, running, err := progress(ctx, c); err != nil {
			fmt.Fprintf(os.Stderr, "settling: %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "settling: %d of %d autoscalers decided, %d of %d pods running\n", decided, o.autoscalers, running, max(o.pods, deploymentTargets(o)))
			if decided >= o.autoscalers && running >= max(o.pods, deploymentTargets(o)) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not settled, %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

func progress(ctx context.Context, c client.Client) (decided, running int, err error) {
	has := &v1alpha1.HorizontalAutoscalerList{}
	if err := c.List(ctx, has, client.InNamespace(namespace)); err != nil {
		return 0, 0, err
	}
	for _, ha := range has.Items {
		if ha.Status.DesiredReplicas != nil {
			decided++
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return 0, 0, err
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return decided, running, nil
}

// lags are, for each change seen within [start, end] whose metric change also was, the time
// from the metric change, and from the first period boundary at or after it, to the new
// spec.replicas.
func (f *lagFollower) lags(waves []square, start, end time.Time, period time.Duration) (lag, afterBoundary []time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.changes {
		if c.target >= len(waves) || c.seen.Before(start) || c.seen.After(end) {
			continue
		}
		changed := waves[c.target].changeFor(c.replicas, c.seen)
		if changed.Before(start) {
			continue
		}
		lag = append(lag, c.seen.Sub(changed))
		afterBoundary = append(afterBoundary, c.seen.Sub(nextBoundary(changed, period)))
	}
	return lag, afterBoundary
}

// measurements are what sample saw.
type measurements struct {
	start, end                  time.Time
	controllerCPU, apiserverCPU float64 // cores
	controllerRSSMax            int64
	reconciles                  float64 // per second
	reconcileErrors             float64 // per second
	depthMean, depthMax         float64
	promQueries                 float64 // per second
	requests                    map[string]float64
	reconcileTime, queryTime    time.Duration // mean
	metricsBytes                int
	heapInUse, heapIdle         float64 // bytes, at the end: the Go heap's live spans, and its free ones not yet returned to the OS
	stackInUse, goroutines      float64 // at the end: bytes of goroutine stacks, and goroutines
	lag, lagAfterBoundary       []time.Duration
}

// sample reads /proc of the controller and kube-apiserver every second for the duration, and
// the counters of the controller and Prometheus at both ends.
func sample(ctx context.Context, stack *sandbox.Stack, o options) (*measurements, error) {
	controllerPID, err := pid(stack.Env.Dir, "controller")
	if err != nil {
		return nil, err
	}
	apiserverPID, err := pid(stack.Env.Dir, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	controllerMetrics := "http://" + stack.MetricsAddress + "/metrics"
	promMetrics := stack.Env.Prometheus.URL + "/metrics"
	m := &measurements{start: time.Now()}
	beforeController, _, err := scaletest.Scrape(ctx, controllerMetrics)
	if err != nil {
		return nil, err
	}
	beforeProm, _, err := scaletest.Scrape(ctx, promMetrics)
	if err != nil {
		return nil, err
	}
	firstController, err := readProc(controllerPID)
	if err != nil {
		return nil, err
	}
	firstAPIServer, err := readProc(apiserverPID)
	if err != nil {
		return nil, err
	}
	cpuProfiled := make(chan error, 1)
	if o.cpuProfile != "" {
		go func() {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", stack.MetricsAddress, int(o.duration.Seconds()))
			cpuProfiled <- scaletest.Download(ctx, url, o.cpuProfile)
		}()
	} else {
		cpuProfiled <- nil
	}
	var depths []float64
	lastController, lastAPIServer := firstController, firstAPIServer
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for deadline := m.start.Add(o.duration); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticker.C:
		}
		if lastController, err = readProc(controllerPID); err != nil {
			return nil, err
		}
		if lastAPIServer, err = readProc(apiserverPID); err != nil {
			return nil, err
		}
		m.controllerRSSMax = max(m.controllerRSSMax, lastController.rss)
		if depth, err := queryScalar(ctx, stack.Env.Prometheus.URL, `sum(workqueue_depth{name="horizontalautoscaler"})`); err == nil {
			depths = append(depths, depth)
		}
	}
	m.end = time.Now()
	afterController, size, err := scaletest.Scrape(ctx, controllerMetrics)
	if err != nil {
		return nil, err
	}
	if o.heapProfile != "" {
		if err := scaletest.Download(ctx, "http://"+stack.MetricsAddress+"/debug/pprof/heap", o.heapProfile); err != nil {
			return nil, err
		}
	}
	if err := <-cpuProfiled; err != nil {
		return nil, fmt.Errorf("cpu profile, %w", err)
	}
	afterProm, _, err := scaletest.Scrape(ctx, promMetrics)
	if err != nil {
		return nil, err
	}
	seconds := m.end.Sub(m.start).Seconds()
	m.controllerCPU = (lastController.cpu - firstController.cpu).Seconds() / seconds
	m.apiserverCPU = (lastAPIServer.cpu - firstAPIServer.cpu).Seconds() / seconds
	m.metricsBytes = size
	m.heapInUse = afterController.Sum("go_memstats_heap_inuse_bytes", nil)[""]
	m.heapIdle = afterController.Sum("go_memstats_heap_idle_bytes", nil)[""] - afterController.Sum("go_memstats_heap_released_bytes", nil)[""]
	m.stackInUse = afterController.Sum("go_memstats_stack_inuse_bytes", nil)[""]
	m.goroutines = afterController.Sum("go_goroutines", nil)[""]
	reconciles := map[string]string{"controller": "horizontalautoscaler"}
	m.reconciles = rates(beforeController.Sum("controller_runtime_reconcile_total", reconciles), afterController.Sum("controller_runtime_reconcile_total", reconciles), seconds)[""]
	errs := map[string]string{"controller": "horizontalautoscaler", "result": "error"}
	m.reconcileErrors = rates(beforeController.Sum("controller_runtime_reconcile_total", errs), afterController.Sum("controller_runtime_reconcile_total", errs), seconds)[""]
	query := map[string]string{"handler": "/api/v1/query"}
	m.promQueries = rates(beforeProm.Sum("prometheus_http_requests_total", query), afterProm.Sum("prometheus_http_requests_total", query), seconds)[""]
	m.requests = rates(beforeController.Sum("karpenter_kube_client_requests_total", nil, "verb", "resource", "code"),
		afterController.Sum("karpenter_kube_client_requests_total", nil, "verb", "resource", "code"), seconds)
	m.reconcileTime = meanDuration(beforeController, afterController, "controller_runtime_reconcile_time_seconds", reconciles)
	m.queryTime = meanDuration(beforeController, afterController, "karpenter_horizontalautoscaler_query_duration_seconds", nil)
	for _, d := range depths {
		m.depthMean += d / float64(len(depths))
		m.depthMax = max(m.depthMax, d)
	}
	return m, nil
}

func pid(dir, process string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "pids", process+".pid")) //nolint:gosec // G304: the stack's own pid file.
	if err != nil {
		return 0, fmt.Errorf("the pid of %s, %w", process, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func (m *measurements) print(o options) {
	fmt.Printf("\n| N | producers per kind | pods / nodes | period | scrape interval | duration |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %d | %d / %d | %s | %s | %s |\n\n", o.autoscalers, o.producersPerKind, max(o.pods, deploymentTargets(o)), o.nodes, o.period, o.scrapeInterval, m.end.Sub(m.start).Round(time.Second))
	fmt.Printf("| measure | value |\n|---|---:|\n")
	row := func(name, format string, args ...any) {
		fmt.Printf("| %s | "+format+" |\n", append([]any{name}, args...)...)
	}
	row("controller CPU (cores)", "%.3f", m.controllerCPU)
	row("controller RSS, max (MiB)", "%.1f", float64(m.controllerRSSMax)/(1<<20))
	row("controller Go heap in use / idle not released, at the end (MiB)", "%.1f / %.1f", m.heapInUse/(1<<20), m.heapIdle/(1<<20))
	row("controller goroutine stacks (MiB) / goroutines, at the end", "%.1f / %.0f", m.stackInUse/(1<<20), m.goroutines)
	row("kube-apiserver CPU (cores)", "%.3f", m.apiserverCPU)
	row("HorizontalAutoscaler reconciles/s (N ÷ period)", "%.1f (%.1f)", m.reconciles, float64(o.autoscalers)/o.period.Seconds())
	row("HorizontalAutoscaler reconcile errors/s", "%.2f", m.reconcileErrors)
	row("workqueue depth, mean / max", "%.1f / %.0f", m.depthMean, m.depthMax)
	row("HorizontalAutoscaler reconcile time, mean", "%s", m.reconcileTime.Round(time.Millisecond))
	row("metric query time as the controller sees it, mean", "%s", m.queryTime.Round(time.Millisecond))
	row("Prometheus queries/s", "%.1f", m.promQueries)
	row("controller /metrics (KiB)", "%.0f", float64(m.metricsBytes)/1024)
	var total float64
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.requests {
			if !yield(k) {
				return
			}
		}
	}) {
		row("API requests/s: "+key, "%.2f", m.requests[key])
		total += m.requests[key]
	}
	row("API requests/s, total", "%.1f", total)
	row(fmt.Sprintf("decision lag from the metric change, p50 / p99 (%d changes)", len(m.lag)), "%s / %s",
		scaletest.FormatPercentile(m.lag, 50), scaletest.FormatPercentile(m.lag, 99))
	row("decision lag after the period boundary, p50 / p99", "%s / %s",
		scaletest.FormatPercentile(m.lagAfterBoundary, 50), scaletest.FormatPercentile(m.lagAfterBoundary, 99))
}

// queryScalar is the one value of an instant query.
func queryScalar(ctx context.Context, url, query string) (float64, error) {
	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return 0, err
	}
	result, _, err := promv1.NewAPI(client).Query(ctx, query, time.Now())
	if err != nil {
		return 0, err
	}
	vector, ok := result.(model.Vector)
	if !ok || len(vector) != 1 {
		return 0, fmt.Errorf("%s returned %s, want one sample", query, result)
	}
	return float64(vector[0].Value), nil
}
