// Package retention purges what the retention policy of config.toml's
// [retention] table says is old enough (decision 0087): closed Workflow
// Sessions' events, job output, Action Audit events and, once wired,
// evidence payloads. Each store purges in short transactions of at most
// [BatchSize] items, so a purge never holds a writer for long; a purge
// interrupted (kill -9) leaves every committed batch consistent and the
// next pass finishes it. The package knows no store: the composition root
// hands it [Target]s.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// BatchSize is the most items one purge transaction removes.
	BatchSize = 500
	// Interval is how long the background purger waits between passes.
	Interval = 10 * time.Minute
	// MaxDays is the longest retention a policy may name (about a
	// century; a day count beyond it would overflow a time.Duration
	// long before it meant anything).
	MaxDays = 36500
	// MaxRuns is how many recent runs [Purger.Runs] reports.
	MaxRuns = 16
	// MaxBatchesPerRun bounds one run of one target; a run that reaches
	// it stops there (Run.Incomplete) and the next pass goes on.
	MaxBatchesPerRun = 10000
)

// Count is what a purge removed or, in a plan, would remove.
type Count struct {
	// Items are the events, outputs or records removed.
	Items int64 `json:"items"`
	// Owners are the sessions or jobs they belonged to (a purge of one
	// owner in several batches counts it once per batch).
	Owners int64 `json:"owners"`
	// Bytes, when the store knows it, is how much was freed.
	Bytes int64 `json:"bytes,omitempty"`
	// Skipped counts the items the policy covers that this process
	// cannot purge (job output on another replica's disk): reported, not
	// removed. A store reports them in a plan and in the purge that
	// removed nothing (the end of a run), which the run keeps.
	Skipped int64 `json:"skipped,omitempty"`
}

// IsZero reports whether c removed nothing (whatever it skipped).
func (c Count) IsZero() bool { return c.Items == 0 && c.Owners == 0 && c.Bytes == 0 }

// add returns c plus what d removed.
func (c Count) add(d Count) Count {
	return Count{Items: c.Items + d.Items, Owners: c.Owners + d.Owners, Bytes: c.Bytes + d.Bytes, Skipped: c.Skipped}
}

// Store is a purgeable store.
type Store interface {
	// Purge removes, in one short transaction, at most batch items older
	// than cutoff, and returns what it removed: zero when nothing is
	// left. An error means nothing changed.
	Purge(ctx context.Context, cutoff time.Time, batch int) (Count, error)
	// Pending is what Purge would remove, batch after batch, until it
	// returned zero. It changes nothing.
	Pending(ctx context.Context, cutoff time.Time) (Count, error)
}

// Funcs is a [Store] made of two functions (an adapter of a domain
// store's purge methods).
type Funcs struct {
	PurgeFunc   func(ctx context.Context, cutoff time.Time, batch int) (Count, error)
	PendingFunc func(ctx context.Context, cutoff time.Time) (Count, error)
}

// Purge implements Store.
func (f Funcs) Purge(ctx context.Context, cutoff time.Time, batch int) (Count, error) {
	return f.PurgeFunc(ctx, cutoff, batch)
}

// Pending implements Store.
func (f Funcs) Pending(ctx context.Context, cutoff time.Time) (Count, error) {
	return f.PendingFunc(ctx, cutoff)
}

// Target is one store under one policy.
type Target struct {
	// Store names the store ("workflow", "audit", "jobs", "evidence").
	Store string
	// Policy is the [retention] key that set Age.
	Policy string
	// Age is how old an item must be to go.
	Age time.Duration
	// Purger is the store.
	Purger Store
}

// Days is n days as a duration; n must be 1 to MaxDays.
func Days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// ValidDays checks a policy's day count.
func ValidDays(n int) error {
	if n < 1 || n > MaxDays {
		return fmt.Errorf("must be a whole number of days, 1-%d (leave it unset to keep forever)", MaxDays)
	}
	return nil
}

// ErrNoPolicy is returned by a pass when no target is configured.
var ErrNoPolicy = errors.New("retention: no [retention] policy is set: everything is kept")
