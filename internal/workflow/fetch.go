package workflow

import (
	"context"
	"time"
)

// The stale assignment diagnostic (diagnostic only: nothing is reclaimed,
// reassigned or staled by it).
const (
	// AssigneeQuietAfter is how long the window that last fetched an open
	// todo with get_session_assignment must have had no meaningful
	// activity for the diagnostic.
	AssigneeQuietAfter = 10 * time.Minute
	// AssigneeNoneWithin10m is the diagnostic's value of
	// Message.AssigneeRecentActivity.
	AssigneeNoneWithin10m = "none_within_10m"
)

// TodoFetch is the recorded get_session_assignment fetch of an open todo:
// the fetching call's principal-bound ClientWindow hash (never a raw
// value) and when. It is an analysis fact: not part of the todo's
// observable state or its assignment fence, and no claim or lease.
type TodoFetch struct {
	Window string
	At     time.Time
}

// RecordFetch records behind the caller, without making it durable, that
// window fetched open todo messageID of session id now, replacing the
// earlier fetch. A todo that is gone, resolved or not a todo, or an empty
// window, records nothing; the todo's revisions and fence are unchanged.
// A failed write is logged and counted with the attention facts.
func (b *Board) RecordFetch(ctx context.Context, id, messageID, window string) {
	if window == "" {
		return
	}
	at := b.now().UTC()
	err := b.store.UpdateBoardBehind(context.WithoutCancel(ctx), id, func(w BoardWriter) error {
		m, ok, err := w.Message(messageID)
		if err != nil || !ok || m.Kind != MessageTodo || m.Status != MessageOpen {
			return err
		}
		return w.SetFetch(messageID, TodoFetch{Window: window, At: at})
	}, func(err error) {
		if err != nil {
			b.factFailures.Add(1)
			b.log().Warn("assignment fetch not stored", "session", id, "err", err)
		}
	})
	if err != nil {
		b.factFailures.Add(1)
		b.log().Warn("assignment fetch not queued", "session", id, "err", err)
	}
}
