// Package storetest is the contract suite that every [jobs.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
)

func job(at time.Time, st jobs.State) jobs.Job {
	return jobs.Job{ID: jobs.NewID(), Project: "agent:local:p", Principal: "fp", Tool: "run_job", Program: "sh",
		State: st, Expectation: jobs.ExpectSuccess, CreatedAt: at, Background: true}
}

// finish moves a job to st unless it is already terminal (the first
// terminal write wins).
func finish(ctx context.Context, s jobs.Store, id string, st jobs.State) (jobs.Job, error) {
	return s.Update(ctx, id, func(j *jobs.Job) error {
		if j.State.Terminal() {
			return jobs.ErrUnchanged
		}
		j.State = st
		return nil
	})
}

// Run runs the jobs.Store contract against stores returned by open (a new,
// empty store each call, cleaned up by open).
func Run(t *testing.T, open func(t *testing.T) jobs.Store) {
	t.Helper()
	ctx := context.Background()
	base := time.Unix(1_700_000_000, 0).UTC()

	t.Run("CreateGetUpdateListPrune", func(t *testing.T) {
		s := open(t)
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
		if got, err := finish(ctx, s, a.ID, jobs.Succeeded); err != nil || got.State != jobs.Succeeded {
			t.Fatalf("finish: %+v %v", got, err)
		}
		if got, err := finish(ctx, s, a.ID, jobs.Lost); !errors.Is(err, jobs.ErrUnchanged) || got.State != jobs.Succeeded {
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
		if _, total, err := s.List(ctx, jobs.ListFilter{Project: "agent:local:p", Fingerprint: "other", Limit: 10}); err != nil || total != 0 {
			t.Fatalf("another owner's list: %d %v", total, err)
		}
		if list, total, err := s.List(ctx, jobs.ListFilter{AllOwners: true, Active: true}); err != nil || total != 1 || list[0].ID != ids[4] {
			t.Fatalf("active jobs of every owner: %+v %d %v", list, total, err)
		}
	})

	t.Run("ConcurrentTerminalWritesOneWins", func(t *testing.T) {
		s := open(t)
		a := job(base, jobs.Running)
		if err := s.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		states := []jobs.State{jobs.Succeeded, jobs.Failed, jobs.Lost, jobs.Cancelled, jobs.Succeeded, jobs.Failed}
		results := make([]error, len(states))
		var wg sync.WaitGroup
		for i, st := range states {
			wg.Go(func() { _, results[i] = finish(ctx, s, a.ID, st) })
		}
		wg.Wait()
		wins := 0
		for _, err := range results {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, jobs.ErrUnchanged):
				t.Fatalf("a racing finish: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d terminal writes won, want exactly 1", wins)
		}
	})
	t.Run("PurgeOutput", func(t *testing.T) { purgeOutput(t, open(t), base) })
	t.Run("PurgeOutputOverBytes", func(t *testing.T) { purgeOutputOverBytes(t, open(t), base) })
	t.Run("PurgeOutputAcrossReplicas", func(t *testing.T) { purgeOutputAcrossReplicas(t, open(t), base) })
	t.Run("PurgeOutputPastAPage", func(t *testing.T) { purgeOutputPastAPage(t, open(t), base) })
}
