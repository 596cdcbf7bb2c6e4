//go:build windows

package lsp

import "syscall"

// groupAttr needs nothing on Windows: the containment's Job Object holds
// the server and what it starts.
func groupAttr() *syscall.SysProcAttr { return nil }
