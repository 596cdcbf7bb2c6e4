//go:build unix

package mcpprovider

import "syscall"

// groupAttr starts a provider as the leader of its own process group, so
// that its containment unit can kill it with what it started.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
