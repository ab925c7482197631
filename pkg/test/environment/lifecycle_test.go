//go:build linux

package environment

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestKillStaleKillsOnlyTheProcessesItsPidFilesName(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	// start runs `sleep 60`, waits for it once in the background (so that the test and its
	// cleanup never call Wait concurrently), and returns once its command line is in /proc:
	// exec.Cmd.Start returns when the exec has begun, and under load /proc/<pid>/cmdline is
	// empty for a moment after, which KillStale would rightly take for another program.
	start := func() (*exec.Cmd, <-chan struct{}) {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		deadline := time.Now().Add(10 * time.Second)
		for !runningAs(cmd.Process.Pid, "sleep") {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d never showed sleep's command line", cmd.Process.Pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return cmd, exited
	}
	writePid := func(name string, pid int) {
		if err := os.WriteFile(filepath.Join(dir, "pids", name+".pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stale, staleExited := start()
	writePid("sleep", stale.Process.Pid)
	// A pid reused by another program: its command line does not name the binary.
	reused, reusedExited := start()
	writePid("kube-apiserver", reused.Process.Pid)

	killed, err := KillStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 {
		t.Errorf("killed %v, want only the stale sleep", killed)
	}
	select {
	case <-staleExited:
	case <-time.After(10 * time.Second):
		t.Error("the stale process still runs")
	}
	// Still running: our SIGTERM, not KillStale's SIGKILL, ends it.
	_ = reused.Process.Signal(syscall.SIGTERM)
	<-reusedExited
	if status, ok := reused.ProcessState.Sys().(syscall.WaitStatus); !ok || status.Signal() != syscall.SIGTERM {
		t.Errorf("the process with a reused pid ended with %v, want our SIGTERM", reused.ProcessState)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(files) != 0 {
		t.Errorf("pid files left: %v", files)
	}
}

// TestExitedComponentIsNotHealthy: a component that exits at start (as one does when another
// process holds its port) is not taken for healthy because something answers its health URL.
func TestExitedComponentIsNotHealthy(t *testing.T) {
	l, err := newLifecycle(t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	path, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer other.Close()
	proc, err := startProcess(l, "component", path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-proc.Exited()
	err = proc.waitHealthy(t.Context(), other.URL)
	var exited *exitedError
	if !errors.As(err, &exited) || !exited.answered {
		t.Errorf("waitHealthy = %v, want the component's exit, though its health URL answered", err)
	}
}
