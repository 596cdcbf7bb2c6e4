package agenttask

import (
	"context"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// lease returns the lease a caller asked for: DefaultLease for 0,
// failure.InvalidArguments outside MinLease-MaxLease.
func lease(d time.Duration) (time.Duration, error) {
	if d == 0 {
		return DefaultLease, nil
	}
	if d < MinLease || d > MaxLease {
		return 0, errorf("a lease must be %s to %s", MinLease, MaxLease)
	}
	return d, nil
}

// lapsed reports whether a's lease has run out at now.
func lapsed(a Attempt, now time.Time) bool { return !a.LeaseUntil.After(now) }

// StartParams start an attempt: SessionID is the exact Workflow Session
// the caller has already authorized; Lease 0 is DefaultLease.
type StartParams struct {
	Owner, TaskID, SessionID string
	Lease                    time.Duration
}

// StartAttempt claims owner's open task for the session at now and returns
// the new live attempt (fence: the task's previous fence plus one) and the
// claimed task. A live attempt whose lease lapsed by now is first made
// expired, in the same transaction. A task with an unexpired live attempt
// is failure.Conflict (detail attempt_id), one whose dependencies are not
// all done failure.Conflict naming them (detail unfinished_dependencies),
// a finished one failure.Conflict (detail state); another owner's
// failure.NotFound. A refusal changes nothing.
func (s *Service) StartAttempt(ctx context.Context, p StartParams, now time.Time) (Attempt, Task, error) {
	if _, err := ParseTaskID(p.TaskID); err != nil {
		return Attempt{}, Task{}, err
	}
	d, err := lease(p.Lease)
	if err != nil {
		return Attempt{}, Task{}, err
	}
	if p.SessionID == "" {
		return Attempt{}, Task{}, errorf("an attempt needs a session")
	}
	var started Attempt
	l, err := s.store.Mutate(ctx, p.TaskID, "", func(l *Locked) (bool, error) {
		t := &l.Task
		if t.Owner != p.Owner {
			return false, UnknownTask(p.TaskID)
		}
		if t.State.Finished() {
			return false, failure.New(failure.Conflict, "agent task %s is already %s", t.ID, t.State).WithDetail("state", string(t.State))
		}
		if a := l.live(); a != nil {
			if !lapsed(*a, now) {
				return false, failure.New(failure.Conflict, "agent task %s is claimed by attempt %s until %s", t.ID, a.ID,
					a.LeaseUntil.Format(time.RFC3339Nano)).WithDetail("attempt_id", a.ID).WithDetail("state", string(t.State))
			}
			end(a, AttemptExpired, now)
		}
		var unfinished []string
		for _, d := range l.Deps {
			if d.State != Done {
				unfinished = append(unfinished, d.ID)
			}
		}
		if len(unfinished) > 0 {
			return false, failure.New(failure.Conflict, "agent task %s is not ready: dependencies %s are not done", t.ID,
				strings.Join(unfinished, ", ")).WithDetail("unfinished_dependencies", unfinished)
		}
		at := stamp(now)
		t.Fence++
		t.State = Claimed
		bump(t, now)
		started = Attempt{ID: NewAttemptID(), TaskID: t.ID, SessionID: p.SessionID, Fence: t.Fence,
			LeaseUntil: at.Add(d), State: Live, StartedAt: at}
		l.Attempts = append(l.Attempts, started)
		return true, nil
	})
	if err != nil {
		return Attempt{}, Task{}, err
	}
	s.changed(l.Task)
	return started, l.Task, nil
}

// NextParams start an attempt on the first ready task of a project.
type NextParams struct {
	Owner, Project, Label string
	SessionID             string
	Lease                 time.Duration
}

// StartNextAttempt starts an attempt on owner's first ready task of the
// project (highest priority, then oldest) carrying Label when set. Found
// is false when no task is ready. A task another caller claims first is
// passed over for the next one.
func (s *Service) StartNextAttempt(ctx context.Context, p NextParams, now time.Time) (Attempt, Task, bool, error) {
	if p.Owner == "" || p.Project == "" {
		return Attempt{}, Task{}, false, errorf("an attempt needs an owner and a project")
	}
	ids, err := s.store.Ready(ctx, ReadyFilter{Owner: p.Owner, Project: p.Project, Label: p.Label, Now: now, Limit: NextScanMax})
	if err != nil {
		return Attempt{}, Task{}, false, err
	}
	for _, id := range ids {
		a, t, err := s.StartAttempt(ctx, StartParams{Owner: p.Owner, TaskID: id, SessionID: p.SessionID, Lease: p.Lease}, now)
		if failure.Is(err, failure.Conflict) {
			continue
		}
		if err != nil {
			return Attempt{}, Task{}, false, err
		}
		return a, t, true, nil
	}
	return Attempt{}, Task{}, false, nil
}

// AttemptParams name an attempt of the caller: the session that started it
// and its fence.
type AttemptParams struct {
	Owner, AttemptID, SessionID string
	Fence                       int64
}

// judge runs fn on the attempt p names under its task's lock, after the
// checks every attempt call shares: another owner's attempt is
// failure.NotFound, another session's failure.SessionAuthorityDenied, a
// fence other than the attempt's a stale-fence refusal.
func (s *Service) judge(ctx context.Context, p AttemptParams, fn func(l *Locked, a *Attempt) (bool, error)) (Locked, Attempt, error) {
	if _, err := ParseAttemptID(p.AttemptID); err != nil {
		return Locked{}, Attempt{}, err
	}
	if p.Fence < 1 {
		return Locked{}, Attempt{}, errorf("fence must be a positive integer")
	}
	found, err := s.store.Attempt(ctx, p.AttemptID)
	if err != nil {
		return Locked{}, Attempt{}, err
	}
	var out Attempt
	l, err := s.store.Mutate(ctx, found.TaskID, p.AttemptID, func(l *Locked) (bool, error) {
		a := l.named(p.AttemptID)
		if a == nil || l.Task.Owner != p.Owner {
			return false, UnknownAttempt(p.AttemptID)
		}
		if a.SessionID != p.SessionID {
			return false, failure.New(failure.SessionAuthorityDenied, "attempt %s belongs to another session", a.ID)
		}
		if p.Fence != a.Fence {
			return false, refused(*a, ReasonStaleFence, "fence %d is not attempt %s's fence", p.Fence, a.ID)
		}
		changed, err := fn(l, a)
		out = *a
		return changed, err
	})
	if err != nil {
		return Locked{}, Attempt{}, err
	}
	return l, out, nil
}

// live refuses an attempt that is not live or whose lease lapsed by now,
// and one a newer attempt fenced out.
func liveAt(l *Locked, a *Attempt, now time.Time) error {
	if a.Fence != l.Task.Fence {
		return refused(*a, ReasonStaleFence, "attempt %s (fence %d) was superseded by fence %d", a.ID, a.Fence, l.Task.Fence)
	}
	if a.State != Live {
		return refused(*a, ReasonNotLive, "attempt %s is %s", a.ID, a.State)
	}
	if lapsed(*a, now) {
		return refused(*a, ReasonLeaseExpired, "attempt %s's lease lapsed at %s", a.ID, a.LeaseUntil.Format(time.RFC3339Nano))
	}
	return nil
}

// Heartbeat extends a live attempt's lease to now + lease (0 for
// DefaultLease). An attempt that is not live, whose lease lapsed, or that
// was fenced out is refused with failure.StalePrecondition (detail reason)
// and nothing changes.
func (s *Service) Heartbeat(ctx context.Context, p AttemptParams, d time.Duration, now time.Time) (Attempt, error) {
	d, err := lease(d)
	if err != nil {
		return Attempt{}, err
	}
	_, a, err := s.judge(ctx, p, func(l *Locked, a *Attempt) (bool, error) {
		if err := liveAt(l, a, now); err != nil {
			return false, err
		}
		a.LeaseUntil = stamp(now).Add(d)
		return true, nil
	})
	return a, err
}

// CompleteParams complete an attempt.
type CompleteParams struct {
	AttemptParams
	Outcome       Outcome
	Summary       string
	CompletionKey string
}

// Complete ends a live attempt with outcome done or failed and sets its
// task to the same state. It is idempotent by completion key: the same key
// and payload on a completed attempt returns the stored completion with
// replayed true, another payload failure.IdempotencyConflict, another key
// failure.AlreadyCompleted. A stale fence, a lapsed lease or an attempt
// that is not live is refused (failure.StalePrecondition, detail reason)
// and nothing changes.
func (s *Service) Complete(ctx context.Context, p CompleteParams, now time.Time) (Attempt, Task, bool, error) {
	if p.Outcome != OutcomeDone && p.Outcome != OutcomeFailed {
		return Attempt{}, Task{}, false, errorf("outcome must be done or failed")
	}
	summary, err := text("summary", p.Summary, 0, SummaryMaxChars)
	if err != nil {
		return Attempt{}, Task{}, false, err
	}
	if err := checkKey("completion_key", p.CompletionKey, true); err != nil {
		return Attempt{}, Task{}, false, err
	}
	payload := digest("webcodex agent task completion v1", struct {
		Outcome Outcome
		Summary string
	}{p.Outcome, p.Summary})
	replayed := false
	l, a, err := s.judge(ctx, p.AttemptParams, func(l *Locked, a *Attempt) (bool, error) {
		replayed = false // fn runs again when the database retries the transaction
		if a.CompletionKey != "" {
			if a.CompletionKey != p.CompletionKey {
				return false, failure.New(failure.AlreadyCompleted, "attempt %s was completed under another completion_key", a.ID).
					WithDetail("attempt_id", a.ID)
			}
			if a.CompletionDigest != payload {
				return false, failure.New(failure.IdempotencyConflict, "completion_key %q of attempt %s was used with another payload", p.CompletionKey, a.ID)
			}
			replayed = true
			return false, nil
		}
		if err := liveAt(l, a, now); err != nil {
			return false, err
		}
		st, ts := AttemptDone, Done
		if p.Outcome == OutcomeFailed {
			st, ts = AttemptFailed, Failed
		}
		end(a, st, now)
		a.Outcome, a.Summary, a.CompletionKey, a.CompletionDigest = p.Outcome, summary, p.CompletionKey, payload
		l.Task.State = ts
		bump(&l.Task, now)
		return true, nil
	})
	if err != nil {
		return Attempt{}, Task{}, false, err
	}
	if !replayed {
		s.changed(l.Task)
	}
	return a, l.Task, replayed, nil
}

// Expire expires every live attempt whose lease lapsed by now (at most
// ExpireBatchMax per call) and reopens its task; it returns the attempts
// it expired.
func (s *Service) Expire(ctx context.Context, now time.Time) ([]Attempt, error) {
	ids, err := s.store.Lapsed(ctx, now, ExpireBatchMax)
	if err != nil {
		return nil, err
	}
	out := []Attempt{}
	for _, id := range ids {
		var expired *Attempt
		l, err := s.store.Mutate(ctx, id, "", func(l *Locked) (bool, error) {
			expired = nil
			a := l.live()
			if a == nil || !lapsed(*a, now) {
				return false, nil // another caller expired, heartbeated or completed it first
			}
			end(a, AttemptExpired, now)
			l.Task.State = Open
			bump(&l.Task, now)
			e := *a
			expired = &e
			return true, nil
		})
		if err != nil {
			return out, err
		}
		if expired != nil {
			s.changed(l.Task)
			out = append(out, *expired)
		}
	}
	return out, nil
}
