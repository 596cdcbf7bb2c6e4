package runnerwire

import (
	"time"

	"github.com/webcodex/webcodex/internal/ident"
	"github.com/webcodex/webcodex/internal/runner"
)

// OpProcStart starts a process on the runner. Its response carries a
// ProcStarted once the process runs (or an error: nothing ran). The
// process is named by its run id from then on: its Output, Skip and Exit
// frames carry the run id, and a Cancel with the run id stops it.
//
// The runner holds the process, not the connection: when the connection
// ends the process runs on, its output spooled on the runner (the latest
// SpoolBytes of each stream), and a later connection continues it with
// OpProcAttach. The runner holds a finished process until OpProcRelease,
// so that its exit is never lost with a connection.
const OpProcStart = "proc.start"

// OpProcAttach continues a process on this connection (its argument is a
// ProcAttach, its response a ProcAttached): its output from the given
// offsets, then its Exit. A runner that does not hold the run id answers
// not_found.
const OpProcAttach = "proc.attach"

// OpProcRelease lets the runner forget a process (a ProcRelease), stopping
// it if it still runs: the server recorded its outcome, or has no record
// that could take it.
const OpProcRelease = "proc.release"

// Process states in an Inventory and a ProcAttached.
const (
	ProcRunning = "running"
	ProcExited  = "exited"
)

// ProcAttach is the argument of OpProcAttach.
type ProcAttach struct {
	RunID        string `json:"run_id"`
	StdoutOffset int64  `json:"stdout_offset"`
	StderrOffset int64  `json:"stderr_offset"`
	// ReportOffset is where the collected report continues (a start that
	// collects one).
	ReportOffset int64 `json:"report_offset,omitempty"`
}

// Validate implements the body contract.
func (p *ProcAttach) Validate() error {
	if p.RunID == "" || len(p.RunID) > MaxBinaryIDBytes || p.StdoutOffset < 0 || p.StderrOffset < 0 || p.ReportOffset < 0 {
		return bad("proc.attach needs a run id of 1-%d bytes and offsets of 0 or more", MaxBinaryIDBytes)
	}
	return nil
}

// ProcAttached answers OpProcAttach.
type ProcAttached struct {
	State   string `json:"state"`
	PID     int    `json:"pid"`
	Sandbox string `json:"sandbox"`
}

// Validate implements the body contract.
func (p *ProcAttached) Validate() error {
	if p.State != ProcRunning && p.State != ProcExited {
		return bad("state %q is neither running nor exited", p.State)
	}
	return nil
}

// ProcRelease is the argument of OpProcRelease.
type ProcRelease struct {
	RunID string `json:"run_id"`
}

// Validate implements the body contract.
func (p *ProcRelease) Validate() error {
	if p.RunID == "" || len(p.RunID) > MaxBinaryIDBytes {
		return bad("proc.release needs a run id of 1-%d bytes", MaxBinaryIDBytes)
	}
	return nil
}

// OpSSHClose closes the SSH masters a runner holds for a Workflow Session
// (its argument is an SSHClose); the server sends it when the session
// closes.
const OpSSHClose = "ssh.close"

// SSHClose is the argument of OpSSHClose.
type SSHClose struct {
	Session string `json:"session"`
}

// ProcStart is the argument of OpProcStart: a runner.Spec without its
// writers. The runner validates it again against its own policy: the
// working directory and the sandbox's paths must lie in the request's
// project.
type ProcStart struct {
	Argv      []string          `json:"argv"`
	Dir       string            `json:"dir"`
	Env       map[string]string `json:"env,omitempty"`
	Stdin     []byte            `json:"stdin,omitempty"`
	TimeoutMS int64             `json:"timeout_ms"`
	TailBytes int               `json:"tail_bytes"`
	RunID     string            `json:"run_id,omitempty"`
	Sandbox   ProcSandbox       `json:"sandbox"`
	// SSH runs the command on one of the runner's SSH resources.
	SSH *ProcSSH `json:"ssh,omitempty"`
	// Script is runner.Spec.Script: the runner writes it to a private
	// file on its own machine and removes it when the process ends.
	Script []byte `json:"script,omitempty"`
	// Private and Collect are runner.Spec's: the runner makes the private
	// directory on its machine and sends the collected file back as the
	// Report stream's output, before the Exit.
	Private bool   `json:"private,omitempty"`
	Collect string `json:"collect,omitempty"`
}

