// Starting a job: checking its StartSpec, creating its record and output
// files, and admitting it to a concurrency slot or the queue.

package jobs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/runner"
)

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
		// The caller's text is redacted before it can reach the store.
		Tool: s.Tool, Program: redact.String(filepath.Base(s.Run.Argv[0])), Purpose: redact.String(s.Purpose), Cwd: redact.String(s.Cwd),
		Background: s.Background, TimeoutSeconds: int64(timeout / time.Second),
		State: Queued, Expectation: s.Expectation, AcceptedExitCodes: slices.Clone(s.AcceptedExitCodes),
		CreatedAt: now, Validation: s.Validation, Replica: m.replica,
	}
	if r, ok := s.Host.(runner.Reattacher); ok {
		j.Runner = r.ID()
	}
	if j.Project == "" || j.Principal == "" {
		return nil, failure.New(failure.InvalidArguments, "a job needs a project and a principal")
	}
	// The job id names the run's containment unit (its marker).
	s.Run.RunID = j.ID
	e = &entry{
		id: j.ID, owner: j.Principal, spec: s.Run, host: s.Host, accepted: j.AcceptedExitCodes, exp: j.Expectation,
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
	switch {
	case m.running < m.limit && m.runningBy[e.owner] < m.share && !m.eligibleQueued():
		m.takeSlot(e)
		j.State, j.StartedAt = Running, now
	case m.queuedBy[e.owner] >= m.qlimit:
		m.mu.Unlock()
		e.discard(dir)
		return nil, failure.New(failure.QueueFull, "you already have %d queued jobs (the most allowed); nothing was started or recorded: retry when one has started", m.qlimit)
	default:
		m.queuedBy[e.owner]++
		e.queued = true
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
			m.putSlot(e)
		}
		m.unqueue(e)
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

// Scheduling state; every function below runs with m.mu held.

// takeSlot gives e a concurrency slot.
func (m *Manager) takeSlot(e *entry) {
	m.running++
	m.runningBy[e.owner]++
	m.grants++
	m.served[e.owner] = m.grants
	e.mu.Lock()
	e.slot = true
	e.mu.Unlock()
}

// putSlot gives back the slot e held.
func (m *Manager) putSlot(e *entry) {
	m.running--
	if m.runningBy[e.owner]--; m.runningBy[e.owner] <= 0 {
		delete(m.runningBy, e.owner)
	}
	m.forget(e.owner)
}

// unqueue stops counting e among its owner's queued jobs (once; later
// calls do nothing).
func (m *Manager) unqueue(e *entry) {
	if !e.queued {
		return
	}
	e.queued = false
	if m.queuedBy[e.owner]--; m.queuedBy[e.owner] <= 0 {
		delete(m.queuedBy, e.owner)
	}
	m.forget(e.owner)
}

// forget drops the scheduling history of an owner with nothing running
// or queued, so that the maps hold active owners only.
func (m *Manager) forget(owner string) {
	if m.runningBy[owner] == 0 && m.queuedBy[owner] == 0 {
		delete(m.served, owner)
	}
}

// next removes from the queue and returns the job a free slot goes to,
// with its slot taken, or nil when every queued job's owner already holds
// its share (m.share) of the slots: of the owners with queued jobs and
// fewer running than their share, the one with the fewest running jobs,
// among equals the one served least recently (round robin), and of that
// owner's queued jobs the oldest. It is never first in, first out across
// owners: a job of an owner with nothing running waits for one slot's
// turn at most.
func (m *Manager) next() *entry {
	best := -1
	for i, e := range m.queue {
		if m.runningBy[e.owner] < m.share && (best < 0 || m.before(e.owner, m.queue[best].owner)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	e := m.queue[best]
	m.queue = slices.Delete(m.queue, best, best+1)
	m.unqueue(e)
	m.takeSlot(e)
	return e
}

// eligibleQueued reports whether a queued job's owner holds fewer slots
// than its share: such a job goes before a new one (next decides which).
func (m *Manager) eligibleQueued() bool {
	for _, e := range m.queue {
		if m.runningBy[e.owner] < m.share {
			return true
		}
	}
	return false
}

// before reports whether owner a's next job goes before owner b's.
func (m *Manager) before(a, b string) bool {
	if ra, rb := m.runningBy[a], m.runningBy[b]; ra != rb {
		return ra < rb
	}
	return m.served[a] < m.served[b]
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
