// Package sandbox runs Karpenter's main job on one machine: a real control plane (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok), Prometheus scraping the
// controller, the AWS emulator seeded with the Auto Scaling groups, queue and VPC behind
// docs/examples, a node joiner registering a kwok Node per in-service instance and, as their
// kubelets would, per running instance Karpenter launched (from its user data), an admission
// webhook completing the Nodes a Karpenter from before NodeClaims creates itself, and the
// controller binary pointed at all of them through the AWS SDK's endpoint variables, and the
// admission webhook binary installed as the release installs it. Every listener is on loopback. `make sandbox` (cmd/sandbox) and the end-to-end suite (test/e2e)
// both run on it.
package sandbox

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/killpoint"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
	"karpenter.sh/karpenter/test/awsemulator"
	"karpenter.sh/karpenter/test/sandbox/nodejoiner"
)

// Seed is the emulated AWS account: the groups docs/examples drive, the queue "jobs", and what
// the getting-started guides leave (VPC, node role, instance profiles; see seed.yaml).
//
//go:embed seed.yaml
var Seed []byte

const (
	// Region of the emulated account; the examples' ARNs name it.
	Region = "us-west-2"
	// QueueName is the queue docs/examples/queue-workers.yaml follows.
	QueueName = "jobs"
	// Namespace holds the examples.
	Namespace = "default"
	// InterruptionQueue is the controller's --interruption-queue, a queue of the seed.
	InterruptionQueue = "interruptions"
	// ClusterName is the controller's --cluster-name: the seed's subnets and security group
	// carry kubernetes.io/cluster/<ClusterName>, which Provisioners select by default, and
	// karpenter.sh/discovery: <ClusterName>, which v1's getting-started EC2NodeClass selects.
	ClusterName = "sandbox"
	// InstanceProfile is the instance profile of docs/examples/provisioner.yaml, the nodes' of a
	// Provisioner whose provider block names none. The seed also has v0.5's getting-started
	// KarpenterNodeInstanceProfile-<ClusterName> and the node role KarpenterNodeRole-<ClusterName>
	// both hold.
	InstanceProfile = "KarpenterNodeInstanceProfile-demo"
)

// Options configure a Stack.
type Options struct {
	// Dir holds logs, pid files, the kubeconfig and state. A temporary directory when empty.
	Dir string
	// ControllerBinary is the built cmd/controller.
	ControllerBinary string
	// WebhookBinary is the built cmd/webhook.
	WebhookBinary string
	// Period is the controller's resync, HorizontalAutoscaler and MetricsProducer period;
	// 2 s when zero.
	Period time.Duration
	// PendingDelay is how long a new instance takes to come in service (Auto Scaling) or to
	// run (EC2); 3 s when zero.
	PendingDelay time.Duration
	// BatchIdleDuration is the controller's --batch-idle-duration; its default when zero.
	BatchIdleDuration time.Duration
	// GarbageCollectionPeriod and GarbageCollectionGrace are the controller's
	// --garbage-collection-period and --garbage-collection-grace; 2 s and 10 s when zero, so
	// that an orphaned instance goes within seconds.
	GarbageCollectionPeriod, GarbageCollectionGrace time.Duration
	// ConsolidationPeriod and ConsolidationMinNodeAge are the controller's
	// --consolidation-period and --consolidation-min-node-age; 2 s and 10 s when zero, so that
	// a Provisioner that opts in is consolidated within the story.
	ConsolidationPeriod, ConsolidationMinNodeAge time.Duration
	// ControllerArgs are more flags of the controller, after (so overriding) the sandbox's own.
	ControllerArgs []string
	// ScrapeInterval is how often Prometheus scrapes the controller; 1 s when zero, so that
	// its metrics follow the story closely.
	ScrapeInterval time.Duration
	// CRDDirectory holds the CRDs installed in place of config/crd: an upgrade test starts the
	// stack with an earlier commit's.
	CRDDirectory string
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
}

// Stack is a running sandbox.
type Stack struct {
	Env      *environment.Environment
	Emulator *awsemulator.Emulator
	// EmulatorURL is the AWS endpoint (AWS_ENDPOINT_URL) of the emulator.
	EmulatorURL string
	// MetricsAddress is where the controller serves /metrics, scraped by Prometheus.
	MetricsAddress string

	options        Options
	healthAddress  string
	emulatorServer *http.Server
	kubeletServer  *http.Server
	stopJoiner     context.CancelFunc
	joinerDone     chan struct{}

	mu         sync.Mutex
	controller *environment.Process
}

