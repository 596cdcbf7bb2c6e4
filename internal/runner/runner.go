// Package runner is the local execution host: it starts real processes,
// each in its own process group with a scrubbed environment, bounds what it
// keeps of their output, enforces timeouts and a process-count limit, and
// kills the whole group on timeout, cancellation or Stop.
//
// Every process is started as a contained [Unit] (see [Setup]): when the
// execution ends, however it ends, every descendant is killed, including
// those that left the process group (setsid, double forks, daemons). That
// holds on Linux; [Mechanism] names what other systems give (macOS: the
// process group only; Windows: a Job Object per run). The sandbox is
// Landlock, so Linux only: elsewhere a confined mode is in force as
// [Unavailable].
//
// The [Host] interface is what tools use, so that a remote runner can serve
// the same calls later. [Local] implements it on this machine.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of one execution.
const (
	// DefaultTimeout is used when a Spec sets none.
	DefaultTimeout = 10 * time.Minute
	// MaxTimeout is the longest timeout a Spec may ask for.
	MaxTimeout = 24 * time.Hour
	// DefaultTailBytes is the output kept per stream when a Spec sets none.
	DefaultTailBytes = 16 << 10
	// MaxTailBytes is the most output kept per stream.
	MaxTailBytes = 256 << 10
	// MaxStdinBytes bounds the stdin a caller may supply.
	MaxStdinBytes = 1 << 20
	// MaxArgs and MaxArgBytes bound an argv.
	MaxArgs     = 1024
	MaxArgBytes = 128 << 10
	// KillGrace is how long a process group has between SIGTERM and
	// SIGKILL.
	KillGrace = 2 * time.Second
	// MaxProcesses is the most processes one execution's group may hold;
	// beyond it the group is killed (a fork-bomb guard).
	MaxProcesses = 256
	// GuardInterval is how often the process-count guard counts a
	// group; a scan of /proc costs well under a millisecond.
	GuardInterval = 100 * time.Millisecond
	// outputDrain bounds the wait for output pipes after the process
	// exited (a backgrounded grandchild may hold them open).
	outputDrain = 500 * time.Millisecond
)

// ErrNotStarted marks a failure before the process ran: nothing executed.
var ErrNotStarted = errors.New("runner: not started")

// A Spec describes one execution.
type Spec struct {
	// Argv is the literal program and arguments; no shell is involved
	// unless Argv names one.
	Argv []string
	// Dir is the absolute working directory; the caller has confined it.
	Dir string
	// Env holds additions to the scrubbed base environment.
	Env map[string]string
	// Stdin is written to the process and then closed; nil gives /dev/null.
	Stdin []byte
	// Timeout bounds the run (0 = DefaultTimeout).
	Timeout time.Duration
	// TailBytes is the output kept per stream (0 = DefaultTailBytes).
	TailBytes int
	// Stdout and Stderr, when set, also receive the full streams (a job's
	// output files).
	Stdout, Stderr io.Writer
	// RunID names the execution's containment unit (its MarkerEnv value;
	// a job's id); empty means a fresh one.
	RunID string
	// Sandbox is what the execution asks of its confinement; the Local's
	// Policy decides the mode in force (sandbox.go).
	Sandbox Sandbox
	// SSH, when set, runs the execution on an SSH resource of the remote
	// runner serving the project instead of Argv on its host: Argv is the
	// shell and its -c command, run there. A Local refuses it (this host
	// has no SSH resources).
	SSH *SSH
	// Script, when set, is a script body for the interpreter Argv[0]: the
	// host that starts the process writes it, on its own machine, to a
	// private file (0600, in a new 0700 directory under its temporary
	// directory) just before the start, inserts the file's path as
	// Argv[1], and removes the file and its directory when the execution
	// ends, however it ends (at once when the start fails). At most
	// MaxScriptBytes; never with SSH.
	Script []byte
	// Private, when set, gives the execution a directory of its own on
	// the machine of the host that starts it: made (0700, under its
	// temporary directory) before the start, writable by the process
	// under every sandbox mode but Off, its path put in place of
	// PrivateDirToken in Argv and in Env values, and removed when the
	// execution ends, however it ends (at once when the start fails).
	// Never with SSH.
	Private bool
	// Collect, with Private, names a file of the private directory (a
	// plain name, ValidCollect) that the host copies to CollectTo (at
	// most MaxCollectBytes; nothing when there is none) once the process
	// ended, before it removes the directory and reports the end.
	Collect   string
	CollectTo io.Writer
}

