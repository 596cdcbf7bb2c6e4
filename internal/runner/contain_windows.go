//go:build windows

package runner

import (
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A Containment starts runs as contained units. On Windows each run gets
// its own Job Object (MechJob): the leader is assigned to it right after
// it starts and its descendants are created inside it, whatever console or
// process group they choose; ending the run terminates the job, every
// process in it at once. The job is created with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so a server that dies takes its runs
// with it. The known gap: a process the leader starts in the moment
// between its creation and its assignment to the job is outside the job
// and survives the run.
type Containment struct{}

var procWide = &Containment{}

// Setup returns the process's Containment (MechJob on Windows).
func Setup() *Containment { return procWide }

// Tracking returns the same Containment as Setup on Windows.
func Tracking() *Containment { return procWide }

// Mechanism reports MechJob.
func (c *Containment) Mechanism() Mechanism { return MechJob }

// Detail says what contains a run on Windows.
func (c *Containment) Detail() string {
	return "a Job Object per run; no cgroup or subreaper on Windows"
}

// killedExitCode is the exit code TerminateJobObject gives every process
// of a killed run: 1, as os.Process.Kill does on Windows.
const killedExitCode = 1

// A Unit is one started run: its Job Object.
type Unit struct {
	id  string
	pid int

	mu sync.Mutex
	// job is the run's Job Object; 0 once Kill closed it after the
	// leader was reaped.
	job windows.Handle
	// reaped is set once os/exec waited for the leader.
	reaped bool
}

// Start starts cmd (whose Env must be set) with start (nil: cmd.Start) as
// the unit named id: its environment gets MarkerEnv=id and the started
// leader is assigned to a fresh Job Object. A leader that cannot be
// assigned is killed, and Start fails: a run is never left uncontained.
func (c *Containment) Start(cmd *exec.Cmd, id string, start func(*exec.Cmd) error) (*Unit, error) {
	start, err := prepareUnit(cmd, id, start)
	if err != nil {
		return nil, err
	}
	job, err := newJob()
	if err != nil {
		return nil, fmt.Errorf("job object: %w", err)
	}
	if err := start(cmd); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	if err := assign(job, cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		windows.CloseHandle(job)
		return nil, fmt.Errorf("job object: %w", err)
	}
	return &Unit{id: id, pid: cmd.Process.Pid, job: job}, nil
}

// newJob creates a Job Object that kills its processes when its last
// handle is closed.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// assign puts process pid (a started, not yet waited child, so its pid
// cannot have been reused) into job.
func assign(job windows.Handle, pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// active returns how many processes of job have not exited (0 when the
// job cannot be queried).
func active(job windows.Handle) int {
	var info jobAccounting
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0
	}
	return int(info.ActiveProcesses)
}

// Release tells the unit that os/exec has waited for its leader. It does
// not kill anything; call Kill for that.
func (u *Unit) Release() {
	u.mu.Lock()
	u.reaped = true
	u.mu.Unlock()
}

// Identity returns the unit's marker and pid.
func (u *Unit) Identity() Identity { return Identity{Marker: u.id, PID: u.pid} }

// PID is the leader's pid (and console process group id).
func (u *Unit) PID() int { return u.pid }

// Track returns how many processes of the job have not exited (the
// process limit's count).
func (u *Unit) Track() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.job == 0 {
		return 0
	}
	return active(u.job)
}

// Kill terminates every process of the job and returns how many had not
// exited (the leader included while it was alive). Once the leader is
// reaped the job's handle is closed and later calls do nothing.
func (u *Unit) Kill() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.job == 0 {
		return 0
	}
	n := active(u.job)
	if n > 0 {
		windows.TerminateJobObject(u.job, killedExitCode)
	}
	if u.reaped {
		// KILL_ON_JOB_CLOSE: whatever joined the job since is killed
		// when this last handle goes.
		windows.CloseHandle(u.job)
		u.job = 0
	}
	return n
}

// KillIdentity does nothing on Windows: a run's Job Object died with the
// server that created it (KILL_ON_JOB_CLOSE), and a pid alone cannot be
// told from a recycled one.
func KillIdentity(id Identity) int { return 0 }

// Survivors is not available on Windows: another process's environment,
// where the marker is, cannot be read.
func Survivors(marker string) []int { return nil }

// Live returns those of pids that have not exited (see processGone).
func Live(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if !processGone(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// Tidy does nothing on Windows: a Job Object leaves nothing to remove.
func (c *Containment) Tidy() {}
