package sshresource

import "syscall"

// masterProcAttr makes the kernel kill a master when the runner dies, so
// no authenticated connection outlives the process that owns it.
func masterProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
