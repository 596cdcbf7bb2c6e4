package storetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
)

// purgeOutput: OutputExpired returns only terminal, unpurged jobs of the
// replica created before the cutoff, oldest first, at most limit;
// PurgeOutput removes the files of those that also finished before it,
// marks their records, and a second purge finds nothing.
func purgeOutput(t *testing.T, s jobs.Store, base time.Time) {
	ctx := context.Background()
	dir := t.TempDir()
	cutoff := base.Add(10 * time.Hour)
	mk := func(created, finished time.Time, st jobs.State, replica string, output string) jobs.Job {
		t.Helper()
		j := job(created, st)
		j.Replica = replica
		if st.Terminal() {
			j.StartedAt, j.FinishedAt = created, finished
		}
		if err := s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		if output != "" {
			os.MkdirAll(filepath.Join(dir, j.ID), 0o700)
			os.WriteFile(filepath.Join(dir, j.ID, "stdout"), []byte(output), 0o600)
		}
		return j
	}
	oldA := mk(base, base.Add(time.Hour), jobs.Succeeded, "", "hello")
	oldB := mk(base.Add(time.Minute), base.Add(2*time.Hour), jobs.Failed, "", "bye!!")
	spans := mk(base.Add(9*time.Hour), base.Add(11*time.Hour), jobs.Succeeded, "", "late")
	running := mk(base, time.Time{}, jobs.Running, "", "live")
	other := mk(base, base.Add(time.Hour), jobs.Succeeded, "replica-2", "theirs")
	young := mk(base.Add(11*time.Hour), base.Add(12*time.Hour), jobs.Succeeded, "", "new")

	got, err := s.OutputExpired(ctx, "", cutoff, 10)
	if err != nil || len(got) != 3 || got[0].ID != oldA.ID || got[1].ID != oldB.ID || got[2].ID != spans.ID {
		t.Fatalf("expired = %v, %v; want oldA, oldB, spans", ids(got), err)
	}
	if got, err := s.OutputExpired(ctx, "", cutoff, 1); err != nil || len(got) != 1 || got[0].ID != oldA.ID {
		t.Fatalf("limit 1: %v, %v", ids(got), err)
	}
	if p, err := jobs.PendingOutput(ctx, s, dir, "", cutoff); err != nil || p != (jobs.OutputPurge{Jobs: 2, Bytes: 10}) {
		t.Fatalf("pending = %+v, %v; want 2 jobs, 10 bytes", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, dir, "", cutoff, 1); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("first batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, dir, "", cutoff, 10); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("second batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, dir, "", cutoff, 10); err != nil || p != (jobs.OutputPurge{}) {
		t.Fatalf("third batch = %+v, %v; want nothing", p, err)
	}
	for _, j := range []jobs.Job{oldA, oldB} {
		r, err := s.Get(ctx, j.ID)
		if err != nil || !r.OutputPurged {
			t.Fatalf("%s: output_purged %v, %v", j.ID, r.OutputPurged, err)
		}
		if _, err := os.Stat(filepath.Join(dir, j.ID)); !os.IsNotExist(err) {
			t.Fatalf("%s: output left: %v", j.ID, err)
		}
	}
	for _, j := range []jobs.Job{spans, running, other, young} {
		r, err := s.Get(ctx, j.ID)
		if err != nil || r.OutputPurged {
			t.Fatalf("%s: output_purged %v, %v; want untouched", j.ID, r.OutputPurged, err)
		}
		if _, err := os.Stat(filepath.Join(dir, j.ID, "stdout")); err != nil {
			t.Fatalf("%s: output removed: %v", j.ID, err)
		}
	}
}

// purgeOutputOverBytes: the oldest outputs of a project over the bound go
// until it is within it; another project within the bound keeps its own.
func purgeOutputOverBytes(t *testing.T, s jobs.Store, base time.Time) {
	ctx := context.Background()
	dir := t.TempDir()
	var made []jobs.Job
	for i, project := range []string{"agent:local:p", "agent:local:p", "agent:local:q", "agent:local:p"} {
		j := job(base.Add(time.Duration(i)*time.Minute), jobs.Succeeded)
		j.Project, j.StartedAt, j.FinishedAt = project, j.CreatedAt, j.CreatedAt.Add(time.Second)
		if err := s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, j.ID), 0o700)
		os.WriteFile(filepath.Join(dir, j.ID, "stdout"), []byte("12345"), 0o600)
		made = append(made, j)
	}
	now := base.Add(time.Hour)
	if p, err := jobs.PendingOutputOverBytes(ctx, s, dir, "", 8, now); err != nil || p != (jobs.OutputPurge{Jobs: 2, Bytes: 10}) {
		t.Fatalf("pending = %+v, %v; want p's 2 oldest", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, dir, "", 8, now, 1); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("first batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, dir, "", 8, now, 10); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("second batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, dir, "", 8, now, 10); err != nil || p != (jobs.OutputPurge{}) {
		t.Fatalf("third batch = %+v, %v; want nothing", p, err)
	}
	for i, want := range []bool{true, true, false, false} {
		r, err := s.Get(ctx, made[i].ID)
		if err != nil || r.OutputPurged != want {
			t.Fatalf("job %d (%s): output_purged %v, %v; want %v", i, r.Project, r.OutputPurged, err, want)
		}
	}
}

func ids(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}
