package windowdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/sqlitedb/sqlitetest"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/storetest"
	"github.com/webcodex/webcodex/internal/window/windowdb"
)

func open(t *testing.T) *windowdb.Store {
	t.Helper()
	st, err := windowdb.Open(context.Background(), filepath.Join(t.TempDir(), windowdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return open(t) })
}

// TestTouchAddsNoFsync: activity updates commit lazily (no fsync of their
// own), a peer message durably.
func TestTouchAddsNoFsync(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	total0, lazy0 := st.Commits()
	now := time.Now()
	pr := window.Prune{ActivityBefore: now.Add(-time.Hour), MessagesBefore: now.Add(-time.Hour), MaxRows: 8, MaxMessagesEach: 8}
	for i, at := range []time.Time{now, now.Add(-time.Minute)} {
		if err := st.Touch(ctx, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_x", Project: "agent:local:a", At: at}, pr, nil); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	total, lazy := st.Commits()
	if total == total0 || total-total0 != lazy-lazy0 {
		t.Fatalf("activity commits: %d total, %d lazy; every one must be lazy", total-total0, lazy-lazy0)
	}
	if err := st.PostMessage(ctx, window.Message{ID: "wc_msg_1", Principal: "p", ToWindow: "w", FromWindow: "v", Body: "b", Priority: window.PriorityNormal, CreatedAt: now}, pr); err != nil {
		t.Fatal(err)
	}
	if total2, lazy2 := st.Commits(); total2 != total+1 || lazy2 != lazy {
		t.Fatalf("a peer message must commit durably: %d→%d commits, %d→%d lazy", total, total2, lazy, lazy2)
	}
}

// TestLastActiveUsesAnIndex: the stale assignment diagnostic's lookup by
// window hash alone is an index search, not a scan of every principal's
// activity.
func TestLastActiveUsesAnIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), windowdb.FileName)
	st, err := windowdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p := sqlitetest.Plan(t, db, `SELECT max(last_at_ms) FROM window_activity WHERE window = ?`, "w"); !strings.Contains(p, "USING COVERING INDEX window_activity_window") {
		t.Fatalf("LastActive's plan: %s", p)
	}
}
