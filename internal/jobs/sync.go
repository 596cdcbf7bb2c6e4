// The synchronous run: the sync grace and the handoff of a run still going
// to the background (same process, never a second one).

package jobs

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/runner"
)

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
