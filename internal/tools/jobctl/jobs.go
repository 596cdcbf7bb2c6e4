// Package jobctl registers the background job tools: run_job (a shell
// command started as a background job at once), observe_jobs (1-8 jobs,
// one bounded wait, new output by cursor), list_jobs, stop_job and
// read_job_tail.
//
// Only the authority group that started a job, in the job's project, may
// see or stop it. The ledger receives facts only (job id, state, exit
// code), never command text or output.
package jobctl

import (
	"context"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
)

// DefaultJobTimeoutSeconds is run_job's timeout when a call sets none.
const DefaultJobTimeoutSeconds = 3600

// Tools holds the job manager. Observing a job records nothing beyond the
// call's facts: a terminal validation job became evidence through the
// manager's OnFinished hook (internal/app).
type Tools struct {
	Jobs *jobs.Manager
	// Runners serves each call's project: a job's process starts there,
	// and its sandbox policy decides the mode run_job reports (nil: the
	// manager's host, and no mode reported).
	Runners workspace.Runners
}

// Register adds the job tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[RunInput, RunOutput]{
		Runners:     true,
		Name:        "run_job",
		Description: "Start sh or bash command text as a background job and return its job_id at once; follow it with observe_jobs.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true},
		Handler:     t.runJob,
	})
	kernel.Register(reg, kernel.Spec[ObserveInput, ObserveOutput]{
		Runners: true,
		Name:    "observe_jobs",
		Description: "Observe 1-8 jobs: state, exit code and output since your cursors (pass back next_cursor). " +
			"wait_seconds waits once until wake_on or every job is terminal.",
		Category: "exec", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session:     kernel.SessionOptional,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.observe,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Runners:     true,
		Name:        "list_jobs",
		Description: "List your background jobs in the project, newest first.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session:     kernel.SessionOptional,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
	kernel.Register(reg, kernel.Spec[StopInput, StopOutput]{
		Runners:     true,
		Name:        "stop_job",
		Description: "Stop a job (SIGTERM to its process group, then SIGKILL); a finished job is left as it is.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeJobRun},
		Mutates: true, Session: kernel.SessionOptional,
		Annotations: kernel.Annotations{Destructive: true, Idempotent: true},
		Handler:     t.stop,
	})
	kernel.Register(reg, kernel.Spec[TailInput, TailOutput]{
		Runners:     true,
		Name:        "read_job_tail",
		Description: "Read a job's stdout or stderr: the last max_bytes, or from a byte cursor on.",
		Category:    "exec", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session:     kernel.SessionOptional,
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.tail,
	})
}

// View is a job as tools report it.
type View struct {
	JobID            string           `json:"job_id"`
	State            jobs.State       `json:"state"`
	Reason           string           `json:"reason,omitempty"`
	ExitCode         *int             `json:"exit_code,omitempty"`
	Signal           string           `json:"signal,omitempty"`
	Ending           runner.Ending    `json:"ending,omitempty"`
	Tool             string           `json:"tool"`
	Program          string           `json:"program"`
	Purpose          string           `json:"purpose,omitempty"`
	Cwd              string           `json:"cwd"`
	SessionID        string           `json:"session_id,omitempty"`
	Background       bool             `json:"background"`
	Expectation      jobs.Expectation `json:"expectation"`
	ExpectationMatch *bool            `json:"expectation_matched,omitempty"`
	CreatedAt        time.Time        `json:"created_at"`
	StartedAt        time.Time        `json:"started_at,omitzero"`
	FinishedAt       time.Time        `json:"finished_at,omitzero"`
	StdoutBytes      int64            `json:"stdout_bytes"`
	StderrBytes      int64            `json:"stderr_bytes"`
	DroppedBytes     int64            `json:"dropped_bytes,omitempty"`
	// Runner is the client id of the runner whose process ran the job
	// (empty for this server's own).
	Runner string `json:"runner,omitempty"`
}

func view(j jobs.Job) View {
	return View{
		JobID: j.ID, State: j.State, Reason: j.Reason, ExitCode: j.ExitCode, Signal: j.Signal, Ending: j.Ending,
		Tool: j.Tool, Program: j.Program, Purpose: j.Purpose, Cwd: j.Cwd, SessionID: j.SessionID,
		Background: j.Background, Expectation: j.Expectation, ExpectationMatch: j.Matched,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		StdoutBytes: j.StdoutBytes, StderrBytes: j.StderrBytes, DroppedBytes: j.StdoutDropped + j.StderrDropped,
		Runner: j.Runner,
	}
}

func (t *Tools) manager() (*jobs.Manager, error) {
	if t.Jobs == nil {
		return nil, failure.New(failure.Unavailable, "background jobs are not available on this server")
	}
	return t.Jobs, nil
}

func access(inv *kernel.Invocation) jobs.Access {
	return jobs.Access{Project: inv.Project.ID, Fingerprint: inv.Principal.AuthorityFingerprint()}
}

// RunInput is the input of run_job.
type RunInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Command           string              `json:"command" jsonschema:"shell text, at most 16000 bytes"`
	Shell             workflow.Shell      `json:"shell,omitempty" jsonschema:"sh or bash; default the session's default_shell, else sh"`
	Cwd               string              `json:"cwd,omitempty" jsonschema:"default: the session's default_cwd, else the root"`
	Env               map[string]string   `json:"env,omitempty"`
	Stdin             string              `json:"stdin,omitempty"`
	TimeoutSeconds    *int                `json:"timeout_seconds,omitempty" jsonschema:"1-86400, default 3600"`
	ResultExpectation command.Expectation `json:"result_expectation,omitempty" jsonschema:"success (default), failure or observe"`
	Purpose           string              `json:"purpose,omitempty"`
}

