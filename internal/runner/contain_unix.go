//go:build unix && !linux

package runner

import (
	"os/exec"
	"syscall"
)

// A Containment starts runs as contained units. On a Unix other than Linux
// (macOS, the BSDs) there is no subreaper and no cgroup: only the process
// group is killed (MechGroup), so a descendant that leaves the group
// (setsid, a daemon) survives the run.
type Containment struct{}

var procWide = &Containment{}

// Setup returns the process's Containment (MechGroup outside Linux).
func Setup() *Containment { return procWide }

// Tracking returns the same Containment as Setup outside Linux.
func Tracking() *Containment { return procWide }

// Mechanism reports MechGroup.
func (c *Containment) Mechanism() Mechanism { return MechGroup }

// Detail says why only process groups are used.
func (c *Containment) Detail() string { return "no subreaper or cgroups on this OS" }

// A Unit is one started run: its process group.
type Unit struct {
	id  string
	pid int
}

// Start starts cmd, with start (nil: cmd.Start), with MarkerEnv=id in its
// environment.
func (c *Containment) Start(cmd *exec.Cmd, id string, start func(*exec.Cmd) error) (*Unit, error) {
	start, err := prepareUnit(cmd, id, start)
	if err != nil {
		return nil, err
	}
	if err := start(cmd); err != nil {
		return nil, err
	}
	return &Unit{id: id, pid: cmd.Process.Pid}, nil
}

// Release does nothing outside Linux.
func (u *Unit) Release() {}

// Identity returns the unit's marker and pid.
func (u *Unit) Identity() Identity { return Identity{Marker: u.id, PID: u.pid} }

// PID is the leader's pid (and process group id).
func (u *Unit) PID() int { return u.pid }

// Track returns 1 while the process group exists, else 0.
func (u *Unit) Track() int {
	if syscall.Kill(-u.pid, 0) == nil {
		return 1
	}
	return 0
}

// Kill SIGKILLs the process group and returns 1 when it existed.
func (u *Unit) Kill() int {
	if syscall.Kill(-u.pid, syscall.SIGKILL) == nil {
		return 1
	}
	return 0
}

// KillIdentity does nothing outside Linux: a pid alone cannot be told from
// a recycled one.
func KillIdentity(id Identity) int { return 0 }

// Survivors is not available outside Linux.
func Survivors(marker string) []int { return nil }

// Live returns those of pids that exist.
func Live(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Tidy does nothing outside Linux.
func (c *Containment) Tidy() {}
