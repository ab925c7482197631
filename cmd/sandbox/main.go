// Command sandbox runs Karpenter's main job on one machine — a real local control plane with
// kwok nodes, Prometheus and the AWS emulator, the controller pointed at them and the admission
// webhook — applies docs/examples, and plays a short story printing a live timeline. See
// docs/sandbox.md.
//
//	sandbox [--dir .sandbox] [--controller bin/controller] [--webhook bin/webhook] [--story=true] [--exit-after-story]
//
// STORY=0 and SANDBOX_EXIT_AFTER_STORY=1 set the last two from the environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/sandbox"
)

func main() {
	dir := flag.String("dir", ".sandbox", "directory for the kubeconfig, logs and state")
	controller := flag.String("controller", "bin/controller", "the controller binary (make build)")
	webhook := flag.String("webhook", "bin/webhook", "the admission webhook binary (make build)")
	story := flag.Bool("story", envBool("STORY", true), "play the scripted story after applying docs/examples (env STORY)")
	exitAfterStory := flag.Bool("exit-after-story", envBool("SANDBOX_EXIT_AFTER_STORY", false),
		"exit 0 once the story ends instead of running until Ctrl-C (env SANDBOX_EXIT_AFTER_STORY)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, sandbox.Options{ControllerBinary: *controller, WebhookBinary: *webhook}, *story, *exitAfterStory); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func envBool(name string, fallback bool) bool {
	value, ok := os.LookupEnv(name)
	if !ok || value == "" {
		return fallback
	}
	b, err := strconv.ParseBool(value)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: %s=%q is not a boolean\n", name, value)
		os.Exit(2)
	}
	return b
}

// run starts the stack of options (binaries only; Dir and Logf are set here).
func run(ctx context.Context, dir string, options sandbox.Options, story, exitAfterStory bool) error {
	begin := time.Now()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	release, err := claim(dir)
	if err != nil {
		return err
	}
	defer release()
	stateDir := filepath.Join(dir, "state")
	if err := cleanStale(stateDir); err != nil {
		return err
	}

	logf := func(format string, args ...any) {
		fmt.Printf("%s  %s\n", clockSince(begin), fmt.Sprintf(format, args...))
	}
	logf("starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok, Prometheus, the AWS emulator, the webhook and the controller (logs: %s)",
		filepath.Join(stateDir, "logs"))
	options.Dir, options.Logf = stateDir, logf
	stack, err := sandbox.Start(ctx, options)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping every process the sandbox started…")
		if err := stack.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: stopping, %v\n", err)
			return
		}
		fmt.Printf("every process the sandbox started has stopped; its logs stay in %s\n", filepath.Join(stateDir, "logs"))
	}()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := copyFile(stack.Env.KubeconfigPath, kubeconfig); err != nil {
		return err
	}
	// Absolute, so that the line works pasted into a shell in any directory.
	if absolute, err := filepath.Abs(kubeconfig); err == nil {
		kubeconfig = absolute
	}
	fmt.Printf(`
%s  Karpenter sandbox is up; paste the export line into a shell, and docs/sandbox.md's commands work there:
  export %s
  %s
  kubectl karpenter plan (from this repository): go run ./cmd/kubectl-karpenter plan --cluster-name %s
  Prometheus:        %s   (e.g. %s/graph?g0.expr=karpenter_queue_length)
  AWS emulator:      %s   (GET %s/_emulator/instances)
  controller log:    %s
  webhook log:       %s

`, clockSince(begin), strings.Join(stack.ShellEnv(kubeconfig), " "), suggestedCommand, sandbox.ClusterName, stack.Env.Prometheus.URL, stack.Env.Prometheus.URL,
		stack.EmulatorURL, stack.EmulatorURL, stack.ControllerLog(), stack.WebhookLog())

	if err := applyExamples(ctx, stack, logf); err != nil {
		return err
	}
	if story {
		if err := playStory(ctx, stack, begin); err != nil {
			return err
		}
		if exitAfterStory {
			return nil
		}
	}
	fmt.Println("\nthe sandbox keeps running: press Ctrl-C to stop it")
	<-ctx.Done()
	return nil
}

// suggestedCommand is the README's first command in a shell beside the sandbox.
const suggestedCommand = "kubectl get ha,sng,mp,provisioners,nodes"

// claim records this process in dir/sandbox.pid, refusing when another live sandbox holds it.
func claim(dir string) (release func(), err error) {
	pidFile := filepath.Join(dir, "sandbox.pid")
	if data, err := os.ReadFile(pidFile); err == nil { //nolint:gosec // G304: the sandbox's own pid file.
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid != os.Getpid() && alive(pid) {
			return nil, fmt.Errorf("another sandbox (pid %d) is running in %s; stop it with Ctrl-C or `kill %d`", pid, dir, pid)
		}
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(pidFile) }, nil
}

// alive reports whether pid runs a sandbox.
func alive(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "sandbox")
}

// cleanStale kills what a crashed sandbox left running and removes its state: etcd data, certs
// and ports from a previous run are never reused.
func cleanStale(stateDir string) error {
	if _, err := os.Stat(stateDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	killed, err := environment.KillStale(stateDir)
	if err != nil {
		return fmt.Errorf("cleaning up after a previous sandbox, %w", err)
	}
	if len(killed) > 0 {
		fmt.Printf("killed processes a previous sandbox left running: %s\n", strings.Join(killed, ", "))
	}
	fmt.Printf("removing the state of a previous sandbox in %s\n", stateDir)
	return os.RemoveAll(stateDir)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from) //nolint:gosec // G304: the kubeconfig the sandbox's stack wrote.
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600) //nolint:gosec // G703: both paths are the sandbox's own.
}

func clockSince(begin time.Time) string {
	elapsed := time.Since(begin).Round(time.Second)
	return fmt.Sprintf("[%02d:%02d]", int(elapsed.Minutes()), int(elapsed.Seconds())%60)
}
