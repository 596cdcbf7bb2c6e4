// Jobs on remote runners across a restart of this server: adopting the
// processes a runner still holds, and giving up on the ones it does not.

package jobs

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// Reconcile is called when runner r connects, with the run ids of the
// processes it holds that no supervisor of this server claims. Each
// unfinished record of r's jobs that no supervisor here owns is adopted
// when r holds its process (its output continues from what the files hold;
// its outcome is recorded as for any job) and marked lost, reason
// runner_lost, when r does not. A held process no unfinished record claims
// is released (stopped if it runs): its outcome was recorded already, or
// the run it belonged to was never recorded (a synchronous run whose call
// ended with this server).
//
// With several replicas (Options.Replica), a record another live replica
// supervises is left to it; one of a replica that is gone is taken over
// (its Replica set to this one, compare-and-set, so that of two replicas
// greeted by the runner at once only one adopts it) before it is adopted
// or marked lost.
func (m *Manager) Reconcile(ctx context.Context, r runner.Reattacher, held []string) error {
	m.adoptMu.Lock()
	defer m.adoptMu.Unlock()
	list, err := m.store.Unfinished(ctx)
	if err != nil {
		return err
	}
	claimed := map[string]bool{}
	for _, j := range list {
		if j.Runner != r.ID() || j.State != Running {
			continue
		}
		claimed[j.ID] = true
		if m.entry(j.ID) != nil {
			continue // supervised here (a reconnect the runner hub handles)
		}
		if elsewhere, err := m.supervisedElsewhere(ctx, j); err != nil || elsewhere {
			continue // that replica's (or, unknown now, left as it is)
		}
		if !m.takeOver(ctx, j) {
			continue
		}
		if !slices.Contains(held, j.ID) {
			m.markLost(ctx, j.ID, ReasonRunnerLost)
			continue
		}
		if err := m.adopt(ctx, r, j); err != nil {
			m.log.Warn("jobs: adopting a runner's job", "job", j.ID, "runner", r.ID(), "err", err)
		}
	}
	for _, id := range held {
		if !claimed[id] && m.entry(id) == nil {
			r.Release(id)
		}
	}
	return nil
}

// takeOver makes j, found unfinished, this replica's: true when j was
// this replica's already (or no replicas are configured), or when its
// Replica was still the one read and is now this one.
func (m *Manager) takeOver(ctx context.Context, j Job) bool {
	if j.Replica == m.replica {
		return true
	}
	_, err := m.store.Update(ctx, j.ID, func(cur *Job) error {
		if cur.State.Terminal() || cur.Replica != j.Replica {
			return ErrUnchanged
		}
		cur.Replica = m.replica
		return nil
	})
	if err != nil && !errors.Is(err, ErrUnchanged) {
		m.log.Warn("jobs: taking over a gone replica's job", "job", j.ID, "replica", j.Replica, "err", err)
	}
	return err == nil
}

// adopt supervises j, whose process r holds, from this server on.
func (m *Manager) adopt(ctx context.Context, r runner.Reattacher, j Job) error {
	e := &entry{id: j.ID, owner: j.Principal, host: r, accepted: j.AcceptedExitCodes, exp: j.Expectation,
		done: make(chan struct{}), background: j.Background, durable: true, job: j, dirMade: true}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	var err error
	if e.stdout, err = appendCapFile(m.dir, j.ID, Stdout, m.cap, e.signal); err == nil {
		if e.stderr, err = appendCapFile(m.dir, j.ID, Stderr, m.cap, e.signal); err != nil {
			e.stdout.Close()
		}
	}
	if err != nil {
		m.markLost(ctx, j.ID, ReasonRunnerLost)
		return err
	}
	m.mu.Lock()
	if m.closing || m.live[j.ID] != nil {
		m.mu.Unlock()
		e.stdout.Close()
		e.stderr.Close()
		return nil
	}
	m.live[j.ID] = e
	m.wg.Add(1)
	m.mu.Unlock()
	a := runner.Attach{StdoutOffset: e.stdout.written.Load(), StderrOffset: e.stderr.written.Load(), Stdout: e.stdout, Stderr: e.stderr}
	if v := j.Validation; v != nil && v.ReportFile != "" {
		// The report the run collects comes back to the job's directory,
		// after what a previous server received of it.
		rep, err := appendCapFile(m.dir, j.ID, Stream(v.ReportFile), runner.MaxCollectBytes, nil)
		if err == nil {
			e.cleanup = func() { rep.Close() }
			a.Report, a.ReportOffset = rep, rep.written.Load()
		}
	}
	proc, err := r.Adopt(ctx, j.ID, a)
	if err != nil {
		reason := ReasonRunnerLost
		if !failure.Is(err, failure.OutcomeUnknown) {
			// Not reached now (runner gone again, a conflict): the record
			// waits for the runner's next connection, within the grace.
			m.leave(e)
			m.expireAfter([]string{j.ID}, m.runnerGrace)
			return err
		}
		m.finish(e, nil, Lost, reason)
		return err
	}
	e.mu.Lock()
	e.proc = proc
	e.mu.Unlock()
	e.signal()
	m.supervise(e, proc)
	return nil
}

// markLost records the unfinished job id, which no supervisor here owns,
// lost for reason.
func (m *Manager) markLost(ctx context.Context, id, reason string) {
	no := false
	now := m.now().UTC()
	sb, eb := fileSize(outputPath(m.dir, id, Stdout)), fileSize(outputPath(m.dir, id, Stderr))
	got, err := m.store.Update(ctx, id, func(j *Job) error {
		if j.State.Terminal() {
			return ErrUnchanged
		}
		j.State, j.Reason, j.FinishedAt, j.Matched = Lost, reason, now, &no
		j.StdoutBytes, j.StderrBytes = sb, eb
		return nil
	})
	if errors.Is(err, ErrUnchanged) {
		return
	}
	if err != nil {
		m.log.Warn("jobs: recording a runner's job lost", "job", id, "err", err)
		return
	}
	if m.hook != nil {
		m.hook(ctx, got)
	}
}

// expireAfter marks lost, reason runner_lost, those of ids that are still
// unfinished and not adopted after d.
func (m *Manager) expireAfter(ids []string, d time.Duration) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-m.closed:
			return
		case <-t.C:
		}
		m.adoptMu.Lock()
		defer m.adoptMu.Unlock()
		for _, id := range ids {
			if m.entry(id) == nil {
				m.markLost(context.Background(), id, ReasonRunnerLost)
			}
		}
	}()
}

// appendCapFile returns the capFile of an adopted job's stream: its file
// as the server left it, output appended from there.
func appendCapFile(dir, id string, s Stream, limit int64, onWrite func()) (*capFile, error) {
	if err := os.MkdirAll(jobDir(dir, id), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(outputPath(dir, id, s), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	c := &capFile{f: f, path: f.Name(), spilled: true, limit: limit, mkdir: func() error { return nil }, onWrite: onWrite}
	c.written.Store(st.Size())
	return c, nil
}