// SSH names where a one-shot command runs on an SSH resource.
type SSH struct {
	// Resource is the resource's name on the runner.
	Resource string
	// Session is the Workflow Session the command runs for (its masters
	// are per session).
	Session string
	// Cwd is the remote working directory the call or the session chose;
	// "" leaves it to the resource's default_cwd, then the login
	// directory.
	Cwd string
}

// Validate checks a Spec's bounds. It does not look at the filesystem.
func (s Spec) Validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return errors.New("argv must name a program")
	}
	if len(s.Argv) > MaxArgs {
		return fmt.Errorf("argv has more than %d arguments", MaxArgs)
	}
	n := 0
	for _, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("argv holds a NUL byte")
		}
		n += len(a)
	}
	if n > MaxArgBytes {
		return fmt.Errorf("argv is longer than %d bytes", MaxArgBytes)
	}
	if s.Timeout < 0 || s.Timeout > MaxTimeout {
		return fmt.Errorf("timeout must be between 1s and %s", MaxTimeout)
	}
	if s.TailBytes < 0 || s.TailBytes > MaxTailBytes {
		return fmt.Errorf("output tail must be at most %d bytes", MaxTailBytes)
	}
	if len(s.Stdin) > MaxStdinBytes {
		return fmt.Errorf("stdin is longer than %d bytes", MaxStdinBytes)
	}
	if len(s.Script) > MaxScriptBytes {
		return fmt.Errorf("script is longer than %d bytes", MaxScriptBytes)
	}
	if (s.Script != nil || s.Private) && s.SSH != nil {
		return errors.New("a script or a private directory never goes to an SSH resource")
	}
	if s.Collect != "" && (!s.Private || !ValidCollect(s.Collect)) {
		return errors.New("collect names a plain file of the private directory")
	}
	if s.RunID != "" && !runIDRE.MatchString(s.RunID) {
		return errors.New("run id must be 1-80 letters, digits or _")
	}
	return ValidateEnv(s.Env)
}

// Ending says how an execution ended.
type Ending string

// Endings.
const (
	Exited       Ending = "exited"
	TimedOut     Ending = "timed_out"
	Cancelled    Ending = "cancelled"
	Stopped      Ending = "stopped"
	ProcessLimit Ending = "process_limit_exceeded"
	Signaled     Ending = "signaled"
)

// A Result is a finished execution.
type Result struct {
	// ExitCode is the process's exit status, or -1 when a signal ended it.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Ending   Ending `json:"ending"`
	// KilledGroup is true when the runner had to kill the process group
	// or any other process of the execution's unit.
	KilledGroup bool          `json:"killed_group"`
	Duration    time.Duration `json:"-"`
	Stdout      Output        `json:"stdout"`
	Stderr      Output        `json:"stderr"`
	// Sandbox is the sandbox mode in force for the execution.
	Sandbox Mode `json:"sandbox"`
}

// Host runs executions. Local is the implementation on this machine; a
// remote runner implements the same interface.
type Host interface {
	// Start begins an execution. An error wrapping ErrNotStarted means
	// nothing ran.
	Start(ctx context.Context, s Spec) (Process, error)
}

// A Reattacher is a Host whose processes outlive this server process: a
// remote runner keeps running what it started when its connection or this
// server goes away, and holds each process (running or finished) until it
// is released. Its processes are named by their Spec's RunID.
type Reattacher interface {
	Host
	// ID names the host (a remote runner's client id).
	ID() string
	// Adopt supervises again the process of run id, started by an earlier
	// server process: its output continues from the offsets this server
	// already holds of each stream (see Attach) into a.Stdout and
	// a.Stderr. An error means the host does not hold that process (its
	// outcome is unknown) or cannot be reached now.
	Adopt(ctx context.Context, runID string, a Attach) (Process, error)
	// Release lets the host forget a process whose outcome this server has
	// recorded (and stops it if it still runs).
	Release(runID string)
}

