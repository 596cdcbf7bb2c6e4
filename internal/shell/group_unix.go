//go:build unix

package shell

import "syscall"

// platformSupport reports why persistent shells cannot run here: never
// on Unix.
func platformSupport() error { return nil }

// groupAttr starts the shell as the leader of its own process group.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to process group pgid.
func signalGroup(pgid int, sig syscall.Signal) { syscall.Kill(-pgid, sig) }
