package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
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
	// DefaultConcurrency); further ones queue in arrival order.
	Concurrency int
	// SyncGrace is how long RunSync waits before a run continues as a
	// background job (0 = DefaultSyncGrace).
	SyncGrace time.Duration
	// OutputCap caps each output file (0 = MaxOutputFileBytes).
	OutputCap int64
	// Retain is how many terminal records are kept (0 = RetainJobs).
	Retain int
	Now    func() time.Time
	Logger *slog.Logger
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
	grace  time.Duration
	cap    int64
	retain int
	now    func() time.Time
	log    *slog.Logger

	mu       sync.Mutex
	live     map[string]*entry // jobs of this process not yet terminal
	queue    []*entry          // queued jobs, in arrival order
	running  int               // slots held
	closing  bool
	closed   chan struct{} // closed when Close begins (wakes observers)
	finished int

	wg sync.WaitGroup // one per live entry, plus prunes
}

// entry is a job supervised by this process.
type entry struct {
	id       string
	spec     runner.Spec // until launched
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
	proc       *runner.Process
	slot       bool          // holds a concurrency slot
	stopReq    runner.Ending // Stopped or Cancelled once asked
	shutdown   bool
	background bool
	finished   bool
	result     *runner.Result
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
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("jobs: output directory: %w", err)
	}
	return &Manager{
		store: o.Store, host: o.Host, dir: o.Dir, limit: o.Concurrency, grace: o.SyncGrace,
		cap: o.OutputCap, retain: o.Retain, now: o.Now, log: o.Logger,
		live: map[string]*entry{}, closed: make(chan struct{}),
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

// Start records a job and starts it, or queues it when the concurrency
// limit is reached. The returned job is running or queued. An error of
// kind not_started means nothing ran (the record, if one was made, is
// failed with reason not_started).
func (m *Manager) Start(ctx context.Context, s StartSpec) (Job, error) {
	e, err := m.start(ctx, s, false)
	if e == nil {
		return Job{}, err
	}
	return e.snapshot(), err
}

// RunSync starts a job and waits up to grace (0: the configured
// SyncGrace) for it. When it finishes in time, its result is returned and
// its output files are removed (the result carries the output tails). When
// it does not, it continues as a background job — the same process, never
// a second one — and the running (or queued) record is returned with a nil
// result. When ctx ends first the job is cancelled (its process group
// killed) and its result returned.
func (m *Manager) RunSync(ctx context.Context, s StartSpec, grace time.Duration) (Job, *runner.Result, error) {
	if grace <= 0 {
		grace = m.grace
	}
	s.Background = false
	e, err := m.start(ctx, s, true)
	if err != nil {
		if e != nil {
			return e.snapshot(), nil, err
		}
		return Job{}, nil, err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-e.done:
		j, res := e.outcome()
		return j, res, nil
	case <-ctx.Done():
		m.interrupt(e, runner.Cancelled)
		<-e.done
		j, res := e.outcome()
		return j, res, nil
	case <-timer.C:
	}
	// Hand off: the record becomes (or, for a run that was queued,
	// already is) durable and background before the caller learns the
	// job id. recMu orders this against finish: either the run finished
	// first (answered inline after all) or its terminal write updates the
	// record made here.
	e.recMu.Lock()
	e.mu.Lock()
	if e.finished {
		e.mu.Unlock()
		e.recMu.Unlock()
		j, res := e.outcome()
		return j, res, nil
	}
	durable := e.durable
	j := e.job
	e.mu.Unlock()
	if durable {
		j, err = m.store.Update(context.WithoutCancel(ctx), e.id, func(j *Job) error {
			j.Background = true
			return nil
		})
		if err != nil {
			m.log.Error("jobs: record background handoff", "job", e.id, "err", err)
			j = e.snapshot()
			j.Background = true
		}
	} else {
		j.Background = true
		if err = e.spill(); err == nil {
			err = m.store.Create(context.WithoutCancel(ctx), j)
		}
	}
	if err == nil || durable {
		e.mu.Lock()
		e.background, e.durable = true, true
		if !j.State.Terminal() {
			e.job = j
		}
		e.mu.Unlock()
	}
	e.recMu.Unlock()
	if err != nil && !durable {
		// Without a record no one could follow the job: keep answering
		// this call synchronously instead.
		m.log.Error("jobs: record background handoff", "job", e.id, "err", err)
		select {
		case <-e.done:
		case <-ctx.Done():
			m.interrupt(e, runner.Cancelled)
			<-e.done
		}
		j, res := e.outcome()
		return j, res, nil
	}
	if j.State.Terminal() {
		<-e.done
		j, res := e.outcome()
		return j, res, nil
	}
	return j, nil, nil
}

// start records (unless deferred) and starts or queues a job. deferRecord
// (RunSync) leaves a run that starts at once without a record until it is
// handed off.
func (m *Manager) start(ctx context.Context, s StartSpec, deferRecord bool) (e *entry, err error) {
	if s.Cleanup != nil {
		defer func() {
			if e == nil {
				s.Cleanup()
			}
		}()
	}
	if err := s.Run.Validate(); err != nil {
		return nil, failure.New(failure.NotStarted, "%v", err)
	}
	if s.Expectation == "" {
		s.Expectation = ExpectSuccess
	}
	if !s.Expectation.Valid() {
		return nil, failure.New(failure.InvalidArguments, "result_expectation must be success, failure or observe")
	}
	timeout := s.Run.Timeout
	if timeout == 0 {
		timeout = runner.DefaultTimeout
	}
	id := s.ID
	if id == "" {
		id = NewID()
	} else if _, err := ParseID(id); err != nil {
		return nil, err
	}
	if err := s.Validation.validate(); err != nil {
		return nil, err
	}
	now := m.now().UTC()
	j := Job{
		ID: id, Project: s.Project, SessionID: s.SessionID, Principal: s.Principal,
		Tool: s.Tool, Program: filepath.Base(s.Run.Argv[0]), Purpose: s.Purpose, Cwd: s.Cwd,
		Background: s.Background, TimeoutSeconds: int64(timeout / time.Second),
		State: Queued, Expectation: s.Expectation, AcceptedExitCodes: slices.Clone(s.AcceptedExitCodes),
		CreatedAt: now, Validation: s.Validation,
	}
	if j.Project == "" || j.Principal == "" {
		return nil, failure.New(failure.InvalidArguments, "a job needs a project and a principal")
	}
	e = &entry{
		id: j.ID, spec: s.Run, accepted: j.AcceptedExitCodes, exp: j.Expectation,
		done: make(chan struct{}), background: s.Background, cleanup: s.Cleanup, keep: s.KeepOutput,
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	dir := jobDir(m.dir, j.ID)
	mkdir := func() error {
		e.dirMu.Lock()
		defer e.dirMu.Unlock()
		if e.dirMade {
			return nil
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		e.dirMade = true
		return nil
	}
	e.stdout = newCapFile(outputPath(m.dir, j.ID, Stdout), m.cap, DefaultMemOutputBytes, mkdir, e.signal)
	e.stderr = newCapFile(outputPath(m.dir, j.ID, Stderr), m.cap, DefaultMemOutputBytes, mkdir, e.signal)
	if !deferRecord || s.KeepOutput {
		// Output anyone may read (and a caller's files in the job's
		// directory) needs the files from the start.
		if err := e.spill(); err != nil {
			e.discard(dir)
			return nil, failure.Wrap(failure.NotStarted, err, "cannot create the job's output files")
		}
	}

	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		e.discard(dir)
		return nil, failure.New(failure.Unavailable, "server is shutting down; nothing ran")
	}
	if m.running < m.limit && len(m.queue) == 0 {
		m.running++
		e.slot = true
		j.State, j.StartedAt = Running, now
	}
	e.job = j
	m.live[j.ID] = e
	m.wg.Add(1)
	m.mu.Unlock()

	// The record of a background or queued job is durable before the
	// process starts; a synchronous run that starts now gets one only if
	// it is handed off.
	if deferRecord && e.slot {
		return e, m.launch(e)
	}
	e.durable = true
	err = e.spill()
	if err != nil {
		err = failure.Wrap(failure.NotStarted, err, "cannot create the job's output files")
	} else {
		err = m.store.Create(ctx, j)
	}
	if err != nil {
		m.mu.Lock()
		delete(m.live, j.ID)
		if e.slot {
			m.running--
		}
		m.mu.Unlock()
		e.discard(dir)
		m.wg.Done()
		m.dispatch()
		if failure.KindOf(err) == failure.Internal {
			err = failure.Wrap(failure.Unavailable, err, "could not record the job; nothing ran")
		}
		return nil, err
	}
	if e.slot {
		return e, m.launch(e)
	}
	m.mu.Lock()
	closing := m.closing
	if !closing {
		m.queue = append(m.queue, e)
	}
	m.mu.Unlock()
	if closing {
		m.finish(e, nil, Lost, ReasonServerShutdown)
		return e, nil
	}
	m.dispatch()
	return e, nil
}

func (e *entry) discard(dir string) {
	e.stdout.Close()
	e.stderr.Close()
	if e.outputOnDisk() {
		os.RemoveAll(dir)
	}
	e.cancel()
}

// spill moves both streams to their files.
func (e *entry) spill() error {
	if err := e.stdout.spill(); err != nil {
		return err
	}
	return e.stderr.spill()
}

// outputOnDisk reports whether the job's directory may exist.
func (e *entry) outputOnDisk() bool {
	e.dirMu.Lock()
	defer e.dirMu.Unlock()
	return e.dirMade
}

// dispatch launches queued jobs while slots are free.
func (m *Manager) dispatch() {
	for {
		m.mu.Lock()
		if m.closing || m.running >= m.limit || len(m.queue) == 0 {
			m.mu.Unlock()
			return
		}
		e := m.queue[0]
		m.queue = m.queue[1:]
		m.running++
		m.mu.Unlock()
		e.mu.Lock()
		e.slot = true
		e.mu.Unlock()
		go m.launch(e)
	}
}

// launch starts the process of e, which holds a slot.
func (m *Manager) launch(e *entry) error {
	e.mu.Lock()
	req, state := e.stopReq, e.job.State
	e.mu.Unlock()
	if req != "" {
		m.finish(e, nil, stateFor(req), reasonFor(req))
		return nil
	}
	if state == Queued {
		now := m.now().UTC()
		j, err := m.store.Update(context.Background(), e.id, func(j *Job) error {
			if j.State != Queued {
				return ErrUnchanged
			}
			j.State, j.StartedAt = Running, now
			return nil
		})
		if err != nil {
			// Another process finalized the record, or the store failed:
			// either way this job must not run.
			m.log.Warn("jobs: could not record start", "job", e.id, "err", err)
			m.finish(e, nil, Lost, ReasonNotStarted)
			return nil
		}
		e.mu.Lock()
		e.job = j
		e.mu.Unlock()
		e.signal()
	}
	spec := e.spec
	e.spec = runner.Spec{}
	spec.Stdout, spec.Stderr = e.stdout, e.stderr
	proc, err := m.host.Start(e.ctx, spec)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), runner.ErrNotStarted.Error()+": ")
		if !errors.Is(err, runner.ErrNotStarted) {
			msg = "the runner could not start the process"
		}
		m.finish(e, nil, Failed, ReasonNotStarted)
		return failure.Wrap(failure.NotStarted, err, "%s", msg)
	}
	e.mu.Lock()
	e.proc = proc
	req = e.stopReq
	e.mu.Unlock()
	switch req {
	case runner.Stopped:
		proc.Stop()
	case runner.Cancelled:
		e.cancel()
	}
	go func() {
		res, _ := proc.Wait(context.Background())
		m.finish(e, &res, "", "")
	}()
	return nil
}

