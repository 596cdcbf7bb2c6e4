package agenttask

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/cursortoken"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Service is the Agent Task API: it validates every input and decides
// every transition inside the store's Mutate, so that the decision is made
// while the task is held. Every call takes the current time from its
// caller, so lease expiry is a function of the now passed in. After every
// committed change of a task it wakes the waiters of the task's owner and
// project through its Notifier (see [Service.Events]).
type Service struct {
	store  Store
	notify Notifier
	tokens cursortoken.Keys
}

// NewService returns a Service over store that wakes no waiter until
// WithNotifier gives it a Notifier (a wait then ends at its timeout, with
// a fresh read). It panics when the store's EventKey is not EventKeyBytes
// long: a store must not serve cursors it cannot authenticate.
func NewService(store Store) *Service {
	return &Service{store: store, notify: noNotifier{}, tokens: cursortoken.New(eventsFormat, store.EventKey())}
}

// WithNotifier makes n the service's Notifier and returns the service.
func (s *Service) WithNotifier(n Notifier) *Service {
	s.notify = n
	return s
}

func stamp(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

// text checks a field's bound and returns it redacted, within the bound.
func text(name, s string, minChars, maxChars int) (string, error) {
	if utf8.RuneCountInString(strings.TrimSpace(s)) < minChars || utf8.RuneCountInString(s) > maxChars {
		return "", errorf("%s must be %d-%d characters", name, minChars, maxChars)
	}
	return redact.Bounded(s, maxChars), nil
}

func checkLabels(labels []string) ([]string, error) {
	if len(labels) > MaxLabels {
		return nil, errorf("at most %d labels", MaxLabels)
	}
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if utf8.RuneCountInString(l) < 1 || utf8.RuneCountInString(l) > LabelMaxChars || strings.TrimSpace(l) != l {
			return nil, errorf("a label must be 1-%d characters without surrounding space", LabelMaxChars)
		}
		if slices.Contains(out, l) {
			return nil, errorf("label %q is repeated", l)
		}
		out = append(out, l)
	}
	return out, nil
}

func checkPriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return errorf("priority must be %d to %d", MinPriority, MaxPriority)
	}
	return nil
}

func checkKey(name, k string, required bool) error {
	if (required && k == "") || utf8.RuneCountInString(k) > IdempotencyKeyMaxChars {
		return errorf("%s must be 1-%d characters", name, IdempotencyKeyMaxChars)
	}
	return nil
}

// CreateParams describe a new task.
type CreateParams struct {
	Owner, Project string
	Title, Body    string
	Labels         []string
	Priority       int
	DependsOn      []string
	IdempotencyKey string
}

// Create stores a new open task at generation 1. With an idempotency key,
// a repeat of the same payload returns the first task and replayed true,
// another payload is failure.IdempotencyConflict. Every dependency must be
// an existing task of the same owner and project (failure.NotFound for an
// unknown one or another owner's, indistinguishably).
func (s *Service) Create(ctx context.Context, p CreateParams, now time.Time) (Task, bool, error) {
	if p.Owner == "" || p.Project == "" {
		return Task{}, false, errorf("an agent task needs an owner and a project")
	}
	title, err := text("title", p.Title, 1, TitleMaxChars)
	if err != nil {
		return Task{}, false, err
	}
	body, err := text("body", p.Body, 0, BodyMaxChars)
	if err != nil {
		return Task{}, false, err
	}
	labels, err := checkLabels(p.Labels)
	if err != nil {
		return Task{}, false, err
	}
	if err := checkPriority(p.Priority); err != nil {
		return Task{}, false, err
	}
	if err := checkKey("idempotency_key", p.IdempotencyKey, false); err != nil {
		return Task{}, false, err
	}
	if len(p.DependsOn) > MaxDependsOn {
		return Task{}, false, errorf("at most %d dependencies", MaxDependsOn)
	}
	deps := []string{}
	for _, d := range p.DependsOn {
		if _, err := ParseTaskID(d); err != nil {
			return Task{}, false, err
		}
		if slices.Contains(deps, d) {
			return Task{}, false, errorf("dependency %s is repeated", d)
		}
		deps = append(deps, d)
	}
	at := stamp(now)
	t := Task{ID: NewTaskID(), Owner: p.Owner, Project: p.Project, Title: title, Body: body, Labels: labels,
		Priority: p.Priority, DependsOn: deps, IdempotencyKey: p.IdempotencyKey, State: Open, Generation: 1,
		CreatedAt: at, UpdatedAt: at}
	t.PayloadDigest = digest("webcodex agent task create v1", struct {
		Title, Body string
		Labels      []string
		Priority    int
		DependsOn   []string
	}{p.Title, p.Body, labels, p.Priority, deps})
	t.Revision = revisionOf(t)
	stored, replayed, err := s.store.Create(ctx, t)
	if err == nil && !replayed {
		s.changed(stored)
	}
	return stored, replayed, err
}

// Get returns owner's task id (failure.NotFound for another owner's).
func (s *Service) Get(ctx context.Context, owner, id string) (Task, error) {
	if _, err := ParseTaskID(id); err != nil {
		return Task{}, err
	}
	t, err := s.store.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if t.Owner != owner {
		return Task{}, UnknownTask(id)
	}
	return t, nil
}

