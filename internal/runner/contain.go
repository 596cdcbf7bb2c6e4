package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
)

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,80}$`)

// NewRunID returns a fresh run id.
func NewRunID() string { return "wc_run_" + randomHex() }

// prepareUnit checks what every platform's Containment.Start needs (a run
// id of 1-80 letters, digits or _, an explicit environment), adds
// MarkerEnv=id to cmd's environment and returns start, or cmd.Start for
// nil.
func prepareUnit(cmd *exec.Cmd, id string, start func(*exec.Cmd) error) (func(*exec.Cmd) error, error) {
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if !runIDRE.MatchString(id) {
		return nil, fmt.Errorf("run id %q is not 1-80 letters, digits or _", id)
	}
	if cmd.Env == nil {
		return nil, errors.New("a contained command needs an explicit environment")
	}
	cmd.Env = append(cmd.Env, MarkerEnv+"="+id)
	return start, nil
}

// Mechanism names how a run's descendants are contained (see
// docs/decisions/0018-process-containment.md).
type Mechanism string

// Mechanisms.
const (
	// MechCgroup: every run is started in its own cgroup v2 leaf under a
	// cgroup the server created below its own; ending the run writes
	// cgroup.kill, which kills every process in the leaf, whatever it did
	// with sessions, process groups or its parent. Only a process allowed
	// to write the cgroup filesystem (root without a sandbox) can move
	// itself out.
	MechCgroup Mechanism = "cgroup"
	// MechSubreaper: no cgroup could be created; the server is a child
	// subreaper, so orphaned descendants reparent to it, and ending a run
	// kills every process found by descendant tracking: its process
	// group, the ppid chain below its leader, the descendants recorded
	// while it ran, and every process whose environment carries the run's
	// marker (MarkerEnv). A descendant that clears its environment and
	// leaves the process group between two guard scans is the known gap.
	MechSubreaper Mechanism = "subreaper"
	// MechGroup: only the process group is killed (a Unix other than
	// Linux: macOS, the BSDs). A descendant that leaves the group
	// survives the run.
	MechGroup Mechanism = "process_group"
	// MechJob: every run is a Windows Job Object; ending the run
	// terminates every process in the job (contain_windows.go).
	MechJob Mechanism = "job_object"
)

// MarkerEnv is the environment variable every child of a run carries:
// WEBCODEX_RUN=<run id>. Children inherit it across setsid, double forks
// and daemonizing, which is how descendant tracking finds them; it names
// the run, never a credential.
const MarkerEnv = "WEBCODEX_RUN"

// Identity is what identifies a run's processes after the server that
// started them is gone: recorded with a job so that the next start can kill
// what survived a crash.
type Identity struct {
	// Marker is the run id carried in MarkerEnv.
	Marker string `json:"marker"`
	// PID is the leader's pid, also its process group id.
	PID int `json:"pid"`
	// StartTicks is the leader's start time (clock ticks since boot, from
	// /proc/<pid>/stat), so that a recycled pid is not mistaken for it.
	StartTicks uint64 `json:"start_ticks"`
	// Cgroup is the run's cgroup v2 leaf, when MechCgroup was in force.
	Cgroup string `json:"cgroup,omitempty"`
}

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("runner: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// start starts p.cmd as a contained unit of c (nil: Setup's) named id
// (empty: a fresh one).
func (p *process) start(c *Containment, id string, start func(*exec.Cmd) error) error {
	if c == nil {
		c = Setup()
	}
	if id == "" {
		id = NewRunID()
	}
	u, err := c.Start(p.cmd, id, start)
	if err != nil {
		return err
	}
	p.unit, p.pgid = u, u.PID()
	return nil
}