func stateFor(req runner.Ending) State {
	if req == runner.Cancelled {
		return Cancelled
	}
	return Stopped
}

func reasonFor(req runner.Ending) string {
	if req == runner.Stopped {
		return ReasonStopJob
	}
	return ""
}

// finish commits the terminal record of e (the first terminal write wins),
// releases its slot and wakes its waiters. res is nil when no process ran
// (state and reason then say why).
func (m *Manager) finish(e *entry, res *runner.Result, st State, reason string) {
	e.stdout.Close()
	e.stderr.Close()
	e.cancel()
	e.mu.Lock()
	shutdown := e.shutdown
	e.mu.Unlock()
	matched := false
	if res != nil {
		st, matched = Classify(*res, e.accepted, e.exp)
		if st == Stopped {
			reason = ReasonStopJob
		}
	}
	if shutdown && st == Stopped {
		st, reason = Lost, ReasonServerShutdown
	}
	now := m.now().UTC()
	apply := func(j *Job) {
		j.State, j.Reason, j.FinishedAt, j.Matched = st, reason, now, &matched
		if res != nil {
			code := res.ExitCode
			j.ExitCode, j.Signal, j.Ending, j.KilledGroup = &code, res.Signal, res.Ending, res.KilledGroup
		}
		j.StdoutBytes, j.StdoutDropped = e.stdout.written.Load(), e.stdout.dropped.Load()
		j.StderrBytes, j.StderrDropped = e.stderr.written.Load(), e.stderr.dropped.Load()
	}
	e.recMu.Lock()
	e.mu.Lock()
	durable := e.durable
	e.mu.Unlock()
	var j Job
	if durable {
		var err error
		j, err = m.store.Update(context.Background(), e.id, func(j *Job) error {
			if j.State.Terminal() {
				return ErrUnchanged
			}
			apply(j)
			return nil
		})
		if err != nil && !errors.Is(err, ErrUnchanged) {
			// Keep answering waiters in this process; the record stays
			// unfinished and becomes lost at the next start.
			m.log.Error("jobs: record terminal state", "job", e.id, "state", st, "err", err)
			j = e.snapshot()
			apply(&j)
		}
	} else {
		// Answered inline: no record, only the result.
		j = e.snapshot()
		apply(&j)
	}
	e.mu.Lock()
	j.Background = j.Background || e.background
	e.job, e.result, e.finished = j, res, true
	bg, slot := e.background, e.slot
	e.slot = false
	e.mu.Unlock()
	e.recMu.Unlock()

	m.mu.Lock()
	delete(m.live, e.id)
	if i := slices.Index(m.queue, e); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
	if slot {
		m.running--
	}
	prune := false
	if durable {
		// Only recorded jobs count towards a prune.
		m.finished++
		prune = m.finished%pruneEvery == 0 && !m.closing
	}
	if prune {
		m.wg.Add(1)
	}
	m.mu.Unlock()

	if e.cleanup != nil {
		e.cleanup()
	}
	if !bg && !e.keep && e.outputOnDisk() {
		// Answered inline: the call's result carried the output.
		os.RemoveAll(jobDir(m.dir, e.id))
	}
	close(e.done)
	e.signal()
	if prune {
		go func() {
			defer m.wg.Done()
			m.prune(context.Background())
		}()
	}
	m.dispatch()
	m.wg.Done()
}

