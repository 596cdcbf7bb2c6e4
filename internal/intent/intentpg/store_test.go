package intentpg_test

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/intent/intentpg"
	"github.com/webcodex/webcodex/internal/intent/storetest"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestContract runs the suite; the second handle is a second pool on the
// same database, as a second replica holds.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Store, storetest.Store) {
		db, second := pgtest.Replicas(t)
		a, err := intentpg.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		b, err := intentpg.Open(context.Background(), second)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}

// TestNoticeReachesAnotherReplicasService: a replica's Service that knows
// a session has no notice reads the store again once another replica's
// Declare stored one and its NOTIFY on Channel arrived, and delivers it.
func TestNoticeReachesAnotherReplicasService(t *testing.T) {
	ctx := context.Background()
	db, second := pgtest.Replicas(t)
	topic := pgtest.Topic(t, db, intentpg.Channel)
	open := func(db *pgdb.DB) *intent.Service {
		st, err := intentpg.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return intent.NewService(st, nil)
	}
	here, there := open(db), open(second)
	defer here.Close()
	here.WatchChanges(func() (<-chan struct{}, func()) { return topic.Subscribe("") })
	const owner, project, a, b = "fp", "agent:local:p", "wc_sess_a", "wc_sess_b"
	now := time.Now()
	if _, _, err := here.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: a, Globs: []string{"x/**"}}, now); err != nil {
		t.Fatal(err)
	}
	if n, err := here.Deliver(ctx, a); err != nil || n != nil {
		t.Fatalf("before the overlap: %+v %v", n, err)
	}
	// The notification itself: a subscription taken before the declare
	// is closed by the other replica's NOTIFY alone (the Service's shares
	// it).
	notified, stop := topic.Subscribe("")
	defer stop()
	if _, _, err := there.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: b, Globs: []string{"x/y.go"}}, now); err != nil {
		t.Fatal(err)
	}
	<-notified
	n, err := here.Deliver(ctx, a)
	if err != nil || n == nil || len(n.Overlaps) != 1 || n.Overlaps[0].SessionID != b {
		t.Fatalf("after the other replica's overlap: %+v %v", n, err)
	}
}
