// The Manager: its options, its state and the entry that supervises one
// job of this process (its output files, waiters and last committed record).

package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/runner"
)

// Options configure a Manager.
type Options struct {
	Store Store
	Host  runner.Host
	// Dir holds the output directories of jobs (<data>/jobs); it is
	// created 0700.
	Dir string
	// Concurrency is how many executions run at once (0 =
	// DefaultConcurrency); further ones queue. A freed slot goes to the
	// owner with the fewest running jobs among those with queued jobs
	// and fewer than RunningPerOwner running (among equals, the one
	// served least recently; its oldest queued job first), so that one
	// owner's queue delays another owner's run by at most one slot's turn.
	Concurrency int
	// RunningPerOwner bounds the slots one owner (authority group) holds
	// at once, 1 to Concurrency (0 = Concurrency - ReservedSlots, at
	// least 1); the owner's further runs queue even while slots are free.
	// Below Concurrency, one owner's long jobs cannot hold every slot: an
	// owner with nothing running starts at once whenever fewer other
	// owners than the reserved slots also hold all they may.
	RunningPerOwner int
	// QueuedPerOwner bounds one owner's queued jobs (0 =
	// DefaultQueuedPerOwner, at most MaxQueuedPerOwner).
	QueuedPerOwner int
	// SyncGrace is how long RunSync waits before a run continues as a
	// background job (0 = DefaultSyncGrace).
	SyncGrace time.Duration
	// OutputCap caps each output file (0 = MaxOutputFileBytes).
	OutputCap int64
	// Retain is how many terminal records are kept (0 = RetainJobs).
	Retain int
	Now    func() time.Time
	Logger *slog.Logger
	// OnFinished, when set, is called exactly once for each terminal state
	// this Manager commits to the Store: a supervised job's end
	// (succeeded, failed, timed_out, cancelled, stopped), a queued job
	// stopped or cancelled, a start failure (failed, not_started), a job
	// lost at shutdown, and each record Recover marks lost. It receives
	// the committed record and runs in the goroutine that committed it
	// (the job's supervisor, Stop, Close or Recover), after the commit and
	// before the job's waiters are woken: every read that reports the job
	// terminal (Get, List, Wait, Observe, Stop, RunSync) returns after it.
	// It is not called for a run answered inline (it has no record) nor
	// when the terminal write fails (the record stays unfinished and
	// Recover marks it lost at the next start, calling it then).
	//
	// A crash between the commit and the hook's return loses the call; the
	// Manager does not replay it. A hook whose effect must survive that
	// makes it idempotent and catches up at start over FinishedValidations
	// (or Store.List). The hook must be bounded and must not read its own
	// job through the Manager's reporting reads (they wait for it).
	OnFinished func(ctx context.Context, j Job)
	// KillSurvivors makes Recover kill the processes that survived of each
	// job it marks lost (runner.KillIdentity). Leave it false when another
	// server may be running those jobs (a shared data directory).
	KillSurvivors bool
	// RunnerGrace is how long after Recover an unfinished job of a remote
	// runner waits for that runner to connect and hold it (Reconcile)
	// before it is marked lost, reason runner_lost (0 =
	// DefaultRunnerGrace).
	RunnerGrace time.Duration
	// Replica, when several server replicas share the Store, is this
	// one's id, recorded in every job it starts; Alive reports whether
	// the replica with an id still serves (pgdb.DB.Alive). Recover then
	// marks lost only the jobs of replicas that are gone (and its own
	// previous ones). Both empty: this process is the only server.
	Replica string
	Alive   func(ctx context.Context, replica string) (bool, error)
	// Changes, when several replicas share the Store, wakes this one's
	// waits on jobs another replica supervises (the store notifies each
	// state change it commits); waits on them then re-read the store when
	// woken instead of polling it every second. Nil: they poll.
	Changes Notifier
}