// JobDir returns the output directory of a job.
func (m *Manager) JobDir(id string) string { return jobDir(m.dir, id) }

// OutputPath returns the path of one output stream of a job.
func (m *Manager) OutputPath(id string, s Stream) string { return outputPath(m.dir, id, s) }

// DiscardOutput removes the output directory of a run answered inline
// whose StartSpec asked KeepOutput, once its caller has read it. A
// background job's output is never removed here.
func (m *Manager) DiscardOutput(ctx context.Context, id string) {
	if _, err := ParseID(id); err != nil {
		return
	}
	if j, err := m.store.Get(ctx, id); err == nil && j.Background {
		return
	}
	if m.entry(id) != nil {
		return
	}
	os.RemoveAll(jobDir(m.dir, id))
}

// ValidationCandidates returns the terminal-candidate snapshot of a
// Workflow Session: the newest (at most limit) terminal background jobs,
// of any owner, whose validation metadata names the session, newest first.
// Only these may still become validation evidence in that session.
func (m *Manager) ValidationCandidates(ctx context.Context, sessionID string, limit int) ([]Job, error) {
	all, _, err := m.store.List(ctx, ListFilter{AllOwners: true, BackgroundOnly: true})
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, j := range all {
		if len(out) >= limit {
			break
		}
		if j.State.Terminal() && j.Validation != nil && slices.Contains(j.Validation.Sessions, sessionID) {
			out = append(out, j)
		}
	}
	return out, nil
}