// ProcSSH is runner.SSH on the wire.
type ProcSSH struct {
	Resource string `json:"resource"`
	Session  string `json:"session"`
	Cwd      string `json:"cwd,omitempty"`
}

// ProcSandbox is runner.Sandbox on the wire.
type ProcSandbox struct {
	Mode         string   `json:"mode,omitempty"`
	Write        []string `json:"write,omitempty"`
	ProjectWrite []string `json:"project_write,omitempty"`
	Exact        bool     `json:"exact,omitempty"`
}

// FromSpec is the wire form of s, its writers aside: the whole output always
// comes back as Output frames, and the server keeps the tails and feeds the
// writers from them as the local runner does.
func FromSpec(s runner.Spec) ProcStart {
	p := ProcStart{
		Argv: s.Argv, Dir: s.Dir, Env: s.Env, Stdin: s.Stdin, Script: s.Script, Private: s.Private, Collect: s.Collect,
		TimeoutMS: s.Timeout.Milliseconds(), TailBytes: s.TailBytes, RunID: s.RunID,
		Sandbox: ProcSandbox{Mode: string(s.Sandbox.Mode), Write: s.Sandbox.Write,
			ProjectWrite: s.Sandbox.ProjectWrite, Exact: s.Sandbox.Exact},
	}
	if s.SSH != nil {
		p.SSH = &ProcSSH{Resource: s.SSH.Resource, Session: s.SSH.Session, Cwd: s.SSH.Cwd}
	}
	return p
}

// Spec is p as a runner.Spec for a project rooted at root (writers unset).
func (p ProcStart) Spec(root string) runner.Spec {
	return runner.Spec{
		Argv: p.Argv, Dir: p.Dir, Env: p.Env, Stdin: p.Stdin, Script: p.Script, Private: p.Private, Collect: p.Collect,
		Timeout: time.Duration(p.TimeoutMS) * time.Millisecond, TailBytes: p.TailBytes, RunID: p.RunID,
		Sandbox: runner.Sandbox{Mode: runner.Mode(p.Sandbox.Mode), Project: root, Write: p.Sandbox.Write,
			ProjectWrite: p.Sandbox.ProjectWrite, Exact: p.Sandbox.Exact},
	}
}

// Validate implements the body contract (runner.Spec.Validate checks the
// rest on the runner).
func (p *ProcStart) Validate() error {
	switch {
	case len(p.Argv) == 0:
		return bad("argv is empty")
	case len(p.Stdin) > MaxStdinBytes:
		return bad("stdin of %d bytes is over the %d bytes a runner request carries", len(p.Stdin), MaxStdinBytes)
	case len(p.Script) > MaxScriptBytes:
		return bad("a script of %d bytes is over the %d bytes a runner request carries", len(p.Script), MaxScriptBytes)
	case (p.Script != nil || p.Private) && p.SSH != nil:
		return bad("a script or a private directory never goes to an SSH resource")
	case p.Collect != "" && (!p.Private || !runner.ValidCollect(p.Collect)):
		return bad("collect names a plain file of the private directory")
	case p.TimeoutMS < 0 || p.TailBytes < 0:
		return bad("negative timeout or tail")
	case p.RunID == "" || len(p.RunID) > MaxBinaryIDBytes:
		return bad("run_id must be 1-%d bytes: it names the process from its start on", MaxBinaryIDBytes)
	case p.SSH != nil && (!ident.Valid(p.SSH.Resource) || p.SSH.Session == "" || len(p.SSH.Session) > MaxNameBytes || len(p.SSH.Cwd) > 4096):
		return bad("ssh needs a resource name, a session id and a bounded cwd")
	}
	return nil
}

// ProcStarted is the response to OpProcStart: the process runs.
type ProcStarted struct {
	PID     int    `json:"pid"`
	Sandbox string `json:"sandbox"`
}

// Validate implements the body contract.
func (p *ProcStarted) Validate() error { return nil }

// Exit ends a started process: its runner.Result without the tails (the
// server built those from the Output frames, every one of which the runner
// sent before the Exit). Its stream totals count every byte the process
// wrote, sent or skipped.
type Exit struct {
	Result runner.Result `json:"result"`
	// DurationMS is the execution's duration.
	DurationMS int64 `json:"duration_ms"`
}

// Validate implements the body contract.
func (e *Exit) Validate() error {
	if e.Result.Stdout.Text != "" || e.Result.Stderr.Text != "" {
		return bad("an exit carries no output: it came as output frames")
	}
	return nil
}
