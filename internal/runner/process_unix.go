//go:build unix

package runner

import (
	"errors"
	"syscall"
)

// pathSeparators are the characters that make a program name a path
// rather than a name looked up on PATH.
const pathSeparators = "/"

// defaultPath is a child's PATH when the server has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// platformInherited lists the variables a child may see besides the
// common ones: none on Unix.
var platformInherited []string

// groupAttr starts a child as the leader of its own process group, so that
// one signal reaches the group and the server's terminal signals do not.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminate asks the execution to end: SIGTERM to its process group. Kill
// follows after KillGrace.
func (p *process) terminate() { syscall.Kill(-p.pgid, syscall.SIGTERM) }

// processGone reports whether no process has pid (signal 0 fails with
// ESRCH); a process of another user is not gone.
func processGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
