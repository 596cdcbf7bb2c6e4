// Package jobs supervises executions that outlive their call: background
// Jobs.
//
// Every execution the run tools start goes through a [Manager]. The record
// of a background or queued job is committed to the [Store] before the
// process starts. A synchronous run (RunSync) that starts at once has no
// record while it runs: one that finishes within the synchronous grace
// period is answered inline and never touches the store (the caller's
// workflow ledger already holds a durable tool_call_started, so a crash in
// the grace window stays visible as an unknown outcome); one that does not
// is recorded at the handoff and continues as a background Job with the
// same process — it is never started twice. run_job starts a Job in the
// background at once.
//
// # State machine
//
//	queued ──► running ──► succeeded | failed | timed_out | cancelled | stopped | lost
//	   └─────────────────► stopped | cancelled | lost
//	   (start failure: queued/running ──► failed, reason not_started)
//
// A terminal state is final: the first terminal write wins and later ones
// (a second stop, a supervisor finishing after recovery marked the record
// lost) change nothing. lost means no supervisor can report the outcome:
// the server shut down while the job ran (reason server_shutdown; every
// process of the job was killed, never orphaned) or the server died and a
// later start found the record unfinished (reason server_restart; the
// processes that survived the crash are killed then, found by the identity
// the record holds, and killed_group says whether any was). A lost job
// keeps its last known output.
//
// # Jobs on remote runners
//
// A job whose host is a [runner.Reattacher] (a remote runner) runs in a
// process that belongs to that runner, not to this server: it runs on
// across a lost connection and across a restart of this server. Its record
// names the runner (Job.Runner). Shutdown leaves it running (unfinished);
// Recover leaves it for [Manager.Reconcile], which adopts it when its
// runner connects holding it — the output continues from the bytes the
// files already hold and the terminal state is recorded as for any job —
// and marks it lost (runner_lost) when the runner no longer holds it or
// does not connect within Options.RunnerGrace. A runner that restarted
// loses its processes: runner_restart. Once the outcome is recorded the
// runner is told to release the process.
//
// # Output
//
// A job's stdout and stderr go to files under <dir>/<job_id>/ (mode 0600
// in a 0700 directory), each capped at [MaxOutputFileBytes]; bytes beyond
// the cap are counted, not stored. Tails are read from the files by byte
// cursor, so memory does not grow with the output. A synchronous run holds
// up to [DefaultMemOutputBytes] per stream in memory and creates its files
// only when it is handed off or produces more; a run answered inline (not
// a background job) has any files removed when it finishes: its output was
// returned in the call's result.
//
// # Durability and notification
//
// Every state change is committed before it is reported. Waits (the sync
// grace, observe) wake on a process-local signal, but the store stays the
// truth: what a caller receives is read back from it.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds and defaults.
const (
	// IDPrefix prefixes every job id; 32 lowercase hex digits follow.
	IDPrefix = "wc_job_"
	// MaxOutputFileBytes caps each output file of a job; further bytes
	// are counted as dropped.
	MaxOutputFileBytes = 64 << 20
	// DefaultConcurrency is the number of executions a Manager runs at
	// once; further ones queue.
	DefaultConcurrency = 4
	// MaxConcurrency bounds Options.Concurrency.
	MaxConcurrency = 64
	// ReservedSlots is how many of a Manager's slots one owner can never
	// hold by default: the default Options.RunningPerOwner is Concurrency
	// minus ReservedSlots (at least 1), so that however many long jobs one
	// owner starts, another owner's run finds a slot no job of theirs can
	// take (decision 0048).
	ReservedSlots = 1
	// DefaultQueuedPerOwner is how many queued (not yet started) jobs one
	// owner (authority group) may have; a further one that would queue
	// fails with queue_full and is neither started nor recorded.
	DefaultQueuedPerOwner = 64
	// MaxQueuedPerOwner bounds Options.QueuedPerOwner.
	MaxQueuedPerOwner = 1000
	// DefaultSyncGrace is how long a synchronous run is waited for before
	// it continues as a background job.
	DefaultSyncGrace = 8 * time.Second
	// MaxObserveJobs bounds the jobs one observe names.
	MaxObserveJobs = 8
	// MaxObserveWait bounds one observe wait.
	MaxObserveWait = 100 * time.Second
	// DefaultReadBytes and MaxReadBytes bound one output read per stream.
	DefaultReadBytes = 4 << 10
	MaxReadBytes     = 64 << 10
	// DefaultListLimit and MaxListLimit bound list_jobs.
	DefaultListLimit = 20
	MaxListLimit     = 100
	// RetainJobs is how many terminal job records (with their output
	// files) are kept of each kind, background and inline; older ones are
	// pruned.
	RetainJobs = 200
	// pruneEvery is how many finished jobs trigger a prune.
	pruneEvery = 32
	// pollInterval is how often an observe re-reads the store for jobs no
	// supervisor in this process signals (a record another process owns).
	pollInterval = time.Second
	// DefaultRunnerGrace is Options.RunnerGrace's default: the runner
	// protocol's heartbeat-loss window (3 intervals of 15 s).
	DefaultRunnerGrace = 45 * time.Second
)

