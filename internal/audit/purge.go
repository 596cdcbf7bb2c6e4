package audit

import (
	"context"
	"time"
)

// EventPurge counts what a purge of old Action Audit events removed (or,
// for a count, would remove).
type EventPurge struct {
	// Sessions is how many sessions lost events.
	Sessions int64 `json:"sessions"`
	// Events is how many events were removed.
	Events int64 `json:"events"`
}

// EventPurger is a [Store] that removes Action Audit events by the
// retention policy (decision 0087). A session keeps its row and its
// counters (total_actions counts purged actions too); only the events
// go, and the count of events it holds follows.
type EventPurger interface {
	// PurgeEventsBefore removes, in one short transaction, at most batch
	// of the oldest events that ended before cutoff. A zero result means
	// nothing is left to purge; an error means nothing changed.
	PurgeEventsBefore(ctx context.Context, cutoff time.Time, batch int) (EventPurge, error)
	// CountEventsBefore is what PurgeEventsBefore would remove, batch by
	// batch, until it returned zero; it changes nothing.
	CountEventsBefore(ctx context.Context, cutoff time.Time) (EventPurge, error)
}
