package environment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Options selects what a test environment runs besides etcd and kube-apiserver.
type Options struct {
	// AddToScheme registers more API types (e.g. the project's API groups) in the scheme of
	// the environment's client, on top of client-go's types and apiextensions/v1.
	AddToScheme []func(*runtime.Scheme) error
	// CRDs are installed in addition to the ones in config/crd.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDDirectory holds the CRDs installed in place of the repository's config/crd: an upgrade
	// test starts the cluster with an earlier commit's.
	CRDDirectory string

	// Scheduler runs kube-scheduler, which binds pods to nodes or marks them Unschedulable.
	Scheduler bool
	// ControllerManager runs kube-controller-manager with its default controllers: workloads
	// (Deployments, ReplicaSets, ...), garbage collection, namespaces, node lifecycle, ...
	ControllerManager bool
	// Kwok runs kwok, which acts as the kubelet of every node built by KwokNode.
	Kwok bool
	// Prometheus, when set, runs a Prometheus server with these options.
	Prometheus *PrometheusOptions

	// Dir keeps the environment's logs, pid files and state; Start creates a temporary one
	// when empty. A directory reused after a crash should first go through KillStale.
	Dir string
	// Logf receives progress messages (each component's start time); nil discards them.
	Logf func(format string, args ...any)
}

// Environment is a running control plane, stopped by Stop (with New: when the test ends).
type Environment struct {
	// Config authenticates as a cluster administrator.
	Config *rest.Config
	// Client is a controller-runtime client over Config with Scheme.
	Client client.Client
	Scheme *runtime.Scheme
	// KubeconfigPath is a kubeconfig file for Config, for kubectl and other binaries.
	KubeconfigPath string
	// Prometheus is nil unless Options.Prometheus was set.
	Prometheus *Prometheus
	// Dir holds the environment's logs (Dir/logs/<process>.log), pid files and state.
	Dir string

	lifecycle *lifecycle
	removeDir bool
}

