package environment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// sysProcAttr makes the kernel kill a started process when the test binary dies (a test
// timeout, Ctrl-C), so that no orphan keeps running and holding ports.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// killedWithTest gives binaries that envtest starts the same protection: envtest starts them
// in a process group of their own, which Ctrl-C does not reach, without a parent-death
// signal. It returns a script in dir that records its pid in pidFile (exec keeps it) and execs
// binary under setpriv --pdeathsig, or without it when util-linux's setpriv is not installed.
func killedWithTest(dir, binary, pidFile string) (string, error) {
	script := filepath.Join(dir, filepath.Base(binary))
	content := fmt.Sprintf("#!/bin/sh\necho $$ > %q\nexec %q \"$@\"\n", pidFile, binary)
	if setpriv, err := exec.LookPath("setpriv"); err == nil {
		content = fmt.Sprintf("#!/bin/sh\necho $$ > %q\nexec %q --pdeathsig KILL -- %q \"$@\"\n", pidFile, setpriv, binary)
	}
	//nolint:gosec // G306: the wrapper must be executable; it holds nothing secret.
	if err := os.WriteFile(script, []byte(content), 0o755); err != nil {
		return "", fmt.Errorf("writing a wrapper for %s, %w", binary, err)
	}
	return script, nil
}
