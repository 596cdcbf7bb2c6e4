// Lifecycle beyond one job: recovery of records a previous server left
// unfinished, pruning of old records, and shutdown.

package jobs

import (
	"context"
	"errors"
	"os"

	"github.com/webcodex/webcodex/internal/runner"
)

// Recover marks every queued or running record that no supervisor in this
// process owns as lost (reason server_restart): its supervisor died with a
// previous server. A record another live replica supervises
// (Options.Replica, Options.Alive) is left alone. With Options.KillSurvivors, the processes of such a job
// that survived (found by its recorded runner.Identity) are killed first,
// and killed_group records whether there were any. Output files stay
// readable; their sizes are recorded.
// Each record it marks lost is passed to Options.OnFinished. It then
// prunes old records. It returns the records it marked lost.
//
// A record of a remote runner's job is not marked lost: its process may
// still run there. It waits Options.RunnerGrace for Reconcile (its runner
// connecting) and is marked lost, reason runner_lost, if it is not
// adopted by then.
func (m *Manager) Recover(ctx context.Context) ([]Job, error) {
	list, err := m.store.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	var out []Job
	var remote []string
	now := m.now().UTC()
	for _, j := range list {
		if m.entry(j.ID) != nil {
			continue
		}
		if supervised, err := m.supervisedElsewhere(ctx, j); err != nil {
			return out, err
		} else if supervised {
			continue
		}
		if j.Runner != "" && j.State == Running {
			// Its process may still run on the runner.
			remote = append(remote, j.ID)
			continue
		}
		killed := 0
		if m.kill && j.Process != nil {
			if killed = runner.KillIdentity(*j.Process); killed > 0 {
				m.log.Warn("jobs: killed processes a crashed server left running", "job", j.ID, "processes", killed)
			}
		}
		sb, eb := fileSize(outputPath(m.dir, j.ID, Stdout)), fileSize(outputPath(m.dir, j.ID, Stderr))
		no := false
		got, err := m.store.Update(ctx, j.ID, func(j *Job) error {
			if j.State.Terminal() {
				return ErrUnchanged
			}
			j.State, j.Reason, j.FinishedAt, j.Matched = Lost, ReasonServerRestart, now, &no
			j.StdoutBytes, j.StderrBytes = sb, eb
			j.KilledGroup = j.KilledGroup || killed > 0
			return nil
		})
		if errors.Is(err, ErrUnchanged) {
			continue
		}
		if err != nil {
			return out, err
		}
		if m.hook != nil {
			m.hook(ctx, got)
		}
		out = append(out, got)
	}
	if len(remote) > 0 {
		m.expireAfter(remote, m.runnerGrace)
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
// reason server_shutdown, unless they finished on their own first. A job
// running on a remote runner is left running there, its record unfinished
// for the next server (see Reconcile). It returns when every supervisor
// has recorded its outcome (or left) or ctx ends.
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
		proc := e.proc
		if _, remote := e.host.(runner.Reattacher); remote || e.finished {
			// A remote process belongs to the runner and runs on: the
			// record stays unfinished for the next server to adopt, and
			// its supervisor here leaves (see supervise; it may have left
			// already, closing m.closed woke it). That holds too for a
			// process still being started (proc not yet set): a stop
			// request left here would reach it once its start returns.
			// A finished entry has nothing left to stop.
			e.mu.Unlock()
			continue
		}
		if e.stopReq == "" {
			// A job already being stopped or cancelled keeps that outcome.
			e.stopReq, e.shutdown = runner.Stopped, true
		}
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

// supervisedElsewhere reports whether j is supervised by another replica
// that is still alive: it is then that replica's to finish.
func (m *Manager) supervisedElsewhere(ctx context.Context, j Job) (bool, error) {
	if j.Replica == "" || j.Replica == m.replica || m.alive == nil {
		return false, nil
	}
	return m.alive(ctx, j.Replica)
}