// interrupt asks the execution of e to end: Stopped (stop_job, shutdown)
// or Cancelled (the sync caller went away). A queued job is finished at
// once.
func (m *Manager) interrupt(e *entry, why runner.Ending) {
	m.mu.Lock()
	queued := false
	if i := slices.Index(m.queue, e); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
		queued = true
	}
	m.mu.Unlock()
	e.mu.Lock()
	if e.stopReq == "" {
		e.stopReq = why
	}
	proc := e.proc
	e.mu.Unlock()
	switch {
	case queued:
		m.finish(e, nil, stateFor(why), reasonFor(why))
	case why == runner.Cancelled:
		e.cancel()
	case proc != nil:
		proc.Stop()
	}
	// Otherwise launch is between its checks and will honour stopReq.
}

func (m *Manager) entry(id string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[id]
}

// Get returns a job acc may see.
func (m *Manager) Get(ctx context.Context, acc Access, id string) (Job, error) {
	if _, err := ParseID(id); err != nil {
		return Job{}, err
	}
	j, err := m.store.Get(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if err := acc.Check(j); err != nil {
		return Job{}, err
	}
	return j, nil
}

// Wait returns the job when it is terminal or d has passed, whichever
// comes first (the record as committed).
func (m *Manager) Wait(ctx context.Context, id string, d time.Duration) (Job, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		j, err := m.store.Get(ctx, id)
		if err != nil || j.State.Terminal() {
			return j, err
		}
		var done <-chan struct{}
		if e := m.entry(id); e != nil {
			done = e.done
		}
		poll := time.NewTimer(pollInterval)
		select {
		case <-done:
		case <-poll.C:
		case <-timer.C:
			poll.Stop()
			return m.store.Get(ctx, id)
		case <-ctx.Done():
			poll.Stop()
			return Job{}, ctx.Err()
		}
		poll.Stop()
	}
}