// Attach is what Adopt continues from: how much of each stream this server
// holds, where the rest goes, and how much output to keep for the tails.
type Attach struct {
	// StdoutOffset and StderrOffset are the bytes of each stream already
	// held: output continues from there.
	StdoutOffset, StderrOffset int64
	Stdout, Stderr             io.Writer
	TailBytes                  int
	// Report, when set, takes the rest of the file the start collects
	// (Spec.Collect), from ReportOffset on.
	Report       io.Writer
	ReportOffset int64
}

// ErrHostRestarted is wrapped by Process.Wait's error when the host that
// ran the process restarted: the process and its outcome are gone.
var ErrHostRestarted = errors.New("the runner restarted; the process is gone with it")

// A Skipper is a writer that can be told n bytes of its stream will never
// come (a remote runner no longer holds them); it counts them as dropped
// and stores nothing after them, so that what it stored stays a prefix of
// the stream.
type Skipper interface {
	Skip(n int64)
}

// Local runs processes on this machine.
type Local struct {
	// Getenv reads the server environment that children may inherit (nil:
	// os.Getenv).
	Getenv func(string) string
	// Contain contains the processes (nil: Setup's).
	Contain *Containment
	// Policy confines every child (nil: none is confined, and each
	// Result says Off).
	Policy *Policy
}

var _ Host = (*Local)(nil)

// A Process is a started execution, on this machine (Local) or on a
// remote runner.
type Process interface {
	// Done is closed when the execution has finished.
	Done() <-chan struct{}
	// Wait blocks until the execution finishes or ctx ends (which does
	// not stop the process: use Stop). An error means the result is not
	// known (a remote runner's connection ended meanwhile).
	Wait(ctx context.Context) (Result, error)
	// Snapshot returns the output so far.
	Snapshot() (stdout, stderr Output)
	// Stop kills the execution.
	Stop()
	// Sandbox is the sandbox mode in force for the execution.
	Sandbox() Mode
	// PID is the process id of the group leader on its machine.
	PID() int
	// Identity identifies the execution's processes on this machine;
	// zero for a process on a remote runner.
	Identity() Identity
}

// process is a Process started by Local.
type process struct {
	cmd     *exec.Cmd
	unit    *Unit
	pgid    int
	started time.Time
	stdout  *Tail
	stderr  *Tail
	done    chan struct{}
	result  Result
	conf    *Confinement
	// cleanup collects the private directory's file and removes it and
	// the script file once the execution ended.
	cleanup func()

	mu     sync.Mutex
	ending Ending // why the runner killed the group, if it did
	killed bool
}

// Start implements Host.
func (l *Local) Start(ctx context.Context, s Spec) (Process, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotStarted, err)
	}
	if s.SSH != nil {
		return nil, fmt.Errorf("%w: this host has no SSH resources", ErrNotStarted)
	}
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.TailBytes == 0 {
		s.TailBytes = DefaultTailBytes
	}
	env := ChildEnv(getenv, s.Env)
	path := s.Argv[0]
	if !strings.ContainsAny(path, pathSeparators) {
		p, err := LookPath(path, env)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: not found on PATH", ErrNotStarted, path)
		}
		path = p
	}
	if st, err := os.Stat(s.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: working directory does not exist", ErrNotStarted)
	}
	// The private directory and the script exist before the confinement
	// is compiled: a ruleset that grants reads path by path around a
	// denied directory then grants them too.
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	if s.Private {
		var finish func()
		var err error
		if s, finish, err = makePrivate(s); err != nil {
			return nil, fmt.Errorf("%w: cannot make the private directory: %v", ErrNotStarted, err)
		}
		cleanups = append(cleanups, finish)
		env = ChildEnv(getenv, s.Env) // with the directory's path
	}
	if s.Script != nil {
		var remove func()
		var err error
		if s.Argv, remove, err = writeScript(s.Argv, s.Script); err != nil {
			cleanup()
			return nil, fmt.Errorf("%w: cannot write the script file: %v", ErrNotStarted, err)
		}
		cleanups = append(cleanups, remove)
	}
	conf, err := l.Policy.Confine(s.Sandbox)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("%w: %v", ErrNotStarted, err)
	}
	defer conf.Close(l.Policy)
	cmd := &exec.Cmd{Path: path, Args: s.Argv, Dir: s.Dir, Env: conf.Env(env)}
	cmd.SysProcAttr = groupAttr()
	p := &process{cmd: cmd, conf: conf, stdout: NewTail(s.TailBytes), stderr: NewTail(s.TailBytes), done: make(chan struct{}), cleanup: cleanup}
	cmd.Stdout = tee(p.stdout, s.Stdout)
	cmd.Stderr = tee(p.stderr, s.Stderr)
	if s.Stdin != nil {
		cmd.Stdin = strings.NewReader(string(s.Stdin))
	}
	cmd.WaitDelay = outputDrain
	p.started = time.Now()
	if err := p.start(l.Contain, s.RunID, conf.Start); err != nil {
		cleanup()
		return nil, fmt.Errorf("%w: %v", ErrNotStarted, err)
	}
	go p.supervise(ctx, s.Timeout)
	return p, nil
}

