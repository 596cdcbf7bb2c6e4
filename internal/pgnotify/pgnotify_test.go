package pgnotify_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/pgnotify"
	"github.com/webcodex/webcodex/internal/workflow"
)

// A Topic is what the board's observation waits need.
var _ workflow.Notifier = (*pgnotify.Topic)(nil)

const board = "test.board"

// start starts db's listener with a topic of each channel and waits until
// it LISTENs on them.
func start(t testing.TB, db *pgdb.DB, channels ...string) (*pgnotify.Listener, []*pgnotify.Topic) {
	t.Helper()
	l := pgnotify.Start(context.Background(), db, slog.New(slog.NewTextHandler(t.Output(), nil)))
	t.Cleanup(l.Close)
	var ts []*pgnotify.Topic
	for _, c := range channels {
		ts = append(ts, l.Topic(c))
	}
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l, ts
}

// send commits a notification of key on channel through db.
func send(t testing.TB, db *pgdb.DB, channel, key string) {
	t.Helper()
	if err := db.Tx(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
		return pgnotify.Send(ctx, tx, channel, key)
	}); err != nil {
		t.Fatal(err)
	}
}

func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitStatus waits until l's status satisfies ok and returns it.
func waitStatus(l *pgnotify.Listener, ok func(pgnotify.Status) bool) pgnotify.Status {
	for {
		changed := l.Changed()
		if st := l.Status(); ok(st) {
			return st
		}
		<-changed
	}
}

func TestNotifyWakesOnlyAfterCommit(t *testing.T) {
	db := pgtest.Open(t)
	_, ts := start(t, db, board)
	topic := ts[0]
	ctx := context.Background()

	committed, end := topic.Subscribe("committed")
	defer end()
	rolledBack, end := topic.Subscribe("rolled-back")
	defer end()
	fence, end := topic.Subscribe("fence")
	defer end()

	commit, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer commit.Rollback(ctx)
	if err := pgnotify.Send(ctx, commit, board, "committed"); err != nil {
		t.Fatal(err)
	}
	rollback, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgnotify.Send(ctx, rollback, board, "rolled-back"); err != nil {
		t.Fatal(err)
	}
	if err := rollback.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: once the fence, committed
	// after both, has arrived, neither of the others was delivered.
	send(t, db, board, "fence")
	<-fence
	if woken(committed) || woken(rolledBack) {
		t.Fatalf("woken before the commit: committed %v, rolled back %v", woken(committed), woken(rolledBack))
	}
	if err := commit.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-committed
	fence, end = topic.Subscribe("fence")
	defer end()
	send(t, db, board, "fence")
	<-fence
	if woken(rolledBack) {
		t.Fatal("a rolled-back transaction's notification woke its subscriber")
	}
}

func TestKeysAndTheEmptyKey(t *testing.T) {
	db := pgtest.Open(t)
	_, ts := start(t, db, board, "test.jobs")
	topic, jobs := ts[0], ts[1]
	a, end := topic.Subscribe("a")
	defer end()
	b, end := topic.Subscribe("b")
	defer end()
	job, end := jobs.Subscribe("a")
	defer end()

	send(t, db, board, "a")
	<-a
	if woken(b) || woken(job) {
		t.Fatalf("key a woke b (%v) or another channel's a (%v)", woken(b), woken(job))
	}
	a, end = topic.Subscribe("a")
	defer end()
	send(t, db, board, "")
	<-a
	<-b
	if woken(job) {
		t.Fatal("the empty key woke another channel's subscriber")
	}
}

func TestWakeAcrossReplicas(t *testing.T) {
	u := pgtest.URL(t)
	a, b := open(t, u), open(t, u)
	_, ta := start(t, a, board)
	_, tb := start(t, b, board)
	onA, end := ta[0].Subscribe("s1")
	defer end()
	onB, end := tb[0].Subscribe("s1")
	defer end()
	send(t, b, board, "s1")
	<-onA
	<-onB
}

func open(t testing.TB, u string) *pgdb.DB {
	t.Helper()
	db, err := pgdb.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestTopicMadeWhileListening(t *testing.T) {
	db := pgtest.Open(t)
	l, _ := start(t, db, board)
	later := l.Topic("test.later")
	if l.Topic("test.later") != later {
		t.Fatal("a second Topic of one channel is another topic")
	}
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	ch, end := later.Subscribe("k")
	defer end()
	send(t, db, "test.later", "k")
	<-ch
	if st := l.Status(); st.Connects != 1 {
		t.Fatalf("interrupting the wait to LISTEN cost the connection: %+v", st)
	}
}

func TestLocalNotify(t *testing.T) {
	db := pgtest.Open(t)
	_, ts := start(t, db, board)
	a, end := ts[0].Subscribe("a")
	defer end()
	b, end := ts[0].Subscribe("b")
	defer end()
	a2, end := ts[0].Subscribe("a")
	defer end()
	if a != a2 {
		t.Fatal("two subscribers of one key do not share the wake")
	}
	ts[0].Notify("a")
	<-a
	if woken(b) {
		t.Fatal("Notify(a) woke b")
	}
	ts[0].Notify("")
	<-b
}

func TestBounds(t *testing.T) {
	db := pgtest.Open(t)
	long := strings.Repeat("c", pgnotify.MaxChannelBytes)
	_, ts := start(t, db, board, long)
	topic := ts[0]
	atMax := strings.Repeat("k", pgnotify.MaxKeyBytes)
	over := atMax + "k"
	max, end := topic.Subscribe(atMax)
	defer end()
	refused, end := topic.Subscribe(over)
	defer end()
	onLong, end := ts[1].Subscribe("k")
	defer end()
	fence, end := topic.Subscribe("fence")
	defer end()
	err := db.Tx(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
		for _, bad := range []struct{ channel, key string }{
			{board, over}, {board, "nul\x00"}, {board, "\xff"},
			{"", "k"}, {long + "c", "k"},
		} {
			if err := pgnotify.Send(ctx, tx, bad.channel, bad.key); failure.KindOf(err) != failure.InvalidArguments {
				t.Errorf("Send(%.20q, %.20q) = %v, want invalid_arguments", bad.channel, bad.key, err)
			}
		}
		if err := pgnotify.Send(ctx, tx, board, atMax); err != nil {
			return err
		}
		if err := pgnotify.Send(ctx, tx, long, "k"); err != nil {
			return err
		}
		return pgnotify.Send(ctx, tx, board, "fence")
	})
	if err != nil {
		t.Fatal(err)
	}
	<-max
	<-onLong
	<-fence
	if woken(refused) {
		t.Fatalf("a key of %d bytes was sent", len(over))
	}
	var e *failure.Error
	if err := pgnotify.Send(context.Background(), nil, board, over); !errors.As(err, &e) || !strings.Contains(err.Error(), strconv.Itoa(pgnotify.MaxKeyBytes)) {
		t.Fatalf("the refusal does not name the bound: %v", err)
	}
}

