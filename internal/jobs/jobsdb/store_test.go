package jobsdb_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/jobs/storetest"
)

func job(at time.Time, st jobs.State) jobs.Job {
	return jobs.Job{ID: jobs.NewID(), Project: "agent:local:p", Principal: "fp", Tool: "run_job", Program: "sh",
		State: st, Expectation: jobs.ExpectSuccess, CreatedAt: at, Background: true}
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobs.Store {
		s, err := jobsdb.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestStore also shows the records durable across a reopen of the file.
func TestStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := jobsdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0).UTC()
	a := job(base, jobs.Running)
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, a); failure.KindOf(err) != failure.Conflict {
		t.Fatalf("duplicate create: %v", err)
	}
	bad := a
	bad.ID, bad.State = jobs.NewID(), "sleeping"
	if err := s.Create(ctx, bad); err == nil {
		t.Fatal("an invalid record was stored")
	}
	if _, err := s.Get(ctx, jobs.NewID()); failure.KindOf(err) != failure.JobNotFound {
		t.Fatalf("get unknown: %v", err)
	}
	// The first terminal write wins.
	finish := func(st jobs.State) (jobs.Job, error) {
		return s.Update(ctx, a.ID, func(j *jobs.Job) error {
			if j.State.Terminal() {
				return jobs.ErrUnchanged
			}
			j.State = st
			return nil
		})
	}
	if got, err := finish(jobs.Succeeded); err != nil || got.State != jobs.Succeeded {
		t.Fatalf("finish: %+v %v", got, err)
	}
	if got, err := finish(jobs.Lost); !errors.Is(err, jobs.ErrUnchanged) || got.State != jobs.Succeeded {
		t.Fatalf("second finish: %+v %v", got, err)
	}
	var ids []string
	for i := range 5 {
		j := job(base.Add(time.Duration(i+1)*time.Second), jobs.Failed)
		if i == 4 {
			j.State = jobs.Queued
		}
		if err := s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	un, err := s.Unfinished(ctx)
	if err != nil || len(un) != 1 || un[0].ID != ids[4] {
		t.Fatalf("unfinished %+v %v", un, err)
	}
	// Durable across a reopen.
	s.Close()
	if s, err = jobsdb.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inline := job(base.Add(10*time.Second), jobs.Succeeded)
	inline.Background = false
	if err := s.Create(ctx, inline); err != nil {
		t.Fatal(err)
	}
	// Inline runs are kept apart: they never push background jobs out.
	pruned, err := s.Prune(ctx, 2)
	if err != nil || len(pruned) != 3 || pruned[2] != a.ID {
		t.Fatalf("pruned %v %v", pruned, err)
	}
	if _, err := s.Get(ctx, inline.ID); err != nil {
		t.Fatal(err)
	}
	list, total, err := s.List(ctx, jobs.ListFilter{Project: "agent:local:p", Fingerprint: "fp", Limit: 10, BackgroundOnly: true})
	if err != nil || total != 3 || list[0].ID != ids[4] || list[1].ID != ids[3] || list[2].ID != ids[2] {
		t.Fatalf("list %+v %d %v", list, total, err)
	}
}
