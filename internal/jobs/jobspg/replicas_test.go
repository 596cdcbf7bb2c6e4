package jobspg_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/pgnotify"
	"github.com/webcodex/webcodex/internal/runner"
)

// replicaManager joins a replica to the database at url on a pool of its
// own and returns its job manager (woken by changes when not nil).
func replicaManager(t *testing.T, url string, changes jobs.Notifier) (*pgdb.DB, *pgdb.Replica, *jobs.Manager) {
	t.Helper()
	ctx := context.Background()
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	r, err := db.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := jobspg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.NewManager(jobs.Options{Store: st, Host: &runner.Local{}, Dir: filepath.Join(t.TempDir(), "jobs"),
		Replica: r.ID(), Alive: db.Alive, Changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		m.Close(ctx)
		r.Close()
	})
	return db, r, m
}

// TestRecoverLeavesALiveReplicasJobs: two replicas on one database. A job
// replica A supervises is not marked lost when replica B starts (Recover)
// while A is alive; once A is gone, B's Recover marks it lost, reason
// server_restart, and A's late supervisor does not overwrite that.
func TestRecoverLeavesALiveReplicasJobs(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	_, ra, ma := replicaManager(t, url, nil)
	j, err := ma.Start(ctx, jobs.StartSpec{Project: "agent:local:t", Principal: "fp-owner", Tool: "run_job", Cwd: ".", Background: true,
		Run: runner.Spec{Argv: []string{"sleep", "60"}, Dir: t.TempDir(), Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Replica != ra.ID() {
		t.Fatalf("job replica = %q, want %q", j.Replica, ra.ID())
	}
	dbB, _, mb := replicaManager(t, url, nil)
	if lost, err := mb.Recover(ctx); err != nil || len(lost) != 0 {
		t.Fatalf("B's start marked a live replica's job lost: %+v %v", lost, err)
	}
	// A goes away (its lock is released when its connection closes); B
	// waits for that by taking the lock itself.
	var key int64
	if err := dbB.Pool.QueryRow(ctx, `SELECT lock_key FROM replicas.members WHERE id = $1`, ra.ID()).Scan(&key); err != nil {
		t.Fatal(err)
	}
	ra.Close()
	if _, err := dbB.Pool.Exec(ctx, `SELECT pg_advisory_lock($1), pg_advisory_unlock($1)`, key); err != nil {
		t.Fatal(err)
	}
	lost, err := mb.Recover(ctx)
	if err != nil || len(lost) != 1 || lost[0].ID != j.ID || lost[0].State != jobs.Lost || lost[0].Reason != jobs.ReasonServerRestart {
		t.Fatalf("B's recovery after A left: %+v %v", lost, err)
	}
}

// TestAWaitOnAnotherReplicasJobWakesOnItsNotification: replica B waits
// (Observe and Wait, up to a minute, with no poll: B has a Notifier) on a
// job replica A runs; A stops it, and B's waits return with the job
// terminal, woken by the notification A's state change committed.
func TestAWaitOnAnotherReplicasJobWakesOnItsNotification(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	_, _, ma := replicaManager(t, url, nil)
	dbB, err := pgdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dbB.Close)
	l := pgnotify.Start(ctx, dbB, slog.New(slog.DiscardHandler))
	t.Cleanup(l.Close)
	topic := l.Topic(jobspg.Channel)
	if err := l.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, mb := replicaManager(t, url, topic)

	acc := jobs.Access{Project: "agent:local:t", Fingerprint: "fp-owner"}
	j, err := ma.Start(ctx, jobs.StartSpec{Project: acc.Project, Principal: acc.Fingerprint, Tool: "run_job", Cwd: ".", Background: true,
		Run: runner.Spec{Argv: []string{"sleep", "60"}, Dir: t.TempDir(), Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // under the waits' minute
	defer cancel()
	observed, parked := make(chan error, 1), make(chan struct{})
	go func() {
		obs, woke, err := mb.Observe(wctx, acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: time.Minute, WakeOn: jobs.WakeTerminal,
			BeforeWait: func() error { close(parked); return nil }})
		if err == nil && (woke != jobs.WokeCondition || !obs[0].Job.State.Terminal()) {
			err = fmt.Errorf("observe woke %q with %s", woke, obs[0].Job.State)
		}
		observed <- err
	}()
	waited := make(chan error, 1)
	go func() {
		got, err := mb.Wait(wctx, j.ID, time.Minute)
		if err == nil && !got.State.Terminal() {
			err = fmt.Errorf("wait returned %s", got.State)
		}
		waited <- err
	}()
	<-parked // B's observe waits: only a notification can end it before wctx
	if _, _, err := ma.Stop(ctx, acc, j.ID); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{observed, waited} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}
