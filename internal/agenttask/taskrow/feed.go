package taskrow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/webcodex/webcodex/internal/agenttask"
)

// eventKeyName names the events token key in task_keys.
const eventKeyName = "events_token"

// bumpFeed moves the feed of t's owner and project to its next revision
// and returns it, queuing the feed's wake (d.Notify) in the same
// transaction. On PostgreSQL the upsert locks the feed's row until commit,
// so the changes of one project commit in the order of their revisions
// and a reader never sees a revision before the ones below it.
func bumpFeed(ctx context.Context, q Querier, d Dialect, t agenttask.Task) (int64, error) {
	var rev int64
	if err := q.QueryRow(ctx, d.sql(`INSERT INTO {feed} AS f (owner, project, revision, low_watermark) VALUES (?, ?, 1, 0)
		ON CONFLICT (owner, project) DO UPDATE SET revision = f.revision + 1 RETURNING revision`), t.Owner, t.Project).Scan(&rev); err != nil {
		return 0, fmt.Errorf("agent task feed: %w", err)
	}
	if d.Notify != "" {
		if err := q.Exec(ctx, d.sql(d.Notify), agenttask.FeedKey(t.Owner, t.Project)); err != nil {
			return 0, fmt.Errorf("agent task feed: notify: %w", err)
		}
	}
	return rev, nil
}

// feedState returns the feed's revision and low watermark (0, 0 before
// its first change).
func feedState(ctx context.Context, q Querier, d Dialect, owner, project string) (rev, low int64, err error) {
	err = q.QueryRow(ctx, d.sql(`SELECT revision, low_watermark FROM {feed} WHERE owner = ? AND project = ?`), owner, project).Scan(&rev, &low)
	if errors.Is(err, ErrNoRows) {
		return 0, 0, nil
	}
	return rev, low, err
}

// Feed implements agenttask.Store.Feed on q (one snapshot).
func Feed(ctx context.Context, q Querier, d Dialect, owner, project string, after int64, limit int) (agenttask.FeedPage, error) {
	rev, low, err := feedState(ctx, q, d, owner, project)
	if err != nil {
		return agenttask.FeedPage{}, err
	}
	page := agenttask.FeedPage{Revision: rev, LowWatermark: low, Changes: []agenttask.Change{}}
	if limit <= 0 {
		return page, nil
	}
	cols := "t." + strings.Join(strings.Fields(strings.ReplaceAll(taskColumns, ",", " ")), ", t.")
	err = q.Query(ctx, d.sql(`SELECT `+cols+`, a.id, a.session_id, a.fence, a.lease_until_ms FROM {tasks} t
		LEFT JOIN {attempts} a ON a.task_id = t.id AND a.state = 'live'
		WHERE t.owner = ? AND t.project = ? AND t.feed_revision > ? AND t.feed_revision <= ?
		ORDER BY t.feed_revision LIMIT ?`), []any{owner, project, after, rev, limit}, func(r Row) error {
		var id, session *string
		var fence, lease *int64
		t, err := scanTask(r, &id, &session, &fence, &lease)
		if err != nil {
			return err
		}
		c := agenttask.Change{Task: t}
		if id != nil {
			c.LiveAttempt = &agenttask.LiveAttempt{ID: *id, SessionID: *session, Fence: *fence, LeaseUntil: fromMS(*lease)}
		}
		page.Changes = append(page.Changes, c)
		return nil
	})
	return page, err
}

// SetLowWatermark sets the low watermark of owner's project feed (the
// revision below which changes are lost), creating the feed if needed.
// Retention will call it when tasks are removed; today tests do.
func SetLowWatermark(ctx context.Context, q Querier, d Dialect, owner, project string, low int64) error {
	return q.Exec(ctx, d.sql(`INSERT INTO {feed} AS f (owner, project, revision, low_watermark) VALUES (?, ?, ?, ?)
		ON CONFLICT (owner, project) DO UPDATE SET low_watermark = ?, revision = CASE WHEN f.revision < ? THEN ? ELSE f.revision END`),
		owner, project, low, low, low, low, low)
}

// LoadKey returns the store's events token key from q, a write
// transaction, storing fresh first when it has none: the first process to
// open the database makes the key every other one uses.
func LoadKey(ctx context.Context, q Querier, d Dialect, fresh []byte) ([]byte, error) {
	if err := q.Exec(ctx, d.sql(`INSERT INTO {keys} (name, key) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), eventKeyName, fresh); err != nil {
		return nil, err
	}
	var key []byte
	if err := q.QueryRow(ctx, d.sql(`SELECT key FROM {keys} WHERE name = ?`), eventKeyName).Scan(&key); err != nil {
		return nil, err
	}
	if len(key) != agenttask.EventKeyBytes {
		return nil, fmt.Errorf("agent task store: events token key is %d bytes, want %d", len(key), agenttask.EventKeyBytes)
	}
	return key, nil
}