// Start starts every component and returns once all are ready, the controller included, and
// the apiserver calls the admission webhook: nothing is applied before it would be checked.
func Start(ctx context.Context, options Options) (_ *Stack, err error) {
	if options.Period == 0 {
		options.Period = 2 * time.Second
	}
	if options.PendingDelay == 0 {
		options.PendingDelay = 3 * time.Second
	}
	if options.GarbageCollectionPeriod == 0 {
		options.GarbageCollectionPeriod = 2 * time.Second
	}
	if options.GarbageCollectionGrace == 0 {
		options.GarbageCollectionGrace = 10 * time.Second
	}
	if options.ConsolidationPeriod == 0 {
		options.ConsolidationPeriod = 2 * time.Second
	}
	if options.ConsolidationMinNodeAge == 0 {
		options.ConsolidationMinNodeAge = 10 * time.Second
	}
	if options.Logf == nil {
		options.Logf = func(string, ...any) {}
	}
	for name, path := range map[string]string{"controller": options.ControllerBinary, "webhook": options.WebhookBinary} {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("the %s binary, %w (build it with `make build`)", name, err)
		}
	}
	s := &Stack{options: options}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()

	if s.MetricsAddress, err = environment.FreeAddress(); err != nil {
		return nil, err
	}
	if s.healthAddress, err = environment.FreeAddress(); err != nil {
		return nil, err
	}
	if err := s.startEmulator(); err != nil {
		return nil, err
	}
	s.Env, err = environment.Start(ctx, environment.Options{
		AddToScheme:       []func(*runtime.Scheme) error{apis.AddToScheme},
		Scheduler:         true,
		ControllerManager: true,
		Kwok:              true,
		Prometheus: &environment.PrometheusOptions{
			ScrapeInterval: cmp.Or(options.ScrapeInterval, time.Second),
			ScrapeConfigs:  []environment.ScrapeConfig{{JobName: "karpenter", Targets: []string{s.MetricsAddress}}},
		},
		CRDDirectory: options.CRDDirectory,
		Dir:          options.Dir,
		Logf:         options.Logf,
	})
	if err != nil {
		return nil, err
	}

	joinerCtx, stopJoiner := context.WithCancel(context.Background())
	s.stopJoiner, s.joinerDone = stopJoiner, make(chan struct{})
	joiner := &nodejoiner.Joiner{Client: s.Env.Client, Instances: s.Emulator, Interval: 500 * time.Millisecond,
		Kubelets: nodejoiner.NewKubelets(s.Env.Client, s.Emulator, ClusterName)}
	go func() {
		defer close(s.joinerDone)
		joiner.Run(joinerCtx)
	}()

	if err := s.startKubeletWebhook(ctx); err != nil {
		return nil, err
	}
	if err := s.startWebhook(ctx); err != nil {
		return nil, err
	}
	if err := s.StartController(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stack) startEmulator() error {
	seed, err := awsemulator.ParseSeed(Seed)
	if err != nil {
		return err
	}
	s.Emulator = awsemulator.New(awsemulator.Options{
		Region: Region, PendingDelay: s.options.PendingDelay, TerminatingDelay: 2 * time.Second, EKSUpdateDelay: 2 * time.Second,
	})
	if err := s.Emulator.Seed(seed); err != nil {
		return fmt.Errorf("seeding the AWS emulator, %w", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening for the AWS emulator, %w", err)
	}
	s.EmulatorURL = "http://" + listener.Addr().String()
	s.emulatorServer = &http.Server{Handler: s.Emulator, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.emulatorServer.Serve(listener) }()
	s.options.Logf("sandbox: AWS emulator serving at %s", s.EmulatorURL)
	return nil
}

// StartController starts the controller binary and waits until it is ready. Leader election
// is off: there is one replica, and a restarted one must not wait out its predecessor's lease.
func (s *Stack) StartController(ctx context.Context) error {
	return s.startController(ctx, nil)
}

// StartControllerDyingAt starts the controller to kill itself (SIGKILL) the first time it reaches
// the kill point (pkg/killpoint), as a crash there would; ControllerExited tells when it did.
func (s *Stack) StartControllerDyingAt(ctx context.Context, point string) error {
	return s.startController(ctx, []string{killpoint.EnvironmentVariable + "=" + point})
}

// ReplaceController stops the controller as a rolling update does (SIGTERM: its reconciles
// finish) and starts binary in its place, which later restarts run too: an upgrade.
func (s *Stack) ReplaceController(ctx context.Context, binary string) error {
	s.mu.Lock()
	stopped := s.controller.Stop()
	s.options.ControllerBinary = binary
	s.mu.Unlock()
	if stopped != nil {
		return fmt.Errorf("stopping the controller, %w", stopped)
	}
	return s.StartController(ctx)
}

// ControllerExited is closed once the controller last started has exited.
func (s *Stack) ControllerExited() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.controller.Exited()
}

