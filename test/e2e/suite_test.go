// Package e2e drives Karpenter's main job end to end on the sandbox's stack (test/sandbox): a
// real control plane with kwok nodes joined for emulated AWS instances, Prometheus scraping
// the controller, and the controller binary itself, started once for the package. The tests
// assert on what a user would see: objects Ready, replicas, nodes, pods.
//
// Tests that disturb the stack (Prometheus stopped, controller killed) run first, one at a
// time; the others each own one node group and run in parallel after them.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"karpenter.sh/karpenter/test/sandbox"
)

var stack *sandbox.Stack

// controllerBinary and webhookBinary are this tree's cmd/controller and cmd/webhook, which the
// stack runs; a test that starts a stack of its own runs them too.
var controllerBinary, webhookBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "karpenter-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	controllerBinary, webhookBinary, err = sandbox.Build(filepath.Join(dir, "bin"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stack, err = sandbox.Start(ctx, sandbox.Options{
		Dir:              filepath.Join(dir, "stack"),
		ControllerBinary: controllerBinary,
		WebhookBinary:    webhookBinary,
		Logf: func(format string, args ...any) {
			if testing.Verbose() {
				fmt.Printf(format+"\n", args...)
			}
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the e2e stack (logs kept in %s): %v\n", dir, err)
		return 1
	}
	if testing.Verbose() {
		fmt.Printf("e2e stack ready in %s\n", time.Since(begin).Round(time.Millisecond))
	}
	code := m.Run()
	if err := stack.Stop(); err != nil {
		// A component slow to stop is killed; the tests' verdict stands.
		fmt.Fprintf(os.Stderr, "stopping the e2e stack: %v\n", err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e logs kept in %s\n", filepath.Join(dir, "stack", "logs"))
		return code
	}
	_ = os.RemoveAll(dir)
	return code
}
