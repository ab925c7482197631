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
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	pollInterval = 100 * time.Millisecond
	startTimeout = 90 * time.Second
	stopTimeout  = 10 * time.Second
	// logTailBytes is how much of each log a failed test prints.
	logTailBytes = 4 << 10
)

// logDir holds the logs of the processes one test started. It is removed when the test
// passes; when it fails, the directory is kept and each log's path and tail are printed.
type logDir struct {
	path string

	mu    sync.Mutex
	files []string
}

func newLogDir(t testing.TB) *logDir {
	t.Helper()
	path, err := os.MkdirTemp("", "karpenter-test-logs-")
	if err != nil {
		t.Fatalf("creating a log directory, %v", err)
	}
	d := &logDir{path: path}
	// Registered first so that it runs last, after every process has stopped and flushed.
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(path)
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, file := range d.files {
			t.Logf("log of %s (tail):\n%s", file, tail(file, logTailBytes))
		}
		t.Logf("process logs kept in %s", path)
	})
	return d
}

func (d *logDir) create(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(d.path, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s, %w", name, err)
	}
	d.mu.Lock()
	d.files = append(d.files, f.Name())
	d.mu.Unlock()
	return f, nil
}

func tail(path string, n int64) string {
	data, err := os.ReadFile(path)
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

// process is one binary started by the environment, its output going to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

func startProcess(logs *logDir, name, path string, args []string, env []string) (*process, error) {
	logFile, err := logs.create(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "$ %s %q\n", path, args)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s, %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logFile.Name(), exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitHealthy polls url every pollInterval until it answers 200, the process exits, or the
// start timeout passes. TLS certificates are not verified: components serve self-signed ones.
func (p *process) waitHealthy(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
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
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before becoming healthy (%v), see %s", p.name, p.waitErr, p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy at %s after %s, see %s", p.name, url, startTimeout, p.logPath)
		case <-ticker.C:
		}
	}
}

// stop terminates the process gracefully, killing it if it does not exit in time.
func (p *process) stop() error {
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

// stopAtCleanup stops the process when the test ends; failing to stop fails the test.
func (p *process) stopAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	})
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port, %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freeAddress() (string, error) {
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