func tee(t *Tail, w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(t, w)
}

// supervise waits for the process while enforcing the timeout, the
// caller's cancellation and the process limit.
func (p *process) supervise(ctx context.Context, timeout time.Duration) {
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	guard := time.NewTicker(GuardInterval)
	defer guard.Stop()
	var err error
loop:
	for {
		select {
		case err = <-waited:
			break loop
		case <-timer.C:
			p.kill(TimedOut)
		case <-ctx.Done():
			p.kill(Cancelled)
		case <-guard.C:
			if p.unit.Track() > MaxProcesses {
				p.kill(ProcessLimit)
			}
		}
	}
	// The leader is gone; everything it left (in its group or not) goes
	// with it.
	p.unit.Release()
	if p.unit.Kill() > 0 {
		p.mu.Lock()
		p.killed = true
		p.mu.Unlock()
	}
	p.finish(err)
	p.cleanup() // before Done: a caller that saw the end has the collected file and sees no other
	close(p.done)
}

// kill ends the process group: SIGTERM, then SIGKILL after KillGrace (on
// Windows, which has no SIGTERM for a process tree, terminate kills the
// whole unit at once).
func (p *process) kill(why Ending) {
	p.mu.Lock()
	if p.ending != "" {
		p.mu.Unlock()
		return
	}
	p.ending, p.killed = why, true
	p.mu.Unlock()
	p.terminate()
	go func() {
		select {
		case <-p.done:
		case <-time.After(KillGrace):
			p.unit.Kill()
		}
	}()
	if why == ProcessLimit {
		// A fork bomb gets no grace.
		p.unit.Kill()
	}
}

// Stop kills the execution: SIGTERM to its process group, then, when the
// leader exits or after KillGrace, SIGKILL to every process of its unit (a
// stop_job or a shutdown). On Windows the unit is killed at once.
func (p *process) Stop() { p.kill(Stopped) }

func (p *process) finish(err error) {
	r := Result{Duration: time.Since(p.started), Stdout: p.stdout.Snapshot(), Stderr: p.stderr.Snapshot(), ExitCode: -1, Sandbox: p.conf.Mode()}
	p.mu.Lock()
	r.KilledGroup = p.killed
	ending := p.ending
	p.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal().String()
		} else {
			r.ExitCode = ee.ExitCode()
		}
	case errors.Is(err, exec.ErrWaitDelay):
		r.ExitCode = p.cmd.ProcessState.ExitCode()
	}
	switch {
	case ending != "":
		r.Ending = ending
	case r.Signal != "":
		r.Ending = Signaled
	default:
		r.Ending = Exited
	}
	p.result = r
}

// Done is closed when the execution has finished.
func (p *process) Done() <-chan struct{} { return p.done }

// Wait blocks until the execution finishes or ctx ends (which does not stop
// the process: use Stop).
func (p *process) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.done:
		return p.result, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Snapshot returns the output so far of a running or finished execution.
func (p *process) Snapshot() (stdout, stderr Output) { return p.stdout.Snapshot(), p.stderr.Snapshot() }

// Sandbox is the sandbox mode in force for the execution.
func (p *process) Sandbox() Mode { return p.conf.Mode() }

// PID is the process id of the group leader.
func (p *process) PID() int { return p.pgid }

// Identity identifies the execution's processes (see Identity).
func (p *process) Identity() Identity { return p.unit.Identity() }

// Run starts an execution and waits for it.
func Run(ctx context.Context, h Host, s Spec) (Result, error) {
	p, err := h.Start(ctx, s)
	if err != nil {
		return Result{}, err
	}
	return p.Wait(context.WithoutCancel(ctx))
}
