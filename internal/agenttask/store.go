package agenttask

import (
	"context"
	"time"
)

// Store persists tasks and their attempts. Every mutation is durable when
// it returns nil, and a mutation that returns an error stores nothing.
type Store interface {
	// Create stores t with its dependencies. When t.IdempotencyKey is set
	// and a task of t.Owner and t.Project already holds it, nothing is
	// stored: the stored task is returned with replayed true when its
	// PayloadDigest equals t's, failure.IdempotencyConflict otherwise.
	// Every dependency must be a stored task of t's owner and project,
	// failure.NotFound naming the others otherwise.
	Create(ctx context.Context, t Task) (stored Task, replayed bool, err error)
	// Get returns a task of any owner, or failure.NotFound.
	Get(ctx context.Context, id string) (Task, error)
	// List returns a page of f.Owner's tasks, highest priority then
	// oldest first, and the total that match f.
	List(ctx context.Context, f ListFilter) ([]Task, int, error)
	// Attempt returns an attempt of any owner's task, or
	// failure.NotFound.
	Attempt(ctx context.Context, id string) (Attempt, error)
	// Attempts returns a task's attempts, oldest (lowest fence) first.
	Attempts(ctx context.Context, taskID string) ([]Attempt, error)
	// Mutate holds task taskID exclusively (on PostgreSQL its row is
	// locked FOR UPDATE) while fn judges it: l carries the task, its
	// dependencies' states, its live attempt if any and attempt attemptID
	// ("" for none) if it is the task's. When fn returns changed and no
	// error, the task and every attempt in l.Attempts (fn may change them
	// and append new ones) are stored in the same transaction; otherwise
	// nothing is. It returns l as fn left it; failure.NotFound for an
	// unknown task.
	Mutate(ctx context.Context, taskID, attemptID string, fn func(l *Locked) (changed bool, err error)) (Locked, error)
	// Ready returns up to f.Limit ids of f.Owner's tasks on f.Project that
	// an attempt could start at f.Now (open, or claimed by an attempt whose
	// lease lapsed, and every dependency done), highest priority then
	// oldest first. Each is judged again under Mutate.
	Ready(ctx context.Context, f ReadyFilter) ([]string, error)
	// Lapsed returns up to limit ids of tasks whose live attempt's lease
	// lapsed by now.
	Lapsed(ctx context.Context, now time.Time, limit int) ([]string, error)
	// Feed reads, from one snapshot, the change feed of owner's project:
	// its revision and low watermark, and up to limit tasks whose latest
	// change made a feed revision above after, in the order of those
	// revisions, each with its live attempt if any. Every Create and
	// every Mutate that changes the task row (not one that changes only
	// an attempt, a heartbeat) bumps the feed's revision and stamps the
	// task with it (Task.FeedRevision) in its own transaction.
	Feed(ctx context.Context, owner, project string, after int64, limit int) (FeedPage, error)
	// EventKey is the store's secret key of EventKeyBytes that
	// authenticates events tokens: made once per database and stored in
	// it, the same for every process and across restarts.
	EventKey() []byte
}

// FeedPage is one read of a project's change feed.
type FeedPage struct {
	Revision, LowWatermark int64
	Changes                []Change
}

// Locked is a task under Mutate.
type Locked struct {
	Task Task
	// Deps are the task's dependencies in depends_on order.
	Deps []Dep
	// Attempts holds the task's live attempt (at most one) and the named
	// attempt, each once; appended attempts are inserted.
	Attempts []Attempt
}

// live returns the task's live attempt, or nil.
func (l *Locked) live() *Attempt {
	for i := range l.Attempts {
		if l.Attempts[i].State == Live {
			return &l.Attempts[i]
		}
	}
	return nil
}

// named returns attempt id, or nil when it is not the task's.
func (l *Locked) named(id string) *Attempt {
	for i := range l.Attempts {
		if l.Attempts[i].ID == id {
			return &l.Attempts[i]
		}
	}
	return nil
}

// ListFilter selects a page of tasks.
type ListFilter struct {
	Owner   string
	Project string // "" for every project
	State   State  // "" for every state
	Label   string // "" for every label
	Limit   int
	Offset  int
}

// ReadyFilter selects the tasks StartNextAttempt may start.
type ReadyFilter struct {
	Owner, Project string
	Label          string // "" for every label
	Now            time.Time
	Limit          int
}
