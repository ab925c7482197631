//go:build !linux

package environment

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; processes are stopped at cleanup.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}

// killedWithTest returns binary: there is no parent-death signal outside Linux.
func killedWithTest(_, binary, _ string) (string, error) {
	return binary, nil
}
