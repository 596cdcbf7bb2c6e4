//go:build windows

package mcpprovider

import "syscall"

// groupAttr needs nothing on Windows: the containment's Job Object holds
// the provider and what it starts.
func groupAttr() *syscall.SysProcAttr { return nil }