// A Notifier wakes waits on job state changes committed by any replica.
// Subscribe returns a channel closed at the next change of job id's
// state (or whenever changes may have been missed, such as after a lost
// connection) and a function that ends the subscription.
type Notifier interface {
	Subscribe(id string) (<-chan struct{}, func())
}

// A StartSpec describes one execution to supervise.
type StartSpec struct {
	Project   string
	SessionID string
	// Principal is the authority fingerprint of the caller.
	Principal string
	Tool      string
	Purpose   string
	// Cwd is the project-relative working directory (for the record;
	// Run.Dir is the absolute one).
	Cwd               string
	Background        bool
	Expectation       Expectation
	AcceptedExitCodes []int
	// Run is the execution; its Stdout and Stderr are set by the Manager.
	Run runner.Spec
	// Host, when set, runs the execution: the runner serving the project
	// (nil: the Manager's own host).
	Host runner.Host
	// ID, when set, is the job's id (of the form ParseID accepts), chosen
	// by the caller so that it can name files in the job's directory
	// before the run starts; empty means a fresh one.
	ID string
	// Validation, when set, is stored on the record (see ValidationMeta).
	Validation *ValidationMeta
	// KeepOutput keeps the output directory of a run answered inline until
	// the caller calls DiscardOutput (it parses the files first).
	KeepOutput bool
	// Cleanup, when set, is called exactly once when the execution can no
	// longer need what it releases (a script file): after the job is
	// terminal, or when Start fails.
	Cleanup func()
}

// Manager supervises job processes: it owns every running process of this
// server, queues executions beyond the concurrency limit and records every
// state change durably before reporting it.
type Manager struct {
	store  Store
	host   runner.Host
	dir    string
	limit  int
	share  int // RunningPerOwner
	qlimit int
	grace  time.Duration
	cap    int64
	retain int
	now    func() time.Time
	log    *slog.Logger
	hook   func(context.Context, Job)
	kill   bool

	runnerGrace time.Duration
	replica     string
	alive       func(ctx context.Context, replica string) (bool, error)
	changes     Notifier
	// adoptMu orders Reconcile and the expiry of the jobs waiting for
	// their runner: a record is adopted or expired, never both.
	adoptMu sync.Mutex
	// waiting counts the Observe calls in their bounded wait (Waiting).
	waiting atomic.Int64

	mu       sync.Mutex
	live     map[string]*entry // jobs of this process not yet terminal
	queue    []*entry          // queued jobs, in arrival order
	running  int               // slots held
	closing  bool
	closed   chan struct{} // closed when Close begins (wakes observers)
	finished int

	// runningBy and queuedBy count, under mu, each owner's slots held and
	// jobs admitted to the queue; served is the grant number of each
	// active owner's latest slot (see Manager.next).
	runningBy map[string]int
	queuedBy  map[string]int
	served    map[string]uint64
	grants    uint64

	wg sync.WaitGroup // one per live entry, plus prunes
}

// entry is a job supervised by this process.
type entry struct {
	id       string
	spec     runner.Spec // until launched
	host     runner.Host // the runner serving the project; nil: the Manager's
	accepted []int
	exp      Expectation
	ctx      context.Context
	cancel   context.CancelFunc
	stdout   *capFile
	stderr   *capFile
	dirMu    sync.Mutex
	dirMade  bool
	done     chan struct{} // closed once the terminal record is committed
	cleanup  func()
	keep     bool

	watchers atomic.Int32
	wmu      sync.Mutex
	waiters  map[chan struct{}]struct{}

	// recMu orders the durable writes of the record: the handoff's create
	// and finish's terminal write.
	recMu sync.Mutex
	// durable is set once the record exists in the store. A synchronous
	// run that starts at once has none until it is handed off: answered
	// inline, it never touches the store (the workflow ledger's
	// tool_call_started already makes a crash during the grace visible).
	durable bool

	mu         sync.Mutex
	job        Job // the last committed record
	proc       runner.Process
	slot       bool          // holds a concurrency slot
	stopReq    runner.Ending // Stopped or Cancelled once asked
	shutdown   bool
	background bool
	finished   bool
	result     *runner.Result

	// owner is the job's Principal (authority fingerprint); queued is
	// set, under Manager.mu, while e counts in queuedBy.
	owner  string
	queued bool
}

