// Reading: records (Get, List, Wait), output chunks by cursor, the
// validation candidates of a session, and discarding inline output.

package jobs

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

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
//
// Like FinishedValidations it does not wait for a job being finished, so
// an OnFinished hook may call it.
func (m *Manager) ValidationCandidates(ctx context.Context, sessionID string, limit int) ([]Job, error) {
	all, err := m.FinishedValidations(ctx)
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, j := range all {
		if len(out) >= limit {
			break
		}
		if slices.Contains(j.Validation.Sessions, sessionID) {
			out = append(out, j)
		}
	}
	return out, nil
}

// FinishedValidations returns every retained terminal background job, of
// any owner, that carries validation metadata, newest first: what an
// OnFinished hook for validation evidence catches up over at start.
func (m *Manager) FinishedValidations(ctx context.Context) ([]Job, error) {
	all, _, err := m.store.List(ctx, ListFilter{AllOwners: true, BackgroundOnly: true})
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, j := range all {
		if j.State.Terminal() && j.Validation != nil {
			out = append(out, j)
		}
	}
	return out, nil
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
	return m.settled(ctx, j, nil)
}

// settled returns j once its finishing in this process is complete: a
// terminal record whose entry is still live is being finished (its
// OnFinished hook runs), so what a caller is told is terminal already has
// the hook's consequences. Records of other jobs return at once.
func (m *Manager) settled(ctx context.Context, j Job, err error) (Job, error) {
	if err != nil || !j.State.Terminal() {
		return j, err
	}
	if e := m.entry(j.ID); e != nil {
		select {
		case <-e.done:
		case <-ctx.Done():
			return Job{}, ctx.Err()
		}
	}
	return j, nil
}

// Wait returns the job when it is terminal or d has passed, whichever
// comes first (the record as committed).
func (m *Manager) Wait(ctx context.Context, id string, d time.Duration) (Job, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		j, ended, err := m.waitOnce(ctx, id, deadline.C)
		if ended || err != nil {
			return j, err
		}
	}
}

// waitOnce reads job id and, when it is not terminal, waits for a sign
// that it may have changed (its supervisor here ending, a change another
// replica committed, or the poll when there is no Notifier); ended says
// the wait is over: the job is terminal, the deadline passed or ctx
// ended.
func (m *Manager) waitOnce(ctx context.Context, id string, deadline <-chan time.Time) (Job, bool, error) {
	var changed <-chan struct{}
	if m.changes != nil {
		ch, end := m.changes.Subscribe(id) // before the read: no change is missed
		defer end()
		changed = ch
	}
	j, err := m.store.Get(ctx, id)
	if err != nil || j.State.Terminal() {
		j, err = m.settled(ctx, j, err)
		return j, true, err
	}
	var done <-chan struct{}
	if e := m.entry(id); e != nil {
		done = e.done
	}
	var poll <-chan time.Time
	if changed == nil {
		t := time.NewTimer(pollInterval)
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-done:
	case <-changed:
	case <-poll:
	case <-deadline:
		j, err := m.store.Get(ctx, id)
		j, err = m.settled(ctx, j, err)
		return j, true, err
	case <-ctx.Done():
		return Job{}, true, ctx.Err()
	}
	return Job{}, false, nil
}

// List returns acc's jobs in its project, newest first, and how many
// match.
func (m *Manager) List(ctx context.Context, acc Access, f ListFilter) ([]Job, int, error) {
	f.Project, f.Fingerprint = acc.Project, acc.Fingerprint
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	js, n, err := m.store.List(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	for _, j := range js {
		if _, err := m.settled(ctx, j, nil); err != nil {
			return nil, 0, err
		}
	}
	return js, n, nil
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

// chunk reads j's stream s from this server's copy. The output of a job
// another replica supervised is in that replica's data directory: when
// this one has none of it, the chunk is empty, not retained here, and
// names that replica (Chunk.Replica), never an empty stream the job may
// not have had.
func (m *Manager) chunk(j Job, s Stream, cursor *int64, max int) (Chunk, error) {
	path := outputPath(m.dir, j.ID, s)
	c, err := readChunk(path, cursor, max, j.State.Terminal())
	if err != nil {
		return Chunk{}, failure.Wrap(failure.Unavailable, err, "cannot read the job's %s", s)
	}
	if !c.Retained && j.Replica != "" && j.Replica != m.replica {
		c.Replica = j.Replica
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

// SessionCounts are the job counts of one session, proved over the full
// bounded aggregate of its owner's jobs in its project (never a truncated
// page).
type SessionCounts struct {
	// Active counts the owner's queued and running jobs in the project.
	Active int
	// Blocking counts the active jobs run in, or recorded in, the
	// session.
	Blocking int
	// TerminalPending counts the session's terminal validation jobs whose
	// evidence is not yet materialized there (not in markers, the
	// session's job markers).
	TerminalPending int
}

// CountSession returns the job counts of session sessionID, owned by acc,
// whose job markers are markers. Errors: failure.Unavailable when a list
// fails or would be cut short (then no count can be proved).
func (m *Manager) CountSession(ctx context.Context, acc Access, sessionID string, markers []string) (SessionCounts, error) {
	active, total, err := m.List(ctx, acc, ListFilter{Active: true, Limit: MaxListLimit})
	if err != nil || total > len(active) {
		return SessionCounts{}, failure.New(failure.Unavailable, "the active jobs cannot all be listed")
	}
	c := SessionCounts{Active: total}
	for _, j := range active {
		if j.InSession(sessionID) {
			c.Blocking++
		}
	}
	bg, bgTotal, err := m.List(ctx, acc, ListFilter{BackgroundOnly: true, Limit: MaxListLimit})
	if err != nil || bgTotal > len(bg) {
		return SessionCounts{}, failure.New(failure.Unavailable, "the background jobs cannot all be listed")
	}
	for _, j := range bg {
		if j.State.Terminal() && j.Validation != nil && j.InSession(sessionID) && !slices.Contains(markers, j.ID) {
			c.TerminalPending++
		}
	}
	return c, nil
}

// InSession reports whether j was run in, or recorded in, session id.
func (j Job) InSession(id string) bool {
	return j.SessionID == id || (j.Validation != nil && slices.Contains(j.Validation.Sessions, id))
}
