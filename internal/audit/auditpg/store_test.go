package auditpg_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

var ctx = context.Background()

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	db := pgtest.Open(t)
	if _, err := auditpg.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := auditpg.Open(ctx, db); err != nil {
		t.Fatalf("opening a migrated database again: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO audit.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := auditpg.Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// TestSchemaIsAuditsOwn: every table of the store is in the schema audit
// and nothing else is created: Action Audit Sessions share no table or
// schema with Workflow Sessions.
func TestSchemaIsAuditsOwn(t *testing.T) {
	db := pgtest.Open(t)
	if _, err := auditpg.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := db.Pool.Query(ctx, `SELECT table_schema || '.' || table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, s)
	}
	want := []string{"audit.action_events", "audit.action_sessions", "audit.schema_migrations", "audit.window_session_relations"}
	if !slices.Equal(tables, want) {
		t.Fatalf("tables %v, want %v", tables, want)
	}
}

// replicas opens two stores over two pools on one new database, as two
// replicas of the server would.
func replicas(t *testing.T) (a, b *auditpg.Store, dbA, dbB *pgdb.DB) {
	t.Helper()
	url := pgtest.URL(t)
	var stores [2]*auditpg.Store
	var dbs [2]*pgdb.DB
	for i := range 2 {
		db, err := pgdb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		if stores[i], err = auditpg.Open(ctx, db); err != nil {
			t.Fatal(err)
		}
		dbs[i] = db
	}
	return stores[0], stores[1], dbs[0], dbs[1]
}

// waitForLockWaiters returns once at least n backends of the database
// wait for a lock; it fails t when done delivers first (what should wait
// finished).
func waitForLockWaiters(t *testing.T, db *pgdb.DB, n int, done <-chan error, what string) {
	t.Helper()
	for {
		var waiting int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("%s finished (%v) instead of waiting for the lock", what, err)
		default:
		}
	}
}

func events(session string, from, n int) []audit.Event {
	var evs []audit.Event
	for i := from; i < from+n; i++ {
		evs = append(evs, audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("e%03d", i), SessionID: session,
			Status: audit.EventSuccess, EndedAt: int64(1_800_000_000 + i), DurationMS: 1}})
	}
	return evs
}

// TestAppendLocksTheSessions: while one replica's append holds a
// session (held mid-transaction: one of its event ids waits on a row the
// test has not committed), another replica's append to that session
// waits for it, and then judges the trim by the count the first left:
// the bound and the counters come out exactly as if the appends ran one
// after the other. Without the session row's lock the second append
// would judge the stale count, finish first and keep 18 events of 16.
func TestAppendLocksTheSessions(t *testing.T) {
	a, b, dbA, _ := replicas(t)
	const maxEvents = 16 // trimmed past 16, to 14
	if err := a.AppendEvents(ctx, events("s", 0, 10), maxEvents, time.Unix(1_800_000_100, 0)); err != nil {
		t.Fatal(err)
	}
	// The blocker holds an uncommitted event "held" of its own session:
	// an append of the same event id waits for it at its insert, after it
	// locked its sessions.
	blocker, err := dbA.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unblock := func() { once.Do(func() { blocker.Rollback(ctx) }) }
	t.Cleanup(unblock) // before the pools close
	if _, err := blocker.Exec(ctx, `INSERT INTO audit.action_sessions (session_id, created_at, updated_at) VALUES ('blocker', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.Exec(ctx, `INSERT INTO audit.action_events (event_id, session_id, started_at, ended_at) VALUES ('held', 'blocker', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		evs := append(events("s", 10, 3), audit.Event{EventView: audit.EventView{EventID: "held", SessionID: "s", Status: audit.EventFailed, EndedAt: 1_800_000_013}})
		first <- a.AppendEvents(ctx, evs, maxEvents, time.Unix(1_800_000_100, 0))
	}()
	waitForLockWaiters(t, dbA, 1, first, "the first append")
	second := make(chan error, 1)
	go func() { second <- b.AppendEvents(ctx, events("s", 13, 4), maxEvents, time.Unix(1_800_000_200, 0)) }()
	waitForLockWaiters(t, dbA, 2, second, "the second append, while the first held the session,")
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	want := append(ids(events("s", 4, 9)), "held")
	want = append(want, ids(events("s", 13, 4))...)
	sess, evs, err := a.Session(ctx, "s", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(evs); !slices.Equal(got, want) {
		t.Fatalf("the session holds %v, want %v", got, want)
	}
	if sess.TotalActions != 18 || sess.SuccessCount != 17 || sess.FailedCount != 1 || sess.TotalDurationMS != 17 || sess.UpdatedAt != 1_800_000_200 {
		t.Fatalf("counters %+v", sess)
	}
	var retained int64
	if err := dbA.Pool.QueryRow(ctx, `SELECT retained_events FROM audit.action_sessions WHERE session_id = 's'`).Scan(&retained); err != nil || retained != 14 {
		t.Fatalf("retained_events %d (%v), want 14", retained, err)
	}
}

func ids(evs []audit.Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.EventID)
	}
	return out
}

// TestResolveLocksThePrincipal: while one replica's Resolve is creating
// a principal's session (held in NewID, inside its transaction), another
// replica's Resolve of the same principal and id waits for it and then
// finds that session: one session, never two. Without the advisory lock
// the second would find none, create its own and finish first. Both for
// idle reuse and for an explicit id another principal's session has.
func TestResolveLocksThePrincipal(t *testing.T) {
	for _, explicit := range []string{"", "shared"} {
		t.Run(fmt.Sprintf("explicit=%q", explicit), func(t *testing.T) {
			a, b, dbA, _ := replicas(t)
			now := time.Unix(1_800_000_000, 0)
			if explicit != "" {
				// The explicit id is another principal's session.
				if _, err := a.Resolve(ctx, audit.ResolveRequest{Principal: "fp-other", Explicit: explicit, Now: now}); err != nil {
					t.Fatal(err)
				}
			}
			inside, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			letGo := func() { once.Do(func() { close(release) }) }
			t.Cleanup(letGo)
			type result struct {
				r   audit.Resolved
				err error
			}
			first := make(chan result, 1)
			go func() {
				r, err := a.Resolve(ctx, audit.ResolveRequest{Principal: "fp", Explicit: explicit, Now: now, NewID: func() string {
					close(inside)
					<-release
					return "first"
				}})
				first <- result{r, err}
			}()
			<-inside
			second := make(chan error, 1)
			var got audit.Resolved
			go func() {
				var err error
				got, err = b.Resolve(ctx, audit.ResolveRequest{Principal: "fp", Explicit: explicit, Now: now, NewID: func() string { return "second" }})
				second <- err
			}()
			waitForLockWaiters(t, dbA, 1, second, "the second Resolve, while the first was creating,")
			letGo()
			if r := <-first; r.err != nil || r.r.ID != "first" || !r.r.Created {
				t.Fatalf("the first Resolve: %+v %v", r.r, r.err)
			}
			if err := <-second; err != nil || got.ID != "first" || got.Created {
				t.Fatalf("the second Resolve: %+v %v, want the first's session", got, err)
			}
			var n int
			if err := dbA.Pool.QueryRow(ctx, `SELECT count(*) FROM audit.action_sessions WHERE principal = 'fp'`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("%d sessions of the principal (%v), want 1", n, err)
			}
		})
	}
}

// TestTextPostgreSQLCannotHold: a NUL byte or invalid UTF-8 in an
// event's text (which PostgreSQL refuses) is stored as U+FFFD, and the
// event is kept rather than lost.
func TestTextPostgreSQLCannotHold(t *testing.T) {
	st, err := auditpg.Open(ctx, pgtest.Open(t))
	if err != nil {
		t.Fatal(err)
	}
	ev := audit.Event{EventView: audit.EventView{EventID: "e", SessionID: "s", Status: audit.EventFailed,
		Endpoint: "/api/x\x00", ErrorSummary: "bad \xff byte and \x00 nul", Summary: map[string]any{"note": "a\x00b"}}}
	if err := st.AppendEvents(ctx, []audit.Event{ev}, 0, time.Unix(1_800_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	_, evs, err := st.Session(ctx, "s", 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if e := evs[0]; e.Endpoint != "/api/x\uFFFD" || e.ErrorSummary != "bad \uFFFD byte and \uFFFD nul" || e.Summary["note"] != "a\x00b" {
		t.Fatalf("stored %q %q %q", e.Endpoint, e.ErrorSummary, e.Summary["note"])
	}
}

// TestResolveAfterAConcurrentCreate: an explicit id that another
// transaction (an append on any replica, which takes no resolve lock) is
// creating while Resolve creates it is looked up again once that commits:
// here it is the session of no principal, so the caller gets a session
// of its own for the id, never an error and never the other's session.
func TestResolveAfterAConcurrentCreate(t *testing.T) {
	db := pgtest.Open(t)
	st, err := auditpg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	creator, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { creator.Rollback(ctx) })
	if _, err := creator.Exec(ctx, `INSERT INTO audit.action_sessions (session_id, created_at, updated_at) VALUES ('race', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	var got audit.Resolved
	finished := make(chan error, 1)
	go func() {
		var err error
		got, err = st.Resolve(ctx, audit.ResolveRequest{Principal: "fp", Explicit: "race", Now: time.Unix(1_800_000_000, 0),
			NewID: func() string { return "own" }})
		finished <- err
	}()
	waitForLockWaiters(t, db, 1, finished, "Resolve, while the id was being created elsewhere,")
	if err := creator.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil || got.ID != "own" || !got.Created {
		t.Fatalf("Resolve: %+v %v, want its own new session", got, err)
	}
	var requested string
	if err := db.Pool.QueryRow(ctx, `SELECT requested_id FROM audit.action_sessions WHERE session_id = 'own' AND principal = 'fp'`).Scan(&requested); err != nil || requested != "race" {
		t.Fatalf("the caller's session remembers %q (%v), want race", requested, err)
	}
}