// NewManager returns a Manager. Call Recover before serving, and Close at
// shutdown.
func NewManager(o Options) (*Manager, error) {
	if o.Store == nil || o.Host == nil || o.Dir == "" {
		return nil, errors.New("jobs: Store, Host and Dir are required")
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > MaxConcurrency {
		return nil, fmt.Errorf("jobs: concurrency must be 1-%d", MaxConcurrency)
	}
	if o.RunningPerOwner == 0 {
		o.RunningPerOwner = max(1, o.Concurrency-ReservedSlots)
	}
	if o.RunningPerOwner < 1 || o.RunningPerOwner > o.Concurrency {
		return nil, fmt.Errorf("jobs: running jobs per owner must be 1-%d (the concurrency)", o.Concurrency)
	}
	if o.QueuedPerOwner == 0 {
		o.QueuedPerOwner = DefaultQueuedPerOwner
	}
	if o.QueuedPerOwner < 1 || o.QueuedPerOwner > MaxQueuedPerOwner {
		return nil, fmt.Errorf("jobs: queued jobs per owner must be 1-%d", MaxQueuedPerOwner)
	}
	if o.SyncGrace == 0 {
		o.SyncGrace = DefaultSyncGrace
	}
	if o.SyncGrace < 0 {
		return nil, errors.New("jobs: sync grace must not be negative")
	}
	if o.OutputCap <= 0 {
		o.OutputCap = MaxOutputFileBytes
	}
	if o.Retain <= 0 {
		o.Retain = RetainJobs
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RunnerGrace <= 0 {
		o.RunnerGrace = DefaultRunnerGrace
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("jobs: output directory: %w", err)
	}
	return &Manager{
		store: o.Store, host: o.Host, dir: o.Dir, limit: o.Concurrency, share: o.RunningPerOwner, qlimit: o.QueuedPerOwner, grace: o.SyncGrace,
		cap: o.OutputCap, retain: o.Retain, now: o.Now, log: o.Logger, hook: o.OnFinished, kill: o.KillSurvivors, runnerGrace: o.RunnerGrace, replica: o.Replica, alive: o.Alive, changes: o.Changes,
		live: map[string]*entry{}, runningBy: map[string]int{}, queuedBy: map[string]int{}, served: map[string]uint64{}, closed: make(chan struct{}),
	}, nil
}

// SyncGrace returns the configured synchronous grace period.
func (m *Manager) SyncGrace() time.Duration { return m.grace }

func (e *entry) snapshot() Job {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.job
}

func (e *entry) outcome() (Job, *runner.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.job, e.result
}

// signal wakes the observers of e.
func (e *entry) signal() {
	if e.watchers.Load() == 0 {
		return
	}
	e.wmu.Lock()
	for ch := range e.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	e.wmu.Unlock()
}

func (e *entry) watch(ch chan struct{}) func() {
	e.wmu.Lock()
	if e.waiters == nil {
		e.waiters = map[chan struct{}]struct{}{}
	}
	e.waiters[ch] = struct{}{}
	e.watchers.Add(1)
	e.wmu.Unlock()
	return func() {
		e.wmu.Lock()
		delete(e.waiters, ch)
		e.watchers.Add(-1)
		e.wmu.Unlock()
	}
}

// JobDir returns the output directory of a job.
func (m *Manager) JobDir(id string) string { return jobDir(m.dir, id) }

// OutputPath returns the path of one output stream of a job.
func (m *Manager) OutputPath(id string, s Stream) string { return outputPath(m.dir, id, s) }

func (m *Manager) entry(id string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[id]
}