// New starts etcd and kube-apiserver with the project's CRDs, then the components options
// asks for, and returns once every one of them is ready. Any failure, including a missing
// binary, fails the test. Everything stops when the test ends; when the test failed, the tail
// of every process's log is printed and the logs are kept.
func New(t testing.TB, options Options) *Environment {
	t.Helper()
	// Controllers' logs are not shown in tests (a test's own checks say what went wrong); with
	// no logger set, controller-runtime prints a stack trace instead, which crowded a failed
	// CI run's output.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "karpenter-test-")
	if err != nil {
		t.Fatalf("creating the environment's directory, %v", err)
	}
	options.Dir = dir
	if options.Logf == nil {
		options.Logf = t.Logf
	}
	env, err := Start(context.Background(), options)
	if err != nil {
		t.Fatalf("%v\n%s", err, logTails(dir))
	}
	t.Cleanup(func() {
		if err := env.lifecycle.stop(); err != nil {
			t.Errorf("stopping the environment, %v", err)
		}
		if t.Failed() {
			t.Logf("%sprocess logs kept in %s", logTails(dir), env.lifecycle.logs.path)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return env
}

// Start is New outside a test: it starts the environment and returns once every component is
// ready. The caller must call Stop. On failure everything started is stopped and the error
// names the logs to read.
func Start(ctx context.Context, options Options) (*Environment, error) {
	dir := options.Dir
	removeDir := false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "karpenter-environment-"); err != nil {
			return nil, fmt.Errorf("creating the environment's directory, %w", err)
		}
		removeDir = true
	}
	l, err := newLifecycle(dir, options.Logf)
	if err != nil {
		return nil, err
	}
	env, err := start(ctx, l, options)
	if err != nil {
		return nil, errors.Join(err, l.stop(), fmt.Errorf("process logs are in %s", l.logs.path))
	}
	env.Dir, env.lifecycle, env.removeDir = dir, l, removeDir
	return env, nil
}

// Stop stops every process of the environment, last started first. The directory is removed
// when Start created it.
func (e *Environment) Stop() error {
	err := e.lifecycle.stop()
	if e.removeDir && err == nil {
		return os.RemoveAll(e.Dir)
	}
	return err
}

// StartProcess runs another binary alongside the environment (e.g. a controller under test),
// logged in Dir/logs and stopped by Stop if still running. With a HealthURL it returns once
// that answers 200.
func (e *Environment) StartProcess(ctx context.Context, options ProcessOptions) (*Process, error) {
	proc, err := startProcess(e.lifecycle, options.Name, options.Path, options.Args, options.Env)
	if err != nil {
		return nil, err
	}
	e.lifecycle.onStop(proc.Stop)
	if options.HealthURL != "" {
		if err := proc.waitHealthy(ctx, options.HealthURL); err != nil {
			return nil, errors.Join(err, proc.Stop())
		}
	}
	return proc, nil
}

type binaryPaths struct {
	apiserver, etcd, scheduler, controllerManager, kwok, prometheus string
}

func start(ctx context.Context, l *lifecycle, options Options) (*Environment, error) {
	root, err := RepositoryRoot()
	if err != nil {
		return nil, fmt.Errorf("locating the repository, %w", err)
	}
	paths, err := locateBinaries(binaries{root: root}, options)
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme(options.AddToScheme)
	if err != nil {
		return nil, err
	}
	env := &Environment{Scheme: scheme}

	// Prometheus needs nothing from the control plane, so it starts alongside etcd.
	prometheusStarted := make(chan error, 1)
	if options.Prometheus != nil {
		go func() {
			begin := time.Now()
			prometheus, err := startPrometheus(ctx, l, paths.prometheus, *options.Prometheus)
			if err == nil {
				env.Prometheus = prometheus
				l.logf("environment: prometheus ready in %s", time.Since(begin).Round(time.Millisecond))
			}
			prometheusStarted <- err
		}()
	} else {
		prometheusStarted <- nil
	}

	// Every return from here waits for Prometheus: its goroutine must not outlive the start.
	failed := func(err error) (*Environment, error) {
		return nil, errors.Join(err, <-prometheusStarted)
	}

	begin := time.Now()
	crdDirectory := options.CRDDirectory
	if crdDirectory == "" {
		crdDirectory = filepath.Join(root, "config", "crd")
	}
	testEnv, err := startAPIServer(l, paths, crdDirectory, scheme, options.CRDs)
	if err != nil {
		return failed(err)
	}
	l.logf("environment: etcd and kube-apiserver ready in %s", time.Since(begin).Round(time.Millisecond))

	env.Config = testEnv.Config
	env.KubeconfigPath = filepath.Join(l.dir, "kubeconfig")
	if err := os.WriteFile(env.KubeconfigPath, testEnv.KubeConfig, 0o600); err != nil {
		return failed(fmt.Errorf("writing the kubeconfig, %w", err))
	}
	if env.Client, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return failed(fmt.Errorf("creating a client, %w", err))
	}

	components := []func() error{func() error { return <-prometheusStarted }}
	timed := func(name string, start func() (*Process, string, error)) func() error {
		return func() error {
			begin := time.Now()
			// A port found free can be taken, by another test process, before the component
			// binds it; the component then exits at once, and starts again on another port.
			for attempt := 1; ; attempt++ {
				proc, healthURL, err := start()
				if err != nil {
					return err
				}
				l.onStop(proc.Stop)
				err = proc.waitHealthy(ctx, healthURL)
				var exited *exitedError
				if errors.As(err, &exited) && attempt < startAttempts {
					l.logf("environment: %v; starting it again", err)
					continue
				}
				if err != nil {
					return err
				}
				l.logf("environment: %s ready in %s", name, time.Since(begin).Round(time.Millisecond))
				return nil
			}
		}
	}
	if options.Scheduler {
		components = append(components, timed("kube-scheduler", func() (*Process, string, error) {
			return startScheduler(l, paths.scheduler, env.KubeconfigPath)
		}))
	}
	if options.ControllerManager {
		components = append(components, timed("kube-controller-manager", func() (*Process, string, error) {
			return startControllerManager(l, paths.controllerManager, env.KubeconfigPath, testEnv.ControlPlane.APIServer.CertDir)
		}))
	}
	if options.Kwok {
		components = append(components, timed("kwok", func() (*Process, string, error) {
			return startKwok(l, paths.kwok, env.KubeconfigPath)
		}))
	}
	if err := runConcurrently(components...); err != nil {
		return nil, err
	}
	return env, nil
}

// locateBinaries finds every binary the options need before anything starts, so that a
// missing one fails fast with the fix.
func locateBinaries(bins binaries, options Options) (binaryPaths, error) {
	var paths binaryPaths
	var errs []error
	locate := func(into *string, find func(string) (string, error), name string) {
		path, err := find(name)
		if err != nil {
			errs = append(errs, err)
		}
		*into = path
	}
	locate(&paths.apiserver, bins.projectBinary, "kube-apiserver")
	locate(&paths.etcd, bins.systemBinary, "etcd")
	if options.Scheduler {
		locate(&paths.scheduler, bins.projectBinary, "kube-scheduler")
	}
	if options.ControllerManager {
		locate(&paths.controllerManager, bins.projectBinary, "kube-controller-manager")
	}
	if options.Kwok {
		locate(&paths.kwok, bins.projectBinary, "kwok")
	}
	if options.Prometheus != nil {
		locate(&paths.prometheus, bins.systemBinary, "prometheus")
	}
	return paths, errors.Join(errs...)
}

func newScheme(addToScheme []func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme, %w", err)
		}
	}
	return scheme, nil
}