// Reasons recorded with a terminal state.
const (
	ReasonServerShutdown = "server_shutdown"
	ReasonServerRestart  = "server_restart"
	ReasonNotStarted     = "not_started"
	ReasonStopJob        = "stop_job"
	// ReasonRunnerLost: the runner running the job did not report its
	// exit: its connection ended and it did not come back within the
	// reattach window, or it came back no longer holding the process, or
	// the start's answer was lost. The job's outcome is unknown.
	ReasonRunnerLost = "runner_lost"
	// ReasonRunnerRestart: the runner running the job restarted (a new
	// runner process connected): the process and its outcome are gone.
	ReasonRunnerRestart = "runner_restart"
)

// State is a job's lifecycle state.
type State string

// Job states.
const (
	Queued    State = "queued"
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	TimedOut  State = "timed_out"
	Cancelled State = "cancelled"
	Stopped   State = "stopped"
	Lost      State = "lost"
)

// States lists every state.
var States = []State{Queued, Running, Succeeded, Failed, TimedOut, Cancelled, Stopped, Lost}

// Terminal reports whether s is final.
func (s State) Terminal() bool { return s != Queued && s != Running && s != "" }

// Valid reports whether s is a known state.
func (s State) Valid() bool { return slices.Contains(States, s) }

// Expectation is a pre-declared result expectation.
type Expectation string

// Expectations: success (default) requires an accepted exit code; failure
// expects a completed run with another exit code; observe accepts any
// completed run. A timeout, cancellation, stop, kill or loss never matches.
// An expectation never changes a run's state, exit code or error: it only
// says whether the result was the one declared beforehand (Met).
const (
	ExpectSuccess Expectation = "success"
	ExpectFailure Expectation = "failure"
	ExpectObserve Expectation = "observe"
)

// Valid reports whether e is a known expectation.
func (e Expectation) Valid() bool {
	return e == ExpectSuccess || e == ExpectFailure || e == ExpectObserve
}

// Met reports whether a result meets e: completed says the run reached a
// known business result (it exited, or a validation proved its verdict),
// accepted that the result is the accepted one (an accepted exit code, a
// validation that did not fail). It is the one expectation check of every
// execution and validation tool.
func (e Expectation) Met(completed, accepted bool) bool {
	switch e {
	case ExpectFailure:
		return completed && !accepted
	case ExpectObserve:
		return completed
	default:
		return completed && accepted
	}
}

// Stream names an output stream.
type Stream string

// Streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// A Job is the durable record of one supervised execution. It holds no
// command text, arguments, environment or output: only the program's base
// name and facts about the run.
type Job struct {
	ID      string `json:"job_id"`
	Project string `json:"project"`
	// SessionID is the business session the run was made in, if any.
	SessionID string `json:"session_id,omitempty"`
	// Principal is the authority fingerprint of the creator; only that
	// authority group may see or stop the job.
	Principal string `json:"principal"`
	Tool      string `json:"tool"`
	// Program is the base name of argv[0]. Program, Purpose and Cwd are
	// redacted (package redact) before the record is stored.
	Program string `json:"program"`
	Purpose string `json:"purpose,omitempty"`
	// Cwd is the project-relative working directory.
	Cwd string `json:"cwd"`
	// Background is true for run_job and for runs handed off after the
	// sync grace; a run answered inline is not a background job.
	Background     bool  `json:"background"`
	TimeoutSeconds int64 `json:"timeout_seconds"`

	State State `json:"state"`
	// Reason qualifies a terminal state (server_shutdown, server_restart,
	// not_started, stop_job).
	Reason      string        `json:"reason,omitempty"`
	ExitCode    *int          `json:"exit_code,omitempty"`
	Signal      string        `json:"signal,omitempty"`
	Ending      runner.Ending `json:"ending,omitempty"`
	KilledGroup bool          `json:"killed_group,omitempty"`

	Expectation       Expectation `json:"expectation"`
	AcceptedExitCodes []int       `json:"accepted_exit_codes,omitempty"`
	// Matched is set when the job is terminal: whether the expectation
	// was met.
	Matched *bool `json:"expectation_matched,omitempty"`

	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`

	// StdoutBytes and StderrBytes count bytes stored in the output files;
	// the Dropped counts are bytes produced beyond MaxOutputFileBytes.
	StdoutBytes   int64 `json:"stdout_bytes"`
	StderrBytes   int64 `json:"stderr_bytes"`
	StdoutDropped int64 `json:"stdout_dropped_bytes,omitempty"`
	StderrDropped int64 `json:"stderr_dropped_bytes,omitempty"`

	// Validation is set on a structured validation run: what is needed to
	// turn its terminal record into evidence later, without re-running it.
	Validation *ValidationMeta `json:"validation,omitempty"`

	// Process identifies the job's processes (marker, leader pid and start
	// time, cgroup) once it started, so that a start after a crash can
	// kill what survived (Manager.Recover).
	Process *runner.Identity `json:"process,omitempty"`
	// Runner is the client id of the remote runner running the job (its
	// process outlives this server: see Manager.Reconcile); empty for a
	// job of this machine.
	Runner string `json:"runner,omitempty"`
	// Replica is the id of the server replica supervising the job when
	// several serve one database (Options.Replica); empty otherwise.
	// Another replica's Recover leaves the job alone while that replica
	// is alive.
	Replica string `json:"replica,omitempty"`
	// OutputPurged is true once the retention policy removed the job's
	// output files (job_output_days, decision 0087): its byte counts
	// still say what it wrote.
	OutputPurged bool `json:"output_purged,omitempty"`
}

// MaxValidationSessions bounds ValidationMeta.Sessions.
const MaxValidationSessions = 4

// ValidationMeta describes a structured validation run (go_test,
// cargo_test, cargo_check, run_tests) carried by its job record, so that a
// run handed off to the background can become validation evidence once it
// is terminal. It holds the structured scope and the parser to use, never
// command text or output.
type ValidationMeta struct {
	Tool     string   `json:"tool"`
	ScopeID  string   `json:"scope_id"`
	Packages []string `json:"packages,omitempty"`
	Filter   string   `json:"filter,omitempty"`
	// Parser names how the output is parsed (see internal/tools/validate).
	Parser string `json:"parser"`
	// HumanStream is the stream holding the human-readable output.
	HumanStream Stream `json:"human_stream,omitempty"`
	Expectation string `json:"expectation"`
	MinTests    int    `json:"min_tests,omitempty"`
	// Sessions are the Workflow Sessions the call was recorded in.
	Sessions []string `json:"sessions,omitempty"`
	// ReportFile, when set, is the base name of a report file inside the
	// job's own output directory (pytest's JUnit XML).
	ReportFile string `json:"report_file,omitempty"`
}

func (v *ValidationMeta) validate() error {
	if v == nil {
		return nil
	}
	if v.Tool == "" || v.ScopeID == "" || len(v.Sessions) > MaxValidationSessions {
		return failure.New(failure.InvalidArguments, "validation metadata lacks tool or scope, or names too many sessions")
	}
	if v.ReportFile != "" && (v.ReportFile != filepath.Base(v.ReportFile) || v.ReportFile == "." || v.ReportFile == ".." ||
		v.ReportFile == string(Stdout) || v.ReportFile == string(Stderr)) {
		return failure.New(failure.InvalidArguments, "validation report file must be a plain name")
	}
	return nil
}

var idRE = regexp.MustCompile(`^wc_job_[0-9a-f]{32}$`)

// NewID returns a fresh job id.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return IDPrefix + hex.EncodeToString(b[:])
}

// ParseID checks the form of a job id (failure.InvalidArguments).
func ParseID(id string) (string, error) {
	if !idRE.MatchString(id) {
		if len(id) > 64 {
			id = id[:64] + "..."
		}
		return "", failure.New(failure.InvalidArguments, "job id %q is not of the form wc_job_<32 lowercase hex>", id)
	}
	return id, nil
}

// Record is j's stored form, the same on every backend: its JSON
// document, once Validate accepts it.
func (j Job) Record() (string, error) {
	if err := j.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(j)
	return string(b), err
}

// ParseRecord reads a stored record; one that is not a valid Job's JSON is
// an error (a store never serves it).
func ParseRecord(doc string) (Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(doc), &j); err != nil {
		return Job{}, fmt.Errorf("job record: %v", err)
	}
	if err := j.Validate(); err != nil {
		return Job{}, fmt.Errorf("job record: %v", err)
	}
	return j, nil
}

// Validate checks a record read from a store.
func (j Job) Validate() error {
	if _, err := ParseID(j.ID); err != nil {
		return err
	}
	if !j.State.Valid() {
		return failure.New(failure.InvalidArguments, "job %s has unknown state %q", j.ID, j.State)
	}
	if j.Project == "" || j.Principal == "" || j.CreatedAt.IsZero() {
		return failure.New(failure.InvalidArguments, "job %s lacks project, principal or created_at", j.ID)
	}
	return j.Validation.validate()
}

// Access is who asks about a job: only the creating authority group, in
// the job's project, may see or stop it.
type Access struct {
	Project     string
	Fingerprint string
}

// Check returns the error for a job access is not allowed to see.
func (a Access) Check(j Job) error {
	if j.Principal != a.Fingerprint {
		return failure.New(failure.JobAuthorityDenied, "job %s belongs to another authority group", j.ID)
	}
	if j.Project != a.Project {
		return failure.New(failure.JobProjectMismatch, "job %s belongs to project %s, not %s", j.ID, j.Project, a.Project)
	}
	return nil
}

// Classify maps a finished execution to its terminal state and whether
// the expectation was met. The state is the run's real outcome (succeeded
// only for exit code 0); accepted (default [0]) and exp decide only the
// match.
func Classify(res runner.Result, accepted []int, exp Expectation) (State, bool) {
	if len(accepted) == 0 {
		accepted = []int{0}
	}
	completed := res.Ending == runner.Exited
	var st State
	switch res.Ending {
	case runner.Exited:
		st = Failed
		if res.ExitCode == 0 {
			st = Succeeded
		}
	case runner.TimedOut:
		st = TimedOut
	case runner.Cancelled:
		st = Cancelled
	case runner.Stopped:
		st = Stopped
	default: // signaled, process limit
		st = Failed
	}
	return st, exp.Met(completed, completed && slices.Contains(accepted, res.ExitCode))
}

// ListFilter selects jobs for Store.List.
type ListFilter struct {
	Project     string
	Fingerprint string
	// BackgroundOnly leaves out runs answered inline.
	BackgroundOnly bool
	// Active keeps only queued and running jobs.
	Active bool
	// AllOwners ignores Project and Fingerprint (internal reconciliation
	// only; never for a caller's listing).
	AllOwners bool
	Limit     int
}

// ErrUnchanged is returned by an UpdateFunc to leave a record as it is;
// Store.Update then returns the current record with this error.
var ErrUnchanged = failure.New(failure.Conflict, "job record unchanged")

// UpdateFunc changes a job record in place; an error leaves it unchanged.
type UpdateFunc func(j *Job) error

// Store persists job records. Every mutating method returns after its
// change is durably committed; an error means nothing changed.
type Store interface {
	// Create inserts a new record (failure.Conflict when the id exists).
	Create(ctx context.Context, j Job) error
	// Get returns a record (failure.JobNotFound when absent).
	Get(ctx context.Context, id string) (Job, error)
	// Update atomically loads a record, applies fn and stores it. When fn
	// fails, the current record is returned with fn's error.
	Update(ctx context.Context, id string, fn UpdateFunc) (Job, error)
	// List returns matching records, newest first, and how many match.
	List(ctx context.Context, f ListFilter) ([]Job, int, error)
	// Unfinished returns every queued or running record.
	Unfinished(ctx context.Context) ([]Job, error)
	// Prune deletes the oldest terminal records beyond the newest keep
	// background ones and the newest keep inline ones, and returns their
	// ids.
	Prune(ctx context.Context, keep int) ([]string, error)
	// OutputExpired returns at most limit terminal records, of any
	// replica, that were created before cutoff and whose output is not
	// purged (OutputPurged false), in (CreatedAt, ID) order after the
	// cursor after.
	OutputExpired(ctx context.Context, cutoff time.Time, after OutputCursor, limit int) ([]Job, error)
}