// Stop stops a job: its process group gets SIGTERM, then SIGKILL after
// runner.KillGrace; a queued job never starts. It returns once the
// terminal record is committed. Stopping a terminal job changes nothing
// and reports wasTerminal.
func (m *Manager) Stop(ctx context.Context, acc Access, id string) (j Job, wasTerminal bool, err error) {
	j, err = m.Get(ctx, acc, id)
	if err != nil || j.State.Terminal() {
		return j, err == nil, err
	}
	e := m.entry(id)
	if e == nil {
		// The record may have just become terminal.
		if j, err = m.store.Get(ctx, id); err == nil && j.State.Terminal() {
			return j, true, nil
		}
		return Job{}, false, failure.New(failure.Unavailable, "job %s is not supervised by this server process; it will be marked lost when its supervisor is gone", id)
	}
	m.interrupt(e, runner.Stopped)
	select {
	case <-e.done:
	case <-ctx.Done():
		return Job{}, false, ctx.Err()
	}
	j, err = m.store.Get(context.WithoutCancel(ctx), id)
	if err != nil {
		j = e.snapshot()
	}
	return j, false, nil
}

// List returns acc's jobs in its project, newest first, and how many
// match.
func (m *Manager) List(ctx context.Context, acc Access, f ListFilter) ([]Job, int, error) {
	f.Project, f.Fingerprint = acc.Project, acc.Fingerprint
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	return m.store.List(ctx, f)
}

