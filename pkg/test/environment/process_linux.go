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
// signal. It returns a script in dir that execs binary under setpriv --pdeathsig, or binary
// itself when util-linux's setpriv is not installed.
func killedWithTest(dir, binary string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return binary, nil
	}
	script := filepath.Join(dir, filepath.Base(binary))
	content := fmt.Sprintf("#!/bin/sh\nexec %q --pdeathsig KILL -- %q \"$@\"\n", setpriv, binary)
	if err := os.WriteFile(script, []byte(content), 0o755); err != nil {
		return "", fmt.Errorf("writing a wrapper for %s, %w", binary, err)
	}
	return script, nil
}
