package workflow

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/retention"
)

// EventPurger is a [Store] that purges the events of closed sessions by
// the retention policy (decision 0087). A session whose events were
// purged keeps its header: RetentionTruncated is true and EventsPurged
// says how many the policy removed, so it never looks as if it had had
// no events.
type EventPurger interface {
	// PurgeClosedEvents removes, in one short transaction, at most batch
	// of the oldest retained events of sessions closed (and last updated)
	// before cutoff, and marks their headers ([PurgedEvents]), counting
	// the events as Items and the sessions as Owners. A zero result means
	// nothing is left to purge; an error means nothing changed.
	PurgeClosedEvents(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error)
	// CountClosedEvents is what PurgeClosedEvents would remove, batch by
	// batch, until it returned zero; it changes nothing.
	CountClosedEvents(ctx context.Context, cutoff time.Time) (retention.Count, error)
}

// PurgedEvents marks s as having lost n events to the retention policy.
func PurgedEvents(s *Session, n int64) {
	s.RetentionTruncated = true
	s.EventsPurged += n
}
