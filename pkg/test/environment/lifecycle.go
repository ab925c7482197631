package environment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lifecycle owns what an environment creates: its state directory (logs, certificates,
// configuration, pid files) and the functions that stop its processes, run last-in first-out.
type lifecycle struct {
	dir  string
	logf func(format string, args ...any)
	logs *logDir

	mu       sync.Mutex
	stoppers []func() error
	nextDir  int
}

func newLifecycle(dir string, logf func(string, ...any)) (*lifecycle, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	for _, sub := range []string{"logs", "pids"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return nil, fmt.Errorf("creating the environment's directory, %w", err)
		}
	}
	return &lifecycle{dir: dir, logf: logf, logs: &logDir{path: filepath.Join(dir, "logs")}}, nil
}

// tempDir is a new directory for one component's files, e.g. its certificates.
func (l *lifecycle) tempDir(name string) (string, error) {
	l.mu.Lock()
	l.nextDir++
	n := l.nextDir
	l.mu.Unlock()
	dir := filepath.Join(l.dir, "state", fmt.Sprintf("%s-%d", name, n))
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("cleaning %s, %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("creating %s, %w", dir, err)
	}
	return dir, nil
}

// onStop registers a function to run at stop, before those registered earlier.
func (l *lifecycle) onStop(stop func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stoppers = append(l.stoppers, stop)
}

// stop runs every registered function once, last registered first, and joins their errors.
func (l *lifecycle) stop() error {
	l.mu.Lock()
	stoppers := l.stoppers
	l.stoppers = nil
	l.mu.Unlock()
	var errs []error
	for i := len(stoppers) - 1; i >= 0; i-- {
		errs = append(errs, stoppers[i]())
	}
	return errors.Join(errs...)
}

func (l *lifecycle) pidFile(name string) string {
	return filepath.Join(l.dir, "pids", name+".pid")
}

// KillStale kills the processes an earlier environment in dir started and that still run,
// e.g. after the program that owned them was killed before it could stop them. Each process
// left a pid file; a pid is killed only while its command line still names the binary the
// file is named after, so a reused pid is left alone. The pid files are removed.
func KillStale(dir string) (killed []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".pid")
		data, err := os.ReadFile(file) //nolint:gosec // G304: a pid file of this environment's directory.
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err == nil && pid > 1 && runningAs(pid, name) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("killing stale %s (pid %d), %w", name, pid, err))
			} else {
				killed = append(killed, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

// runningAs reports whether process pid runs a command line mentioning name.
func runningAs(pid int, name string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(cmdline), name)
}
