//go:build unix && !linux

package sshresource

import "syscall"

// masterProcAttr has nothing to add where the kernel offers no parent
// death signal: a master outlives a runner that dies without Close.
func masterProcAttr() *syscall.SysProcAttr { return nil }
