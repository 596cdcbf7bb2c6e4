package taskrow

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
)

// Store is an agenttask.Store over a driver's statements: the drivers
// differ only in how they open a transaction and name their errors.
type Store struct {
	Dialect Dialect
	// Read is the pool single statements read from.
	Read Querier
	// Snapshot runs fn on one read-only transaction (List's page and total
	// agree); Write runs fn on one durable write transaction. Both return
	// errors already mapped by StoreError.
	Snapshot, Write func(ctx context.Context, fn func(q Querier) error) error
	// StoreError maps a driver error to a stable kind.
	StoreError func(err error) error
	// Key is the events token key (see LoadKey).
	Key []byte
}

var _ agenttask.Store = (*Store)(nil)

// Create implements agenttask.Store.
func (s *Store) Create(ctx context.Context, t agenttask.Task) (agenttask.Task, bool, error) {
	var out agenttask.Task
	var replayed bool
	err := s.Write(ctx, func(q Querier) (err error) {
		out, replayed, err = Create(ctx, q, s.Dialect, t)
		return err
	})
	return out, replayed, err
}

// Get implements agenttask.Store.
func (s *Store) Get(ctx context.Context, id string) (agenttask.Task, error) {
	t, err := Get(ctx, s.Read, s.Dialect, id)
	return t, s.StoreError(err)
}

// List implements agenttask.Store.
func (s *Store) List(ctx context.Context, f agenttask.ListFilter) ([]agenttask.Task, int, error) {
	var out []agenttask.Task
	var total int
	err := s.Snapshot(ctx, func(q Querier) (err error) {
		out, total, err = List(ctx, q, s.Dialect, f)
		return err
	})
	return out, total, err
}

// Attempt implements agenttask.Store.
func (s *Store) Attempt(ctx context.Context, id string) (agenttask.Attempt, error) {
	a, err := Attempt(ctx, s.Read, s.Dialect, id)
	return a, s.StoreError(err)
}

// Attempts implements agenttask.Store.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]agenttask.Attempt, error) {
	as, err := Attempts(ctx, s.Read, s.Dialect, taskID)
	return as, s.StoreError(err)
}

// Mutate implements agenttask.Store in one write transaction.
func (s *Store) Mutate(ctx context.Context, taskID, attemptID string, fn func(l *agenttask.Locked) (bool, error)) (agenttask.Locked, error) {
	var out agenttask.Locked
	err := s.Write(ctx, func(q Querier) (err error) {
		out, err = Mutate(ctx, q, s.Dialect, taskID, attemptID, fn)
		return err
	})
	return out, err
}

// Ready implements agenttask.Store.
func (s *Store) Ready(ctx context.Context, f agenttask.ReadyFilter) ([]string, error) {
	ids, err := Ready(ctx, s.Read, s.Dialect, f)
	return ids, s.StoreError(err)
}

// Lapsed implements agenttask.Store.
func (s *Store) Lapsed(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ids, err := Lapsed(ctx, s.Read, s.Dialect, now, limit)
	return ids, s.StoreError(err)
}

// Feed implements agenttask.Store.
func (s *Store) Feed(ctx context.Context, owner, project string, after int64, limit int) (agenttask.FeedPage, error) {
	var out agenttask.FeedPage
	err := s.Snapshot(ctx, func(q Querier) (err error) {
		out, err = Feed(ctx, q, s.Dialect, owner, project, after, limit)
		return err
	})
	return out, err
}

// EventKey implements agenttask.Store.
func (s *Store) EventKey() []byte { return s.Key }

// SetLowWatermark sets the low watermark of owner's project feed (see
// the function SetLowWatermark).
func (s *Store) SetLowWatermark(ctx context.Context, owner, project string, low int64) error {
	return s.Write(ctx, func(q Querier) error { return SetLowWatermark(ctx, q, s.Dialect, owner, project, low) })
}

// LoadEventKey loads the events token key into s (see LoadKey); a driver calls it
// once after its migrations.
func (s *Store) LoadEventKey(ctx context.Context) error {
	fresh := make([]byte, agenttask.EventKeyBytes)
	rand.Read(fresh)
	return s.Write(ctx, func(q Querier) (err error) {
		s.Key, err = LoadKey(ctx, q, s.Dialect, fresh)
		return err
	})
}

// Raw returns a task's stored rows as text, for tests that prove nothing
// changed.
func (s *Store) Raw(ctx context.Context, id string) (string, error) {
	raw, err := Raw(ctx, s.Read, s.Dialect, id)
	return raw, s.StoreError(err)
}
