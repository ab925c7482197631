package environment

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startAttempts bounds how often a component that exits at start is started again.
	startAttempts = 3
	pollInterval  = 100 * time.Millisecond
	startTimeout  = 90 * time.Second
	stopTimeout   = 10 * time.Second
	// logTailBytes is how much of each log a failed test prints.
	logTailBytes = 4 << 10
)

// logDir holds the logs of the processes an environment started, one file per process name;
// a process started again under the same name appends to its log.
type logDir struct {
	path string
}

func (d *logDir) create(name string) (*os.File, error) {
	path := filepath.Join(d.path, name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) //nolint:gosec // G304: a log of this environment's directory.
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s, %w", name, err)
	}
	return f, nil
}

// logTails renders the end of every log of the environment in dir, for a failed test.
func logTails(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	var b strings.Builder
	for _, file := range files {
		fmt.Fprintf(&b, "log of %s (tail):\n%s\n", file, tail(file, logTailBytes))
	}
	return b.String()
}

func tail(path string, n int64) string {
	data, err := os.ReadFile(path) //nolint:gosec // G304: a log this environment wrote.
	if err != nil {
		return err.Error()
	}
	if int64(len(data)) > n {
		data = data[int64(len(data))-n:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// ProcessOptions describe a process to run in an environment.
type ProcessOptions struct {
	// Name names the log (<dir>/logs/<name>.log) and the pid file.
	Name string
	Path string
	Args []string
	// Env is added to the environment's own.
	Env []string
	// HealthURL, when set, is polled until it answers 200 before StartProcess returns.
	HealthURL string
}

// Process is a binary started by an environment, its output going to a log file. It dies with
// the program that started it (parent-death signal) and is stopped by Environment.Stop.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	pidFile string
	exited  chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

func startProcess(l *lifecycle, name, path string, args []string, env []string) (*Process, error) {
	logFile, err := l.logs.create(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...) //nolint:gosec // G204: the test asked for this binary and these arguments.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "$ %s %q\n", path, args)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s, %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logFile.Name(), pidFile: l.pidFile(name), exited: make(chan struct{})}
	// Best effort: the pid file only serves KillStale after a crash of the starting program.
	_ = os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		_ = os.Remove(p.pidFile)
		close(p.exited)
	}()
	return p, nil
}

// LogPath is the file receiving the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// waitHealthy polls url every pollInterval until it answers 200, the process exits, or the
// start timeout passes. TLS certificates are not verified: components serve self-signed ones.
func (p *Process) waitHealthy(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	httpClient := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback, self-signed
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("building the health request for %s, %w", p.name, err)
		}
		if resp, err := httpClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// Another process may hold the port this one failed to bind.
				select {
				case <-p.exited:
					return &exitedError{name: p.name, err: p.waitErr, logPath: p.logPath, answered: true}
				default:
				}
				return nil
			}
		}
		select {
		case <-p.exited:
			return &exitedError{name: p.name, err: p.waitErr, logPath: p.logPath}
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy at %s after %s, see %s", p.name, url, startTimeout, p.logPath)
		case <-ticker.C:
		}
	}
}

// exitedError is a process that exited before it became healthy: answered is whether its health
// endpoint answered all the same, as another process on a port it failed to bind would.
type exitedError struct {
	name     string
	err      error
	logPath  string
	answered bool
}

func (e *exitedError) Error() string {
	if e.answered {
		return fmt.Sprintf("%s exited (%v) though its health endpoint answered, see %s", e.name, e.err, e.logPath)
	}
	return fmt.Sprintf("%s exited before becoming healthy (%v), see %s", e.name, e.err, e.logPath)
}

// Stop terminates the process gracefully, killing it if it does not exit in time.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.stopErr = fmt.Errorf("%s did not stop within %s and was killed", p.name, stopTimeout)
		}
	})
	return p.stopErr
}

// Kill kills the process at once (SIGKILL), as a crash would, and waits for it to exit.
func (p *Process) Kill() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// handedOut are the ports freePort has returned in this process. The kernel may give a port
// closed a moment ago to the next caller, and components started side by side (kube-scheduler
// and kube-controller-manager) were once both told to listen on the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago and that it has not
// returned before in this process.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port, %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("finding a free port, every port the kernel offered was handed out before")
}

// FreePort is freePort for a test, which fails if no port is free.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreeAddress is a loopback address whose port was free a moment ago, for a process to listen on.
func FreeAddress() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// runConcurrently runs each function in its own goroutine and joins their errors.
func runConcurrently(fns ...func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