// RunOutput is the result of run_job.
type RunOutput struct {
	Job  View   `json:"job"`
	Hint string `json:"hint"`
	// Sandbox is the sandbox mode the job's process runs under.
	Sandbox runner.Mode `json:"sandbox,omitempty"`
}

// RunHint tells the caller how to follow a job.
const RunHint = "Call observe_jobs with this job_id (wait_seconds up to 100) to follow it; read_job_tail reads any part of its output."

func (t *Tools) runJob(ctx context.Context, inv *kernel.Invocation, in RunInput) (RunOutput, error) {
	m, err := t.manager()
	if err != nil {
		return RunOutput{}, err
	}
	if err := command.ValidateCommand(in.Command); err != nil {
		return RunOutput{}, err
	}
	sh, err := command.SelectShell(inv, in.Shell)
	if err != nil {
		return RunOutput{}, err
	}
	exp, err := command.ValidateExpectation(in.ResultExpectation)
	if err != nil {
		return RunOutput{}, err
	}
	if err := command.ValidatePurpose(in.Purpose); err != nil {
		return RunOutput{}, err
	}
	timeout, err := command.TimeoutSeconds(in.TimeoutSeconds, DefaultJobTimeoutSeconds)
	if err != nil {
		return RunOutput{}, err
	}
	if err := runner.ValidateEnv(in.Env); err != nil {
		return RunOutput{}, failure.New(failure.InvalidArguments, "env: %v", err)
	}
	ssh := command.SSHTarget(inv, in.Cwd)
	cwd, rel := inv.Project.Root, ""
	if ssh != nil {
		// The command runs on the resource; the ssh client runs in the
		// project root on the runner.
		rel = ssh.Cwd
		inv.Fact("resource", ssh.Resource)
	} else {
		if cwd, err = command.ResolveCwd(inv, in.Cwd); err != nil {
			return RunOutput{}, err
		}
		rel, _ = inv.Project.Rel(cwd)
	}
	var host runner.Host // nil: the manager's own
	if t.Runners != nil {
		host = t.Runners.For(inv.Project)
	}
	spec := runner.Spec{Argv: []string{string(sh), "-c", in.Command}, Dir: cwd, Env: in.Env, Timeout: time.Duration(timeout) * time.Second,
		Sandbox: command.Sandbox(inv), SSH: ssh}
	sb := runner.InForce(host, spec.Sandbox)
	if sb != "" {
		inv.Fact("sandbox", string(sb))
	}
	if in.Stdin != "" {
		spec.Stdin = []byte(in.Stdin)
	}
	inv.Fact("program", string(sh))
	inv.Fact("expectation", string(exp))
	if in.Purpose != "" {
		inv.Fact("purpose", in.Purpose)
	}
	ss := command.StartSpec(inv, rel, in.Purpose, exp, nil, true, spec)
	ss.Host = host
	j, err := m.Start(ctx, ss)
	if j.ID != "" {
		inv.Fact("job_id", j.ID)
		inv.Fact("job_state", string(j.State))
	}
	if err != nil {
		return RunOutput{}, err
	}
	return RunOutput{Job: view(j), Hint: RunHint, Sandbox: sb}, nil
}