// Attempts returns the attempts of owner's task id, oldest first.
func (s *Service) Attempts(ctx context.Context, owner, id string) ([]Attempt, error) {
	if _, err := s.Get(ctx, owner, id); err != nil {
		return nil, err
	}
	return s.store.Attempts(ctx, id)
}

// List returns a page of f.Owner's tasks (at most ListMax) and the total.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Task, int, error) {
	if f.Owner == "" {
		return nil, 0, errorf("an agent task list needs an owner")
	}
	if f.State != "" && !f.State.Valid() {
		return nil, 0, errorf("state must be open, claimed, done, failed or cancelled")
	}
	if f.Limit < 0 || f.Limit > ListMax || f.Offset < 0 {
		return nil, 0, errorf("limit must be 0-%d and offset non-negative", ListMax)
	}
	if f.Limit == 0 {
		f.Limit = ListDefault
	}
	return s.store.List(ctx, f)
}

// UpdateParams change a task under compare-and-swap; nil fields are kept.
// depends_on and state are not updatable.
type UpdateParams struct {
	Owner, ID        string
	ExpectedRevision string
	Title, Body      *string
	Labels           *[]string
	Priority         *int
}

// Update changes title, body, labels or priority of an open or claimed
// task. A stale expected revision is failure.RevisionConflict (detail
// current_revision) and a finished task (done, failed, cancelled)
// failure.Conflict (detail state); both change nothing; an update that changes nothing keeps the revision.
// Every change of the task (a start, completion, expiry or cancel too)
// moves its revision.
func (s *Service) Update(ctx context.Context, p UpdateParams, now time.Time) (Task, error) {
	if _, err := ParseTaskID(p.ID); err != nil {
		return Task{}, err
	}
	if _, err := ParseRevision(p.ExpectedRevision); err != nil {
		return Task{}, err
	}
	var title, body string
	var labels []string
	var err error
	if p.Title != nil {
		if title, err = text("title", *p.Title, 1, TitleMaxChars); err != nil {
			return Task{}, err
		}
	}
	if p.Body != nil {
		if body, err = text("body", *p.Body, 0, BodyMaxChars); err != nil {
			return Task{}, err
		}
	}
	if p.Labels != nil {
		if labels, err = checkLabels(*p.Labels); err != nil {
			return Task{}, err
		}
	}
	if p.Priority != nil {
		if err := checkPriority(*p.Priority); err != nil {
			return Task{}, err
		}
	}
	var before int64
	l, err := s.store.Mutate(ctx, p.ID, "", func(l *Locked) (bool, error) {
		t := &l.Task
		before = t.Generation
		if t.Owner != p.Owner {
			return false, UnknownTask(p.ID)
		}
		if t.Revision != p.ExpectedRevision {
			return false, failure.New(failure.RevisionConflict, "agent task %s is at revision %s, not %s; read it and retry",
				t.ID, t.Revision, p.ExpectedRevision).WithDetail("current_revision", t.Revision)
		}
		if t.State.Finished() {
			return false, failure.New(failure.Conflict, "agent task %s is %s: a finished task is the record of the work and is not updatable; create a new task",
				t.ID, t.State).WithDetail("state", string(t.State))
		}
		before := *t
		if p.Title != nil {
			t.Title = title
		}
		if p.Body != nil {
			t.Body = body
		}
		if p.Labels != nil {
			t.Labels = labels
		}
		if p.Priority != nil {
			t.Priority = *p.Priority
		}
		if t.Title == before.Title && t.Body == before.Body && slices.Equal(t.Labels, before.Labels) && t.Priority == before.Priority {
			return false, nil
		}
		bump(t, now)
		return true, nil
	})
	if err == nil && l.Task.Generation > before {
		s.changed(l.Task)
	}
	return l.Task, err
}

// bump records a change of t at now: a new generation and revision.
func bump(t *Task, now time.Time) {
	t.Generation++
	t.UpdatedAt = stamp(now)
	t.Revision = revisionOf(*t)
}

// end makes a live attempt st at now.
func end(a *Attempt, st AttemptState, now time.Time) {
	at := stamp(now)
	a.State, a.EndedAt = st, &at
}

// Cancel cancels owner's open or claimed task at now; its live attempt,
// if any, becomes cancelled. A finished task is failure.Conflict and
// nothing changes.
func (s *Service) Cancel(ctx context.Context, owner, id string, now time.Time) (Task, error) {
	if _, err := ParseTaskID(id); err != nil {
		return Task{}, err
	}
	l, err := s.store.Mutate(ctx, id, "", func(l *Locked) (bool, error) {
		t := &l.Task
		if t.Owner != owner {
			return false, UnknownTask(id)
		}
		if t.State.Finished() {
			return false, failure.New(failure.Conflict, "agent task %s is already %s", id, t.State).WithDetail("state", string(t.State))
		}
		if a := l.live(); a != nil {
			end(a, AttemptCancelled, now)
		}
		t.State = Cancelled
		bump(t, now)
		return true, nil
	})
	if err == nil {
		s.changed(l.Task)
	}
	return l.Task, err
}
