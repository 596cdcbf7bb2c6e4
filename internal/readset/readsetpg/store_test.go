package readsetpg_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetpg"
	"github.com/webcodex/webcodex/internal/readset/storetest"
)

func open(t *testing.T, db *pgdb.DB) *readsetpg.Store {
	st, err := readsetpg.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestContract runs the suite; the second handle is a second pool on the
// same database, as a second replica holds.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (readset.Store, readset.Store) {
		db, second := pgtest.Replicas(t)
		return open(t, db), open(t, second)
	})
}

// TestNoticeReachesAnotherReplicasTracker: a replica's Tracker that knows
// a session has nothing pending reads the store again once another
// replica's notice is signalled on Channel (the NOTIFY its Record sent),
// and delivers it; without that notification it would not.
func TestNoticeReachesAnotherReplicasTracker(t *testing.T) {
	ctx := context.Background()
	db, second := pgtest.Replicas(t)
	topic := pgtest.Topic(t, db, readsetpg.Channel)
	here := readset.NewTracker(open(t, db), slog.New(slog.DiscardHandler))
	defer here.Close()
	here.WatchChanges(func() (<-chan struct{}, func()) { return topic.Subscribe("") })
	there := readset.NewTracker(open(t, second), slog.New(slog.DiscardHandler))
	defer there.Close()

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := func(session string, n int, wrote bool) readset.Observation {
		return readset.Observation{Owner: "fp", Project: "agent:local:p", Session: session, Path: "x.go",
			SHA256: fmt.Sprintf("%064x", n), Wrote: wrote, At: at}
	}
	here.Record([]readset.Observation{o("s1", 1, false)})
	if err := here.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := here.Take(ctx, "s1", "agent:local:p", nil); err != nil || n != nil {
		t.Fatalf("before the change: %+v %v", n, err)
	}
	probes := here.Probes()
	// The notification itself: a subscription taken before the write is
	// closed by the other replica's NOTIFY alone (the Tracker's shares it).
	notified, stop := topic.Subscribe("")
	defer stop()
	there.Record([]readset.Observation{o("s2", 2, true)})
	if err := there.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-notified
	n, err := here.Take(ctx, "s1", "agent:local:p", nil)
	if err != nil || n == nil || len(n.Files) != 1 || n.Files[0].ChangedBy != "s2" || here.Probes() != probes+1 {
		t.Fatalf("after the other replica's notice: %+v %v (probes %d, were %d)", n, err, here.Probes(), probes)
	}
}