// ObserveInput is the input of observe_jobs.
type ObserveInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	JobIDs  []string                `json:"job_ids" jsonschema:"1-8 wc_job_ ids"`
	Cursors map[string]jobs.Cursors `json:"cursors,omitempty" jsonschema:"job_id -> {stdout, stderr}: next_cursor of the last observe; unset: the tail"`
	// WaitSeconds bounds the one wait.
	WaitSeconds int         `json:"wait_seconds,omitempty" jsonschema:"0-100, default 0 (no wait)"`
	WakeOn      jobs.WakeOn `json:"wake_on,omitempty" jsonschema:"change (default), terminal or all_terminal"`
	MaxBytes    int         `json:"max_bytes,omitempty" jsonschema:"per stream and job, default 4096, at most 65536"`
}

// Observed is one job in an observe_jobs result.
type Observed struct {
	Job    View       `json:"job"`
	Stdout jobs.Chunk `json:"stdout"`
	Stderr jobs.Chunk `json:"stderr"`
}

// ObserveOutput is the result of observe_jobs.
type ObserveOutput struct {
	Jobs []Observed `json:"jobs"`
	// Woke says why the wait ended: condition, timeout or shutdown.
	Woke string `json:"woke"`
}

func (t *Tools) observe(ctx context.Context, inv *kernel.Invocation, in ObserveInput) (ObserveOutput, error) {
	m, err := t.manager()
	if err != nil {
		return ObserveOutput{}, err
	}
	if in.WaitSeconds < 0 || time.Duration(in.WaitSeconds)*time.Second > jobs.MaxObserveWait {
		return ObserveOutput{}, failure.New(failure.InvalidArguments, "wait_seconds must be 0-%d", int(jobs.MaxObserveWait/time.Second))
	}
	obs, woke, err := m.Observe(ctx, access(inv), jobs.ObserveRequest{
		IDs: in.JobIDs, Cursors: in.Cursors, Wait: time.Duration(in.WaitSeconds) * time.Second,
		WakeOn: in.WakeOn, MaxBytes: in.MaxBytes,
		// The wait holds no request slot: it takes one of the caller's
		// bounded waiter slots instead, or is refused (too_many_requests).
		BeforeWait: func() error { return admission.BeginWait(ctx) },
	})
	if err != nil {
		return ObserveOutput{}, err
	}
	out := ObserveOutput{Jobs: make([]Observed, len(obs)), Woke: woke}
	terminal := 0
	for i, o := range obs {
		out.Jobs[i] = Observed{Job: view(o.Job), Stdout: o.Stdout, Stderr: o.Stderr}
		if o.Job.State.Terminal() {
			terminal++
		}
	}
	inv.Fact("jobs_observed", strconv.Itoa(len(obs)))
	inv.Fact("jobs_terminal", strconv.Itoa(terminal))
	if len(obs) == 1 {
		inv.Fact("job_id", obs[0].Job.ID)
		inv.Fact("job_state", string(obs[0].Job.State))
	}
	return out, nil
}

