package audit

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
)

// EventPurger is a [Store] that removes Action Audit events by the
// retention policy (decision 0087). A session keeps its row and its
// counters (total_actions counts purged actions too); only the events
// go, and the count of events it holds follows.
type EventPurger interface {
	// PurgeEventsBefore removes, in one short transaction, at most batch
	// of the oldest events that ended before cutoff, counting the events
	// as Items and the sessions that lost some as Owners. A zero result
	// means nothing is left to purge; an error means nothing changed.
	PurgeEventsBefore(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error)
	// CountEventsBefore is what PurgeEventsBefore would remove, batch by
	// batch, until it returned zero; it changes nothing.
	CountEventsBefore(ctx context.Context, cutoff time.Time) (retention.Count, error)
}
