package jobspg_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/jobs/storetest"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobs.Store {
		s, err := jobspg.Open(context.Background(), pgtest.Open(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestUpdateLocksTheRow: while one replica's Update judges a job, another
// replica's Update of the same job waits for it (the row is locked) and
// then sees its terminal state: the first terminal write wins across
// replicas. Without the lock the second would judge the stale running
// state and overwrite the first.
func TestUpdateLocksTheRow(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	a, err := jobspg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	b, err := jobspg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	j := jobs.Job{ID: jobs.NewID(), Project: "agent:local:p", Principal: "fp", Tool: "run_job", Program: "sh",
		State: jobs.Running, Expectation: jobs.ExpectSuccess, CreatedAt: time.Unix(1_700_000_000, 0).UTC(), Background: true}
	if err := a.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	finish := func(st jobs.State, inside chan<- struct{}, release <-chan struct{}) func(*jobs.Job) error {
		return func(g *jobs.Job) error {
			if inside != nil {
				close(inside)
				<-release
			}
			if g.State.Terminal() {
				return jobs.ErrUnchanged
			}
			g.State = st
			return nil
		}
	}
	inside, release := make(chan struct{}), make(chan struct{})
	// A failing test must still let the first Update end, or closing the
	// pool would wait for its connection forever.
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	first := make(chan error, 1)
	go func() {
		_, err := a.Update(ctx, j.ID, finish(jobs.Succeeded, inside, release))
		first <- err
	}()
	<-inside
	second := make(chan error, 1)
	go func() {
		_, err := b.Update(ctx, j.ID, finish(jobs.Lost, nil, nil))
		second <- err
	}()
	// The second Update must be waiting on the row lock before the first
	// may finish: watch the database until a backend waits for a lock.
	for {
		var waiting int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-second:
			t.Fatalf("the second Update finished (%v) while the first still held the job", err)
		default:
		}
	}
	letGo()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, jobs.ErrUnchanged) {
		t.Fatalf("the second terminal write: %v, want ErrUnchanged", err)
	}
	if got, err := b.Get(ctx, j.ID); err != nil || got.State != jobs.Succeeded {
		t.Fatalf("stored %+v %v", got, err)
	}
}