// ListInput is the input of list_jobs.
type ListInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	ActiveOnly bool `json:"active_only,omitempty" jsonschema:"only queued and running jobs"`
	// IncludeInline also lists runs that were answered inline.
	IncludeInline bool `json:"include_inline,omitempty" jsonschema:"also list runs answered inline (not background)"`
	Limit         int  `json:"limit,omitempty" jsonschema:"default 20, at most 100"`
}

// ListOutput is the result of list_jobs.
type ListOutput struct {
	Jobs      []View `json:"jobs"`
	Total     int    `json:"total"`
	Truncated bool   `json:"truncated"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	m, err := t.manager()
	if err != nil {
		return ListOutput{}, err
	}
	if in.Limit < 0 || in.Limit > jobs.MaxListLimit {
		return ListOutput{}, failure.New(failure.InvalidArguments, "limit must be 1-%d", jobs.MaxListLimit)
	}
	js, total, err := m.List(ctx, access(inv), jobs.ListFilter{BackgroundOnly: !in.IncludeInline, Active: in.ActiveOnly, Limit: in.Limit})
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Jobs: make([]View, len(js)), Total: total, Truncated: total > len(js)}
	for i, j := range js {
		out.Jobs[i] = view(j)
	}
	return out, nil
}

// StopInput is the input of stop_job.
type StopInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	JobID string `json:"job_id"`
}

// StopOutput is the result of stop_job.
type StopOutput struct {
	Job View `json:"job"`
	// AlreadyTerminal is true when the job had finished before: nothing
	// changed.
	AlreadyTerminal bool `json:"already_terminal"`
}

func (t *Tools) stop(ctx context.Context, inv *kernel.Invocation, in StopInput) (StopOutput, error) {
	m, err := t.manager()
	if err != nil {
		return StopOutput{}, err
	}
	j, was, err := m.Stop(ctx, access(inv), in.JobID)
	if err != nil {
		return StopOutput{}, err
	}
	inv.Fact("job_id", j.ID)
	inv.Fact("job_state", string(j.State))
	inv.Fact("already_terminal", strconv.FormatBool(was))
	if j.ExitCode != nil {
		inv.Fact("exit_code", strconv.Itoa(*j.ExitCode))
	}
	return StopOutput{Job: view(j), AlreadyTerminal: was}, nil
}

// TailInput is the input of read_job_tail.
type TailInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	JobID    string      `json:"job_id"`
	Stream   jobs.Stream `json:"stream,omitempty" jsonschema:"stdout (default) or stderr"`
	Cursor   *int64      `json:"cursor,omitempty" jsonschema:"byte offset to read from; omitted: the last max_bytes"`
	MaxBytes int         `json:"max_bytes,omitempty" jsonschema:"default 4096, at most 65536"`
}

// TailOutput is the result of read_job_tail.
type TailOutput struct {
	JobID  string      `json:"job_id"`
	State  jobs.State  `json:"state"`
	Stream jobs.Stream `json:"stream"`
	jobs.Chunk
}

func (t *Tools) tail(ctx context.Context, inv *kernel.Invocation, in TailInput) (TailOutput, error) {
	m, err := t.manager()
	if err != nil {
		return TailOutput{}, err
	}
	if in.Stream == "" {
		in.Stream = jobs.Stdout
	}
	j, c, err := m.Read(ctx, access(inv), in.JobID, in.Stream, in.Cursor, in.MaxBytes)
	if err != nil {
		return TailOutput{}, err
	}
	inv.Fact("job_id", j.ID)
	return TailOutput{JobID: j.ID, State: j.State, Stream: in.Stream, Chunk: c}, nil
}
