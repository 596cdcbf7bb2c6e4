package jobsdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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

// TestDurableAcrossReopen: records committed before the file is closed are
// there after it is opened again, unfinished ones included.
func TestDurableAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, err := jobsdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 0).UTC()
	done, queued := job(base, jobs.Succeeded), job(base.Add(time.Second), jobs.Queued)
	for _, j := range []jobs.Job{done, queued} {
		if err := s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = jobsdb.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, done.ID); err != nil || got.State != jobs.Succeeded {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if un, err := s.Unfinished(ctx); err != nil || len(un) != 1 || un[0].ID != queued.ID {
		t.Fatalf("unfinished after reopen: %+v %v", un, err)
	}
}