// Read reads one output stream of a job by cursor (nil: the last max
// bytes).
func (m *Manager) Read(ctx context.Context, acc Access, id string, s Stream, cursor *int64, max int) (Job, Chunk, error) {
	if s != Stdout && s != Stderr {
		return Job{}, Chunk{}, failure.New(failure.InvalidArguments, "stream must be stdout or stderr")
	}
	if err := checkRead(cursor, max); err != nil {
		return Job{}, Chunk{}, err
	}
	if max == 0 {
		max = DefaultReadBytes
	}
	j, err := m.Get(ctx, acc, id)
	if err != nil {
		return Job{}, Chunk{}, err
	}
	c, err := m.chunk(j, s, cursor, max)
	return j, c, err
}

func checkRead(cursor *int64, max int) error {
	if cursor != nil && *cursor < 0 {
		return failure.New(failure.InvalidArguments, "cursor must not be negative")
	}
	if max < 0 || max > MaxReadBytes {
		return failure.New(failure.InvalidArguments, "max_bytes must be 1-%d", MaxReadBytes)
	}
	return nil
}

func (m *Manager) chunk(j Job, s Stream, cursor *int64, max int) (Chunk, error) {
	c, err := readChunk(outputPath(m.dir, j.ID, s), cursor, max, j.State.Terminal())
	if err != nil {
		return Chunk{}, failure.Wrap(failure.Unavailable, err, "cannot read the job's %s", s)
	}
	if e := m.entry(j.ID); e != nil {
		f := e.stdout
		if s == Stderr {
			f = e.stderr
		}
		c.DroppedBytes = f.dropped.Load()
	} else if s == Stdout {
		c.DroppedBytes = j.StdoutDropped
	} else {
		c.DroppedBytes = j.StderrDropped
	}
	return c, nil
}

// Recover marks every queued or running record that no supervisor in this
// process owns as lost (reason server_restart): its process died with a
// previous server. Output files stay readable; their sizes are recorded.
// It then prunes old records. It returns the records it marked lost.
func (m *Manager) Recover(ctx context.Context) ([]Job, error) {
	list, err := m.store.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	var out []Job
	now := m.now().UTC()
	for _, j := range list {
		if m.entry(j.ID) != nil {
			continue
		}
		sb, eb := fileSize(outputPath(m.dir, j.ID, Stdout)), fileSize(outputPath(m.dir, j.ID, Stderr))
		no := false
		got, err := m.store.Update(ctx, j.ID, func(j *Job) error {
			if j.State.Terminal() {
				return ErrUnchanged
			}
			j.State, j.Reason, j.FinishedAt, j.Matched = Lost, ReasonServerRestart, now, &no
			j.StdoutBytes, j.StderrBytes = sb, eb
			return nil
		})
		if errors.Is(err, ErrUnchanged) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, got)
	}
	m.prune(ctx)
	return out, nil
}

func (m *Manager) prune(ctx context.Context) {
	ids, err := m.store.Prune(ctx, m.retain)
	if err != nil {
		m.log.Warn("jobs: prune", "err", err)
		return
	}
	for _, id := range ids {
		os.RemoveAll(jobDir(m.dir, id))
	}
}

// Close shuts the Manager down: queued jobs and running processes are
// ended (process groups killed, never orphaned) and recorded lost with
// reason server_shutdown, unless they finished on their own first. It
// returns when every supervisor has recorded its outcome or ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if !m.closing {
		m.closing = true
		close(m.closed)
	}
	queued := m.queue
	m.queue = nil
	all := make([]*entry, 0, len(m.live))
	for _, e := range m.live {
		all = append(all, e)
	}
	m.mu.Unlock()
	for _, e := range all {
		e.mu.Lock()
		if e.stopReq == "" {
			// A job already being stopped or cancelled keeps that outcome.
			e.stopReq, e.shutdown = runner.Stopped, true
		}
		proc := e.proc
		e.mu.Unlock()
		if proc != nil {
			proc.Stop()
		}
	}
	for _, e := range queued {
		m.finish(e, nil, Stopped, "")
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
