package environment

import "syscall"

// sysProcAttr makes the kernel kill a started process when the test binary dies, so a
// crashed or interrupted test leaves no orphan holding ports.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