// TestDroppedConnection is the fault: the LISTEN connection
// dropped. Waiters are woken at once, then every PollInterval while it
// cannot come back, and by notifications again after it reconnects.
func TestDroppedConnection(t *testing.T) {
	u := pgtest.URL(t)
	writer, ldb := open(t, u), open(t, u)
	l, ts := start(t, ldb, board)
	topic := ts[0]
	ctx := context.Background()

	st := l.Status()
	waiter, end := topic.Subscribe("k")
	defer end()
	terminate(t, writer, st.PID)
	<-waiter
	st = waitStatus(l, func(s pgnotify.Status) bool { return s.Connected && s.Reconnects == 1 })
	if st.Disconnects != 1 || st.Connects != 2 {
		t.Fatalf("after one drop: %+v", st)
	}
	if err := l.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	waiter, end = topic.Subscribe("k")
	defer end()
	send(t, writer, board, "k")
	<-waiter

	// Keep it down: the database refuses new connections and the
	// listener's pool has none left to hand out.
	// (PostgreSQL refuses that from a session of the database itself.)
	admin := open(t, os.Getenv(pgtest.EnvURL))
	name := strings.TrimPrefix(mustParse(t, u).Path, "/")
	exec(t, admin, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`)
	t.Cleanup(func() { exec(t, admin, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`) })
	ldb.Pool.Reset()
	terminate(t, writer, l.Status().PID)
	st = waitStatus(l, func(s pgnotify.Status) bool { return !s.Connected })
	for range 2 {
		waiter, end := topic.Subscribe("k")
		<-waiter
		end()
		now := l.Status()
		if now.Connected || now.PollWakes <= st.PollWakes {
			t.Fatalf("woken while down but not by the poll: before %+v, now %+v", st, now)
		}
		st = now
	}
	exec(t, admin, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`)
	if err := l.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Reconnects != 2 || st.Disconnects != 2 {
		t.Fatalf("after the second reconnection: %+v", st)
	}
	waiter, end = topic.Subscribe("k")
	defer end()
	send(t, writer, board, "k")
	<-waiter
}

func mustParse(t *testing.T, u string) *url.URL {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exec(t *testing.T, db *pgdb.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// terminate ends the backend pid and checks that it was there.
func terminate(t *testing.T, db *pgdb.DB, pid uint32) {
	t.Helper()
	var ok bool
	if err := db.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
	}
}

// TestSilenceIsPinged waits PingAfter for the listener's ping: the wait
// it ends by its deadline does not cost the connection (pgconn closes a
// connection on any read error but a timeout), and notifications still
// arrive after it.
func TestSilenceIsPinged(t *testing.T) {
	db := pgtest.Open(t)
	l, ts := start(t, db, board)
	st := waitStatus(l, func(s pgnotify.Status) bool { return s.Pings > 0 })
	if !st.Connected || st.Connects != 1 || st.Disconnects != 0 {
		t.Fatalf("after a ping: %+v", st)
	}
	waiter, end := ts[0].Subscribe("k")
	defer end()
	send(t, db, board, "k")
	<-waiter
}

func TestProbe(t *testing.T) {
	db := pgtest.Open(t)
	l, _ := start(t, db, board)
	if st := l.Status(); st.Probe != pgnotify.ProbeNotRun {
		t.Fatalf("before a probe: %s", st.Probe)
	}
	if err := l.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Probe != pgnotify.ProbeDelivered {
		t.Fatalf("after a probe on a direct connection: %s", st.Probe)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	db := pgtest.Open(t)
	before := goleak.IgnoreCurrent()
	l, ts := start(t, db, board)
	if err := l.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	waiter, end := ts[0].Subscribe("k")
	defer end()
	l.Close()
	if st := l.Status(); st.Connected || st.PID != 0 {
		t.Fatalf("Close returned before the connection was closed: %+v", st)
	}
	l.Close()
	// goleak waits out a goroutine that has signalled its end but not
	// yet returned.
	goleak.VerifyNone(t, before)
	if err := l.Ready(context.Background()); failure.KindOf(err) != failure.Unavailable {
		t.Fatalf("Ready after Close = %v", err)
	}
	ts[0].Notify("k")
	<-waiter
}
