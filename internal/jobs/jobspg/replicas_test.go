package jobspg_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/runner"
)

// TestRecoverLeavesALiveReplicasJobs: two replicas on one database. A job
// replica A supervises is not marked lost when replica B starts (Recover)
// while A is alive; once A is gone, B's Recover marks it lost, reason
// server_restart, and A's late supervisor does not overwrite that.
func TestRecoverLeavesALiveReplicasJobs(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	replica := func() (*pgdb.DB, *pgdb.Replica, *jobs.Manager) {
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
			Replica: r.ID(), Alive: db.Alive})
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
	_, ra, ma := replica()
	j, err := ma.Start(ctx, jobs.StartSpec{Project: "agent:local:t", Principal: "fp-owner", Tool: "run_job", Cwd: ".", Background: true,
		Run: runner.Spec{Argv: []string{"sleep", "60"}, Dir: t.TempDir(), Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Replica != ra.ID() {
		t.Fatalf("job replica = %q, want %q", j.Replica, ra.ID())
	}
	dbB, _, mb := replica()
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
