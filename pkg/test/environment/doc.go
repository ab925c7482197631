/*
Package environment starts a real, local Kubernetes control plane for tests: exactly the
components a test asks for, each on free loopback ports, each stopped when the test ends.

	env := environment.New(t, environment.Options{
		Scheduler:         true, // real kube-scheduler
		ControllerManager: true, // real kube-controller-manager (Deployments, ReplicaSets, GC, ...)
		Kwok:              true, // kwok simulates the kubelets of nodes built with KwokNode
		Prometheus: &environment.PrometheusOptions{
			ScrapeConfigs: []environment.ScrapeConfig{{JobName: "app", Targets: []string{addr}}},
		},
	})
	env.Client.Create(ctx, environment.KwokNode("node-a", nil, corev1.ResourceList{...}))
	// env.Config (rest.Config), env.KubeconfigPath (for kubectl), env.Prometheus.URL

StartPrometheus runs a Prometheus server alone, for tests that need no cluster; in both cases
Prometheus.Stop stops it early, e.g. to test behaviour while metrics are unavailable, and
Prometheus.Restart brings it back on the same address.

Outside a test (the sandbox, a TestMain shared by a package), Start and Stop give the same
environment an explicit lifecycle; Options.Dir then chooses where logs, pid files and state
live, and KillStale cleans up after a predecessor that crashed. StartProcess runs another
binary (e.g. the controller under test) alongside, logged and stopped with the rest.

etcd and kube-apiserver always run (through controller-runtime's envtest) with the CRDs of
config/crd installed, or those of Options.CRDDirectory. The binaries come from `make
test-assets`: kube-apiserver, kube-scheduler, kube-controller-manager and kwok in bin/, etcd and
prometheus in bin/ or on PATH. A missing binary fails the test and says so; nothing is ever skipped.

Process logs are written to a directory that is removed when the test passes and kept, with
its path and the tail of each log printed, when it fails. Every process dies with the program
that started it (a parent-death signal), so an interrupted test leaves no orphan.
*/
package environment
