package auditdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// eventIDs are a session's stored event ids, oldest first.
func eventIDs(t *testing.T, st *auditdb.Store, session string) []string {
	t.Helper()
	rows, err := st.DB().Read.QueryContext(ctx, `SELECT event_id FROM action_events WHERE session_id = ? ORDER BY seq`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestRetainedCountIsBackfilled opens a database written before
// retained_events existed, holding more events than the bound, and checks
// that the next append leaves exactly the newest maxEvents.
func TestRetainedCountIsBackfilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	old := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_window.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		old[name] = &fstest.MapFile{Data: b}
	}
	db, err := sqlitedb.Open(ctx, path, old)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO action_sessions (session_id, created_at, updated_at, total_actions) VALUES ('s', 0, 0, 12)`); err != nil {
			return err
		}
		for i := range 12 {
			id := fmt.Sprintf("old%02d", i)
			want = append(want, id)
			if _, err := tx.ExecContext(ctx, `INSERT INTO action_events (event_id, session_id, started_at, ended_at, duration_ms,
			endpoint, operation, action_name, project, status, http_status, error_summary, warning_summary, changed_files_json,
			ids_json, summary_json, request_bytes, response_bytes) VALUES (?, 's', 0, 0, 0, '', '', '', '', 'success', 200, '', '', '[]', '{}', '{}', 0, 0)`, id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err := auditdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.AppendEvents(ctx, []audit.Event{{EventView: audit.EventView{EventID: "new", SessionID: "s", Status: audit.EventSuccess}}}, 5, time.Now()); err != nil {
		t.Fatal(err)
	}
	want = append(want, "new")
	if got := eventIDs(t, st, "s"); !slices.Equal(got, want[len(want)-5:]) {
		t.Fatalf("session holds %v, want %v", got, want[len(want)-5:])
	}
}

// TestTrimJudgedByTheStoredCount: a store counts a session it knows
// without reading its count back, so events another store (another
// process) appended to the same session are not in its view and can
// delay a trim by as many events; but the trim is judged by the stored
// count, so what is kept is always the newest events, retained_events is
// their number, and a trim leaves exactly the bound less the slack; a
// failed append changes none of it.
func TestTrimJudgedByTheStoredCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	one, err := auditdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	other, err := auditdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const maxEvents = 16 // a slack of 2: trimmed past 16, to 14
	var sent []string
	appendTo := func(st *auditdb.Store, n int) error {
		var batch []audit.Event
		for range n {
			id := fmt.Sprintf("e%03d", len(sent)+len(batch))
			batch = append(batch, audit.Event{EventView: audit.EventView{EventID: id, SessionID: "s", Status: audit.EventSuccess}})
		}
		err := st.AppendEvents(ctx, batch, maxEvents, time.Now())
		if err == nil {
			for _, ev := range batch {
				sent = append(sent, ev.EventID)
			}
		}
		return err
	}
	held := func() (ids []string, retained int) {
		if err := one.DB().Read.QueryRowContext(ctx, `SELECT retained_events FROM action_sessions WHERE session_id = 's'`).Scan(&retained); err != nil {
			t.Fatal(err)
		}
		return eventIDs(t, one, "s"), retained
	}
	check := func(step string, want int) {
		t.Helper()
		ids, retained := held()
		if !slices.Equal(ids, sent[len(sent)-want:]) || retained != want {
			t.Fatalf("%s: holds %v (retained_events %d), want the newest %d of %v", step, ids, retained, want, sent)
		}
	}
	for _, step := range []struct {
		name string
		st   *auditdb.Store
		n    int
		want int
	}{
		{"one appends 10", one, 10, 10},
		// The other's first append reads the stored 17: trimmed to 14.
		{"the other appends 7", other, 7, 14},
		{"one appends 1", one, 1, 15},      // one's view: 11
		{"one appends 1 more", one, 1, 16}, // one's view: 12
		{"one appends 4", one, 4, 20},      // one's view: 16, within the bound
		// one's view passes the bound: the stored 21 are trimmed.
		{"one appends 1 past its view's bound", one, 1, 14},
		{"one appends 2", one, 2, 16},
		{"one appends 1 past the bound", one, 1, 14},
	} {
		if err := appendTo(step.st, step.n); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		check(step.name, step.want)
	}
	// A failed append (its second event repeats a stored id) changes
	// nothing, and the next appends are still judged by what is stored.
	dup := []audit.Event{
		{EventView: audit.EventView{EventID: "fresh", SessionID: "s", Status: audit.EventSuccess}},
		{EventView: audit.EventView{EventID: sent[len(sent)-1], SessionID: "s", Status: audit.EventSuccess}},
	}
	if err := one.AppendEvents(ctx, dup, maxEvents, time.Now()); err == nil {
		t.Fatal("an append repeating a stored event id succeeded")
	}
	check("after the failed append", 14)
	for n, want := range []int{15, 16, 14} {
		if err := appendTo(one, 1); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("append %d after the failure", n+1), want)
	}
}
