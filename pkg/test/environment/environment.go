package environment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options selects what a test environment runs besides etcd and kube-apiserver.
type Options struct {
	// AddToScheme registers more API types (e.g. the project's API groups) in the scheme of
	// the environment's client, on top of client-go's types and apiextensions/v1.
	AddToScheme []func(*runtime.Scheme) error
	// CRDs are installed in addition to the ones in config/crd.
	CRDs []*apiextensionsv1.CustomResourceDefinition

	// Scheduler runs kube-scheduler, which binds pods to nodes or marks them Unschedulable.
	Scheduler bool
	// ControllerManager runs kube-controller-manager with its default controllers: workloads
	// (Deployments, ReplicaSets, ...), garbage collection, namespaces, node lifecycle, ...
	ControllerManager bool
	// Kwok runs kwok, which acts as the kubelet of every node built by KwokNode.
	Kwok bool
	// Prometheus, when set, runs a Prometheus server with these options.
	Prometheus *PrometheusOptions
}

// Environment is a running control plane. Everything in it stops when the test ends.
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
}

// New starts etcd and kube-apiserver with the project's CRDs, then the components options
// asks for, and returns once every one of them is ready. Any failure, including a missing
// binary, fails the test.
func New(t testing.TB, options Options) *Environment {
	t.Helper()
	env, err := start(t, options)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

type binaryPaths struct {
	apiserver, etcd, scheduler, controllerManager, kwok, prometheus string
}

func start(t testing.TB, options Options) (*Environment, error) {
	root, err := repositoryRoot()
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
	logs := newLogDir(t)
	env := &Environment{Scheme: scheme}

	// Prometheus needs nothing from the control plane, so it starts alongside etcd.
	prometheusStarted := make(chan error, 1)
	if options.Prometheus != nil {
		go func() {
			begin := time.Now()
			prometheus, err := startPrometheus(t, logs, paths.prometheus, *options.Prometheus)
			if err == nil {
				env.Prometheus = prometheus
				t.Logf("environment: prometheus ready in %s", time.Since(begin).Round(time.Millisecond))
			}
			prometheusStarted <- err
		}()
	} else {
		prometheusStarted <- nil
	}

	// Every return from here waits for Prometheus: its goroutine must not outlive the test.
	failed := func(err error) (*Environment, error) {
		return nil, errors.Join(err, <-prometheusStarted)
	}

	begin := time.Now()
	testEnv, err := startAPIServer(t, logs, paths, root, scheme, options.CRDs)
	if err != nil {
		return failed(err)
	}
	t.Logf("environment: etcd and kube-apiserver ready in %s", time.Since(begin).Round(time.Millisecond))

	env.Config = testEnv.Config
	env.KubeconfigPath = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(env.KubeconfigPath, testEnv.KubeConfig, 0o600); err != nil {
		return failed(fmt.Errorf("writing the kubeconfig, %w", err))
	}
	if env.Client, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return failed(fmt.Errorf("creating a client, %w", err))
	}

	components := []func() error{func() error { return <-prometheusStarted }}
	timed := func(name string, start func() (*process, string, error)) func() error {
		return func() error {
			begin := time.Now()
			proc, healthURL, err := start()
			if err != nil {
				return err
			}
			proc.stopAtCleanup(t)
			if err := proc.waitHealthy(healthURL); err != nil {
				return err
			}
			t.Logf("environment: %s ready in %s", name, time.Since(begin).Round(time.Millisecond))
			return nil
		}
	}
	if options.Scheduler {
		components = append(components, timed("kube-scheduler", func() (*process, string, error) {
			return startScheduler(t, logs, paths.scheduler, env.KubeconfigPath)
		}))
	}
	if options.ControllerManager {
		components = append(components, timed("kube-controller-manager", func() (*process, string, error) {
			return startControllerManager(t, logs, paths.controllerManager, env.KubeconfigPath, testEnv.ControlPlane.APIServer.CertDir)
		}))
	}
	if options.Kwok {
		components = append(components, timed("kwok", func() (*process, string, error) {
			return startKwok(t, logs, paths.kwok, env.KubeconfigPath)
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
func startAPIServer(t testing.TB, logs *logDir, paths binaryPaths, root string, scheme *runtime.Scheme,
	crds []*apiextensionsv1.CustomResourceDefinition) (*envtest.Environment, error) {
	etcdLog, err := logs.create("etcd")
	if err != nil {
		return nil, err
	}
	apiserverLog, err := logs.create("kube-apiserver")
	if err != nil {
		return nil, err
	}
	wrappers := t.TempDir()
	etcdPath, err := killedWithTest(wrappers, paths.etcd)
	if err != nil {
		return nil, err
	}
	apiserverPath, err := killedWithTest(wrappers, paths.apiserver)
	if err != nil {
		return nil, err
	}
	testEnv := &envtest.Environment{
		Scheme:                   scheme,
		CRDs:                     crds,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd")},
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
	apiserver.Configure().Append("feature-gates", "WatchList=false")

	_, startErr := testEnv.Start()
	// Stop even after a failed start: etcd may be running while the apiserver is not.
	t.Cleanup(func() {
		if err := testEnv.Stop(); err != nil {
			t.Errorf("stopping etcd and kube-apiserver, %v", err)
		}
		_ = etcdLog.Close()
		_ = apiserverLog.Close()
	})
	if startErr != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver (logs: %s, %s), %w", etcdLog.Name(), apiserverLog.Name(), startErr)
	}
	return testEnv, nil
}

// servingFlags make a component serve its health endpoints over HTTPS on a free loopback port
// with a self-signed certificate kept in the test's temporary directory.
func servingFlags(t testing.TB) (flags []string, healthURL string, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	return []string{
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + t.TempDir(),
	}, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), nil
}

func startScheduler(t testing.TB, logs *logDir, path, kubeconfig string) (*process, string, error) {
	serving, healthURL, err := servingFlags(t)
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(logs, "kube-scheduler", path, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
	}, serving...), nil)
	return proc, healthURL, err
}

func startControllerManager(t testing.TB, logs *logDir, path, kubeconfig, apiserverCertDir string) (*process, string, error) {
	serving, healthURL, err := servingFlags(t)
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(logs, "kube-controller-manager", path, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		// Controllers act with the administrator's credentials rather than each with a
		// service account of its own, which would need the token controller first.
		"--use-service-account-credentials=false",
		// The key envtest gave kube-apiserver, so that service account tokens verify.
		"--service-account-private-key-file=" + filepath.Join(apiserverCertDir, "sa-signer.key"),
	}, serving...), nil)
	return proc, healthURL, err
}

func startKwok(t testing.TB, logs *logDir, path, kubeconfig string) (*process, string, error) {
	address, err := freeAddress()
	if err != nil {
		return nil, "", err
	}
	proc, err := startProcess(logs, "kwok", path, []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + kwokNodeAnnotationValue,
		"--server-address=" + address,
		// Renew a Lease per node as kubelets do. Without a configuration file kwok v0.7.0
		// leaves this at 0, and then neither renews leases nor heartbeats node status often
		// enough: kube-controller-manager marks its nodes unreachable after ~50s.
		"--node-lease-duration-seconds=40",
	},
		// kwok reads ~/.kwok/kwok.yaml when it exists; an empty home keeps the test hermetic.
		[]string{"HOME=" + t.TempDir()})
	return proc, "http://" + address + "/healthz", err
}
