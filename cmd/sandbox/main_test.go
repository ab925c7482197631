package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestTheSandboxAsANewcomerMeetsIt runs the sandbox binary as `make sandbox STORY=0` does: its
// banner's export line sets what `kubectl karpenter plan` needs against the emulator (region,
// endpoint, credentials that are not the machine's), its suggested command is the README's, and
// on Ctrl-C it says when every process it started has stopped.
func TestTheSandboxAsANewcomerMeetsIt(t *testing.T) {
	dir := t.TempDir()
	controller, webhook, err := sandbox.Build(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "bin", "sandbox")
	if out, err := environment.GoBuild(".", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	command := exec.CommandContext(ctx, binary, "--dir", filepath.Join(dir, "sandbox"), "--controller", controller, "--webhook", webhook, "--story=false")
	command.Dir = filepath.Join("..", "..")
	stdout, err := command.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	command.Stderr = command.Stdout
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var banner []string
	for lines.Scan() {
		banner = append(banner, lines.Text())
		if strings.Contains(lines.Text(), "the sandbox keeps running") {
			break
		}
	}
	output := strings.Join(banner, "\n")
	export := regexp.MustCompile(`(?m)^\s*export (.*)$`).FindStringSubmatch(output)
	if export == nil {
		t.Fatalf("no export line in the banner:\n%s", output)
	}
	for _, variable := range []string{"KUBECONFIG=", "AWS_REGION=us-west-2", "AWS_ENDPOINT_URL=http", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_EC2_METADATA_DISABLED=true"} {
		if !strings.Contains(export[1], variable) {
			t.Errorf("the export line does not set %s: %s", variable, export[1])
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	suggested := regexp.MustCompile("(?m)^```sh\n(kubectl get [^\n]*)\n```").FindSubmatch(readme)
	if suggested == nil {
		t.Fatal("the README suggests no kubectl get command")
	}
	if !strings.Contains(output, "\n  "+string(suggested[1])+"\n") {
		t.Errorf("the banner does not suggest the README's %q:\n%s", suggested[1], output)
	}

	if err := command.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var after []string
	for lines.Scan() {
		after = append(after, lines.Text())
	}
	_ = command.Wait()
	if last := strings.Join(after, "\n"); !strings.Contains(last, "every process the sandbox started has stopped") {
		t.Errorf("on Ctrl-C the sandbox does not say that every process it started has stopped:\n%s", last)
	}
}