// startAPIServer starts etcd and kube-apiserver through envtest and installs the CRDs.
func startAPIServer(l *lifecycle, paths binaryPaths, crdDirectory string, scheme *runtime.Scheme,
	crds []*apiextensionsv1.CustomResourceDefinition) (*envtest.Environment, error) {
	etcdLog, err := l.logs.create("etcd")
	if err != nil {
		return nil, err
	}
	apiserverLog, err := l.logs.create("kube-apiserver")
	if err != nil {
		return nil, err
	}
	wrappers, err := l.tempDir("wrappers")
	if err != nil {
		return nil, err
	}
	etcdPath, err := killedWithTest(wrappers, paths.etcd, l.pidFile("etcd"))
	if err != nil {
		return nil, err
	}
	apiserverPath, err := killedWithTest(wrappers, paths.apiserver, l.pidFile("kube-apiserver"))
	if err != nil {
		return nil, err
	}
	testEnv := &envtest.Environment{
		Scheme:                   scheme,
		CRDs:                     crds,
		CRDDirectoryPaths:        []string{crdDirectory},
		ErrorIfCRDPathMissing:    false,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  stopTimeout,
	}
	testEnv.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, Out: etcdLog, Err: etcdLog}
	apiserver := testEnv.ControlPlane.GetAPIServer()
	apiserver.Path = apiserverPath
	apiserver.Out = apiserverLog
	apiserver.Err = apiserverLog
	// etcd 3.4 cannot notify watch progress, which watch-list needs. With the WatchList gate
	// on, kube-apiserver still turns every watch from resourceVersion 0 into a watch-list and
	// fails it, and clients that watch that way (kwok) back off for up to 30s between retries.
	// For the same reason the size-based list cost estimate waits on the watch cache for
	// resource versions it never sees ("Too large resource version" every few seconds), which
	// also holds kube-apiserver past its stop timeout on SIGTERM.
	apiserver.Configure().Append("feature-gates", "WatchList=false,SizeBasedListCostEstimate=false")

	_, startErr := testEnv.Start()
	// Stop even after a failed start: etcd may be running while the apiserver is not.
	l.onStop(func() error {
		defer etcdLog.Close()
		defer apiserverLog.Close()
		// The wrappers cannot remove their pid files; a stopped process needs none.
		defer os.Remove(l.pidFile("etcd"))
		defer os.Remove(l.pidFile("kube-apiserver"))
		if err := testEnv.Stop(); err != nil {
			return fmt.Errorf("stopping etcd and kube-apiserver, %w", err)
		}
		return nil
	})
	if startErr != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver (logs: %s, %s), %w", etcdLog.Name(), apiserverLog.Name(), startErr)
	}
	return testEnv, nil
}

// servingFlags make a component serve its health endpoints over HTTPS on a free loopback port
// with a self-signed certificate kept in the environment's directory.
func servingFlags(l *lifecycle, name string) (flags []string, healthURL string, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	certDir, err := l.tempDir(name)
	if err != nil {
		return nil, "", err
	}
	return []string{
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
	}, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), nil
}

func startScheduler(l *lifecycle, path, kubeconfig string) (*Process, string, error) {
	serving, healthURL, err := servingFlags(l, "kube-scheduler")
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(l, "kube-scheduler", path, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		// The default 50 requests/s (burst 100) made kube-scheduler the bottleneck of the
		// provisioning harness: one status write per unschedulable pod, it took 37–43 s to mark
		// a burst of 1000 (5.5 s at 200/s; 1000/s marked no faster on two cores). Clusters of
		// that size run it with more, as this one runs kube-controller-manager.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}, serving...), nil)
	return proc, healthURL, err
}

func startControllerManager(l *lifecycle, path, kubeconfig, apiserverCertDir string) (*Process, string, error) {
	serving, healthURL, err := servingFlags(l, "kube-controller-manager")
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(l, "kube-controller-manager", path, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		// Controllers act with the administrator's credentials rather than each with a
		// service account of its own, which would need the token controller first.
		"--use-service-account-credentials=false",
		// The key envtest gave kube-apiserver, so that service account tokens verify.
		"--service-account-private-key-file=" + filepath.Join(apiserverCertDir, "sa-signer.key"),
		// The default 20 requests/s (burst 30) made Deployments the bottleneck of the scale
		// harnesses: 1000 of them took minutes to get their pods, and a Deployment's
		// status.replicas, which the HorizontalAutoscalers' decisions read, trailed its spec by
		// more than a period. Clusters of that size run with more; so does this one.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}, serving...), nil)
	return proc, healthURL, err
}

func startKwok(l *lifecycle, path, kubeconfig string) (*Process, string, error) {
	address, err := FreeAddress()
	if err != nil {
		return nil, "", err
	}
	home, err := l.tempDir("kwok-home")
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(l, "kwok", path, []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		"--server-address=" + address,
		// Renew a Lease per node as kubelets do. Without a configuration file kwok v0.7.0
		// leaves this at 0, and then neither renews leases nor heartbeats node status often
		// enough: kube-controller-manager marks its nodes unreachable after ~50s.
		"--node-lease-duration-seconds=40",
	},
		// kwok reads ~/.kwok/kwok.yaml when it exists; an empty home keeps the test hermetic.
		[]string{"HOME=" + home})
	return proc, "http://" + address + "/healthz", err
}