func (s *Stack) startController(ctx context.Context, env []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	period := s.options.Period.String()
	args := []string{
		"--leader-elect=false",
		"--metrics-bind-address=" + s.MetricsAddress,
		"--health-probe-bind-address=" + s.healthAddress,
		"--prometheus-uri=" + s.Env.Prometheus.URL,
		"--aws-region=" + Region,
		"--resync-period=" + period,
		"--horizontalautoscaler-period=" + period,
		"--metricsproducer-period=" + period,
		"--log-format=console",
		"--cluster-name=" + ClusterName,
		"--aws-default-instance-profile=" + InstanceProfile,
		"--garbage-collection-period=" + s.options.GarbageCollectionPeriod.String(),
		"--garbage-collection-grace=" + s.options.GarbageCollectionGrace.String(),
		"--consolidation-period=" + s.options.ConsolidationPeriod.String(),
		"--consolidation-min-node-age=" + s.options.ConsolidationMinNodeAge.String(),
		"--interruption-queue=" + InterruptionQueue,
	}
	if s.options.BatchIdleDuration != 0 {
		args = append(args, "--batch-idle-duration="+s.options.BatchIdleDuration.String())
	}
	args = append(args, s.options.ControllerArgs...)
	begin := time.Now()
	proc, err := s.Env.StartProcess(ctx, environment.ProcessOptions{
		Name:      "controller",
		Path:      s.options.ControllerBinary,
		Args:      args,
		Env:       append(append([]string{"KUBECONFIG=" + s.Env.KubeconfigPath}, s.awsEnv()...), env...),
		HealthURL: "http://" + s.healthAddress + "/readyz",
	})
	if err != nil {
		return err
	}
	s.controller = proc
	s.options.Logf("sandbox: controller ready in %s", time.Since(begin).Round(time.Millisecond))
	return nil
}

// KillController kills the controller at once (SIGKILL), as a crash or an evicted pod would.
func (s *Stack) KillController() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controller != nil {
		s.controller.Kill()
	}
}

// ControllerLog is the controller's log file.
func (s *Stack) ControllerLog() string {
	return filepath.Join(s.Env.Dir, "logs", "controller.log")
}

// WebhookLog is the admission webhook's log file.
func (s *Stack) WebhookLog() string {
	return filepath.Join(s.Env.Dir, "logs", "webhook.log")
}

// Stop stops the node joiner, every process and the emulator.
func (s *Stack) Stop() error {
	var errs []error
	if s.stopJoiner != nil {
		s.stopJoiner()
		<-s.joinerDone
	}
	if s.Env != nil {
		errs = append(errs, s.Env.Stop())
	}
	if s.emulatorServer != nil {
		errs = append(errs, s.emulatorServer.Close())
	}
	if s.kubeletServer != nil {
		errs = append(errs, s.kubeletServer.Close())
	}
	return errors.Join(errs...)
}

