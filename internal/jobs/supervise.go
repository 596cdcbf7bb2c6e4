// Supervision: dispatching queued jobs to free slots, launching their
// processes, interrupting and stopping them, and committing the terminal
// record once.

package jobs

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// dispatch launches queued jobs while slots are free and some queued
// job's owner holds fewer than its share, each chosen by next.
func (m *Manager) dispatch() {
	for {
		m.mu.Lock()
		if m.closing || m.running >= m.limit || len(m.queue) == 0 {
			m.mu.Unlock()
			return
		}
		e := m.next()
		m.mu.Unlock()
		if e == nil {
			return // every queued job's owner holds its share
		}
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
	host := m.host
	if e.host != nil {
		host = e.host
	}
	proc, err := host.Start(e.ctx, spec)
	if err != nil && failure.Is(err, failure.OutcomeUnknown) {
		// A remote runner got the start and its answer was lost: the
		// process may be running there, never "not started".
		m.finish(e, nil, Lost, ReasonRunnerLost)
		return err
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), runner.ErrNotStarted.Error()+": ")
		if !errors.Is(err, runner.ErrNotStarted) {
			msg = "the runner could not start the process"
		}
		m.finish(e, nil, Failed, ReasonNotStarted)
		return failure.Wrap(failure.NotStarted, err, "%s", msg)
	}
	ident := proc.Identity()
	e.mu.Lock()
	e.proc = proc
	if ident.PID != 0 { // a process on a remote runner has none here
		e.job.Process = &ident
	}
	req = e.stopReq
	e.mu.Unlock()
	if ident.PID != 0 {
		m.recordIdentity(e, ident)
	}
	switch req {
	case runner.Stopped:
		proc.Stop()
	case runner.Cancelled:
		e.cancel()
	}
	m.supervise(e, proc)
	return nil
}

// supervise waits for proc, the process of e, and records its outcome. A
// remote runner's process that Close leaves running is not waited for:
// its supervisor leaves without a record.
func (m *Manager) supervise(e *entry, proc runner.Process) {
	ctx := context.Background()
	if _, remote := e.host.(runner.Reattacher); remote {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		go func() {
			select {
			case <-m.closed:
			case <-proc.Done():
			}
			cancel()
		}()
	}
	go func() {
		res, err := proc.Wait(ctx)
		if err != nil && ctx.Err() != nil {
			select {
			case <-proc.Done(): // it ended as Close began: record it
				res, err = proc.Wait(context.Background())
			default:
				m.leave(e)
				return
			}
		}
		switch {
		case err == nil:
			m.finish(e, &res, "", "")
		case errors.Is(err, runner.ErrHostRestarted):
			m.finish(e, nil, Lost, ReasonRunnerRestart)
		default:
			// The runner did not report the exit: the job is lost,
			// never a success.
			m.finish(e, nil, Lost, ReasonRunnerLost)
		}
	}()
}

// leave ends the supervision of e without a record: Close left its remote
// process running for the next server.
func (m *Manager) leave(e *entry) {
	e.stdout.Close()
	e.stderr.Close()
	e.cancel()
	e.mu.Lock()
	slot := e.slot
	e.slot, e.finished = false, true
	e.mu.Unlock()
	m.mu.Lock()
	delete(m.live, e.id)
	if slot {
		m.putSlot(e)
	}
	m.mu.Unlock()
	if e.cleanup != nil {
		e.cleanup()
	}
	close(e.done)
	e.signal()
	m.wg.Done()
}

// recordIdentity adds the identity of the started process to a durable
// record that is not terminal yet (a record made later, at a handoff, is
// made from e.job, which holds it already). When the write fails the
// record has none, and a start after a crash cannot kill the survivors.
func (m *Manager) recordIdentity(e *entry, ident runner.Identity) {
	e.recMu.Lock()
	defer e.recMu.Unlock()
	e.mu.Lock()
	durable, finished := e.durable, e.finished
	e.mu.Unlock()
	if !durable || finished {
		return
	}
	j, err := m.store.Update(context.Background(), e.id, func(j *Job) error {
		if j.State.Terminal() {
			return ErrUnchanged
		}
		j.Process = &ident
		return nil
	})
	if err != nil {
		if !errors.Is(err, ErrUnchanged) {
			m.log.Warn("jobs: could not record the process identity", "job", e.id, "err", err)
		}
		return
	}
	e.mu.Lock()
	if !e.finished {
		e.job = j
	}
	e.mu.Unlock()
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
// or when its result is not known (state and reason then say why).
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
	committed := false
	if durable {
		var err error
		j, err = m.store.Update(context.Background(), e.id, func(j *Job) error {
			if j.State.Terminal() {
				return ErrUnchanged
			}
			apply(j)
			return nil
		})
		committed = err == nil
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

	if committed && m.hook != nil {
		// e stays live until done closes, so reads of the job wait for
		// the hook (see Options.OnFinished).
		m.hook(context.Background(), j)
	}

	m.mu.Lock()
	delete(m.live, e.id)
	if i := slices.Index(m.queue, e); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
	m.unqueue(e)
	if slot {
		m.putSlot(e)
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
	e.mu.Lock()
	started := e.proc != nil
	e.mu.Unlock()
	if r, remote := e.host.(runner.Reattacher); remote && (started || st == Lost) {
		// The outcome is recorded: the runner may forget the process.
		r.Release(e.id)
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

// interrupt asks the execution of e to end: Stopped (stop_job, shutdown)
// or Cancelled (the sync caller went away). A queued job is finished at
// once.
func (m *Manager) interrupt(e *entry, why runner.Ending) {
	m.mu.Lock()
	queued := false
	if i := slices.Index(m.queue, e); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
		m.unqueue(e)
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
