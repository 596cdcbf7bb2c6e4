package agenttaskpg_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskpg"
	"github.com/webcodex/webcodex/internal/agenttask/storetest"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func open(t *testing.T, db *pgdb.DB) *agenttaskpg.Store {
	st, err := agenttaskpg.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestContract runs the suite; the second handle is a second pool on the
// same database, as a second replica holds.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Store, storetest.Store) {
		db, second := pgtest.Replicas(t)
		return open(t, db), open(t, second)
	})
}

// TestMutateLocksTheTask: while one replica's Mutate judges a task,
// another replica's StartAttempt on it waits for the row lock and then
// judges what the first stored (the claim), so it is refused. Without the
// lock both would judge the task open and the second would fail only on
// the live-attempt index, or, with the index gone, start a second live
// attempt.
func TestMutateLocksTheTask(t *testing.T) {
	ctx := context.Background()
	db, second := pgtest.Replicas(t)
	a, b := open(t, db), open(t, second)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	svcA, svcB := agenttask.NewService(a), agenttask.NewService(b)
	tk, _, err := svcA.Create(ctx, agenttask.CreateParams{Owner: "fp", Project: "agent:local:p", Title: "locked"}, now)
	if err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	first := make(chan error, 1)
	go func() {
		// The first replica claims the task by hand, holding its lock
		// until released.
		_, err := a.Mutate(ctx, tk.ID, "", func(l *agenttask.Locked) (bool, error) {
			close(inside)
			<-release
			l.Task.State, l.Task.Fence = agenttask.Claimed, 1
			l.Attempts = append(l.Attempts, agenttask.Attempt{ID: agenttask.NewAttemptID(), TaskID: tk.ID, SessionID: "s1",
				Fence: 1, LeaseUntil: now.Add(time.Minute), State: agenttask.Live, StartedAt: now})
			return true, nil
		})
		first <- err
	}()
	<-inside
	secondDone := make(chan error, 1)
	go func() {
		_, _, err := svcB.StartAttempt(ctx, agenttask.StartParams{Owner: "fp", TaskID: tk.ID, SessionID: "s2"}, now)
		secondDone <- err
	}()
	pgtest.AwaitLockWait(t, db, secondDone, "the second replica's StartAttempt")
	letGo()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	err = <-secondDone
	if !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "claimed") {
		t.Fatalf("the second start: %v, want the conflict of a claimed task", err)
	}
	as, err := svcB.Attempts(ctx, "fp", tk.ID)
	if err != nil || len(as) != 1 || as[0].SessionID != "s1" {
		t.Fatalf("attempts %+v %v", as, err)
	}
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	open(t, db)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO tasks.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := agenttaskpg.Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "tasks") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// TestEventsWakeAcrossReplicas: a wait on one replica (its service's
// notifier is the replica's LISTEN topic) is woken by a task created
// through another replica's service, whose only way to reach it is the
// NOTIFY its transaction sent; and a token issued by one replica is valid
// on the other.
func TestEventsWakeAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	db, second := pgtest.Replicas(t)
	topic := pgtest.Topic(t, db, agenttaskpg.Channel)
	waiter := agenttask.NewService(open(t, db)).WithNotifier(topic)
	writer := agenttask.NewService(open(t, second)) // no notifier of its own
	const owner, project = "fp", "agent:local:p"
	base, err := writer.Events(ctx, agenttask.EventsParams{Owner: owner, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	// The notification itself: a subscription taken before the create
	// is closed by the other replica's NOTIFY alone.
	notified, stop := topic.Subscribe(agenttask.FeedKey(owner, project))
	defer stop()
	waiting, got := make(chan struct{}), make(chan error, 1)
	var e agenttask.Events
	go func() {
		var err error
		e, err = waiter.Events(ctx, agenttask.EventsParams{Owner: owner, Project: project, Token: base.Token,
			Wait: agenttask.MaxEventsWait, BeforeWait: func() error { close(waiting); return nil }})
		got <- err
	}()
	<-waiting
	tk, _, err := writer.Create(ctx, agenttask.CreateParams{Owner: owner, Project: project, Title: "wake the other replica"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	<-notified
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if e.WaitOutcome != agenttask.WaitUpdated || len(e.Tasks) != 1 || e.Tasks[0].ID != tk.ID {
		t.Fatalf("woken with %+v", e)
	}
}