// ShellEnv is the environment the docs' commands assume of a shell beside the sandbox, as
// VAR=value: KUBECONFIG (kubeconfig, the copy a user is given), EMULATOR (the AWS emulator's URL,
// whose admin API is under /_emulator/), PROMETHEUS (the Prometheus URL), and the AWS SDK's
// settings the controller runs with, so that `kubectl karpenter plan` reads the emulator: its
// region and endpoint, credentials it accepts (never the machine's), and no instance metadata
// lookup. The sandbox's banner prints it as an export line; test/docs runs the docs' commands
// with it.
func (s *Stack) ShellEnv(kubeconfig string) []string {
	return append([]string{"KUBECONFIG=" + kubeconfig, "EMULATOR=" + s.EmulatorURL, "PROMETHEUS=" + s.Env.Prometheus.URL}, s.awsEnv()...)
}

// awsEnv points the AWS SDK at the emulator.
func (s *Stack) awsEnv() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.EmulatorURL,
		"AWS_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=sandbox",
		"AWS_SECRET_ACCESS_KEY=sandbox",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Build builds cmd/controller and cmd/webhook into dir (as the image builds them,
// environment.GoBuild) and returns their paths, for a stack that runs both as real processes
// outside `make build`'s bin/ (test/e2e, test/docs).
func Build(dir string) (controller, webhook string, err error) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		return "", "", err
	}
	cmd := environment.GoBuild(root, "-o", dir+string(filepath.Separator), "./cmd/controller", "./cmd/webhook")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building the controller and the webhook, %w\n%s", err, out)
	}
	return filepath.Join(dir, "controller"), filepath.Join(dir, "webhook"), nil
}

// Examples are the manifests in docs/examples, by file name: the policies the sandbox applies
// at start. docs/examples/v1 is not among them (NodePoolExample).
func Examples() (map[string][]*unstructured.Unstructured, error) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "examples", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	examples := map[string][]*unstructured.Unstructured{}
	for _, file := range files {
		objects, err := decodeFile(file)
		if err != nil {
			return nil, err
		}
		examples[filepath.Base(file)] = objects
	}
	return examples, nil
}

// NodePoolExampleFile is upstream v1's getting-started NodePool and EC2NodeClass, filled in for
// the sandbox, relative to the repository's root.
const NodePoolExampleFile = "docs/examples/v1/nodepool.yaml"

// NodePoolExample is the objects of NodePoolExampleFile. The sandbox does not apply it at start,
// as its NodePool takes any pod that selects nothing; the story's NodePool chapter does.
func NodePoolExample() ([]*unstructured.Unstructured, error) {
	root, err := environment.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	return decodeFile(filepath.Join(root, filepath.FromSlash(NodePoolExampleFile)))
}

func decodeFile(file string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file) //nolint:gosec // G304: an example manifest of the repository.
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	objects, err := manifests.DecodeAll(f)
	if err != nil {
		return nil, fmt.Errorf("decoding %s, %w", file, err)
	}
	return objects, nil
}

// Apply server-side applies objects into Namespace, as `kubectl apply --server-side` would.
func Apply(ctx context.Context, c client.Client, objects []*unstructured.Unstructured) error {
	for _, object := range objects {
		object = object.DeepCopy()
		if object.GetNamespace() == "" {
			object.SetNamespace(Namespace)
		}
		if err := c.Patch(ctx, object, client.Apply, client.FieldOwner("sandbox"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s, %w", object.GetKind(), object.GetName(), err)
		}
	}
	return nil
}

// RemoveNodePoolExample deletes what NodePoolExample made, in the order it must go: the NodePool
// first, in the foreground, so that it is gone once its NodeClaims, which it owns, are (each
// drained and its instance terminated); then the EC2NodeClass the nodes launched from. It waits
// until all of it is gone or ctx ends.
func RemoveNodePoolExample(ctx context.Context, c client.Client) error {
	objects, err := NodePoolExample()
	if err != nil {
		return err
	}
	nodePoolFirst := func(o *unstructured.Unstructured) int {
		if o.GetKind() == "NodePool" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int { return nodePoolFirst(a) - nodePoolFirst(b) })
	for _, object := range objects {
		if err := c.Delete(ctx, object.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s, %w", object.GetKind(), object.GetName(), err)
		}
		left := ""
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			current := &unstructured.Unstructured{}
			current.SetGroupVersionKind(object.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKey{Name: object.GetName()}, current)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			left = fmt.Sprintf("%s %s still there (%v)", object.GetKind(), object.GetName(), err)
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("removing %s, %s, %w", NodePoolExampleFile, left, err)
		}
	}
	return nil
}
