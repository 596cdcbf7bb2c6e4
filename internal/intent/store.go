package intent

import (
	"context"
	"time"
)

// Store persists intents and undelivered overlap notices. Every mutation
// is durable when it returns nil, and a mutation that returns an error
// stores nothing.
type Store interface {
	// Declare stores in, replacing in.SessionID's intent, in one
	// transaction that holds in.Owner's intents on in.Project against
	// every other Declare on them (SQLite's one writer; a transaction
	// advisory lock on PostgreSQL). It first deletes their intents that
	// expired by now and every notice older than NoticeRetention, then
	// calls judge with the other sessions' intents of in.Owner on
	// in.Project live at now, oldest first, at most MaxProjectIntents+1.
	// When judge returns no error, the pending notices to or about
	// in.SessionID are deleted (they were judged against the intent being
	// replaced), and in and the notices judge returned are stored (a
	// notice replaces a pending one of the same recipient and other
	// session; a recipient's notices past MaxPendingNotices are not
	// stored); otherwise nothing is.
	Declare(ctx context.Context, in Intent, now time.Time, judge func(others []Intent) ([]StoredNotice, error)) error
	// Get returns session sessionID's stored intent, live or not; ok is
	// false when it has none.
	Get(ctx context.Context, sessionID string) (in Intent, ok bool, err error)
	// List returns owner's intents on project live at now, oldest
	// declared first, at most limit.
	List(ctx context.Context, owner, project string, now time.Time, limit int) ([]Intent, error)
	// Pending reports whether recipient has undelivered notices; it only
	// reads.
	Pending(ctx context.Context, recipient string) (bool, error)
	// Take deletes and returns recipient's notices, oldest first, in one
	// transaction: each notice is returned to exactly one caller.
	Take(ctx context.Context, recipient string) ([]StoredNotice, error)
}
