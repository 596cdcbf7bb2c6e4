package storetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
)

// purgeOutput: OutputExpired returns only terminal, unpurged jobs created
// before the cutoff, oldest first, at most limit, from a cursor;
// PurgeOutput removes the files of those that also finished before it,
// marks their records, and a second purge finds nothing. Another live
// replica's job is left to it and counted.
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
		return withOutput(t, s, dir, j, output)
	}
	oldA := mk(base, base.Add(time.Hour), jobs.Succeeded, "", "hello")
	oldB := mk(base.Add(time.Minute), base.Add(2*time.Hour), jobs.Failed, "", "bye!!")
	spans := mk(base.Add(9*time.Hour), base.Add(11*time.Hour), jobs.Succeeded, "", "late")
	running := mk(base, time.Time{}, jobs.Running, "", "live")
	other := mk(base, base.Add(time.Hour), jobs.Succeeded, "replica-2", "theirs")
	young := mk(base.Add(11*time.Hour), base.Add(12*time.Hour), jobs.Succeeded, "", "new")

	got, err := s.OutputExpired(ctx, cutoff, jobs.OutputCursor{}, 10)
	if err != nil || len(got) != 4 || got[0].ID != min(oldA.ID, other.ID) || got[1].ID != max(oldA.ID, other.ID) || got[2].ID != oldB.ID || got[3].ID != spans.ID {
		t.Fatalf("expired = %v, %v; want oldA and other (by id), oldB, spans", ids(got), err)
	}
	if next, err := s.OutputExpired(ctx, cutoff, jobs.OutputCursor{CreatedAt: got[1].CreatedAt, ID: got[1].ID}, 1); err != nil || len(next) != 1 || next[0].ID != oldB.ID {
		t.Fatalf("limit 1 after the second: %v, %v", ids(next), err)
	}
	reach := jobs.OutputReach{Dir: dir, Alive: func(_ context.Context, id string) (bool, error) { return id == "replica-2", nil }}
	if p, err := jobs.PendingOutput(ctx, s, reach, cutoff); err != nil || p != (jobs.OutputPurge{Jobs: 2, Bytes: 10, Elsewhere: 1}) {
		t.Fatalf("pending = %+v, %v; want 2 jobs, 10 bytes, 1 elsewhere", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, reach, cutoff, 1); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("first batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, reach, cutoff, 10); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("second batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutput(ctx, s, reach, cutoff, 10); err != nil || p != (jobs.OutputPurge{Elsewhere: 1}) {
		t.Fatalf("third batch = %+v, %v; want nothing removed, 1 elsewhere", p, err)
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
	if p, err := jobs.PendingOutputOverBytes(ctx, s, jobs.OutputReach{Dir: dir}, 8, now); err != nil || p != (jobs.OutputPurge{Jobs: 2, Bytes: 10}) {
		t.Fatalf("pending = %+v, %v; want p's 2 oldest", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, jobs.OutputReach{Dir: dir}, 8, now, 1); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("first batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, jobs.OutputReach{Dir: dir}, 8, now, 10); err != nil || p != (jobs.OutputPurge{Jobs: 1, Bytes: 5}) {
		t.Fatalf("second batch = %+v, %v", p, err)
	}
	if p, err := jobs.PurgeOutputOverBytes(ctx, s, jobs.OutputReach{Dir: dir}, 8, now, 10); err != nil || p != (jobs.OutputPurge{}) {
		t.Fatalf("third batch = %+v, %v; want nothing", p, err)
	}
	for i, want := range []bool{true, true, false, false} {
		r, err := s.Get(ctx, made[i].ID)
		if err != nil || r.OutputPurged != want {
			t.Fatalf("job %d (%s): output_purged %v, %v; want %v", i, r.Project, r.OutputPurged, err, want)
		}
	}
}

// purgeOutputAcrossReplicas (decision 0090): a replica purges its own
// jobs' output, and a gone replica's whose files are in its jobs
// directory (a restart gave the same data directory a new replica id) or
// that kept none (run inline, or wrote nothing); a live replica's jobs
// and a gone replica's files on another disk are counted, never marked,
// and never hide the jobs after them. An offline gc (no replica id)
// reaches the same.
func purgeOutputAcrossReplicas(t *testing.T, s jobs.Store, base time.Time) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := func(i int, replica, output string, background bool, stored int64) jobs.Job {
		t.Helper()
		j := job(base.Add(time.Duration(i)*time.Minute), jobs.Succeeded)
		j.Replica, j.Background, j.StdoutBytes = replica, background, stored
		j.StartedAt, j.FinishedAt = j.CreatedAt, j.CreatedAt.Add(time.Second)
		return withOutput(t, s, dir, j, output)
	}
	// The jobs left come first: a batch of one must reach past them.
	live := mk(0, "live", "", true, 9)
	away := mk(1, "gone", "", true, 9)
	restarted := mk(2, "gone", "12345", true, 5)
	inline := mk(3, "gone", "", false, 7)
	mine := mk(4, "me", "123", true, 3)
	alive := func(_ context.Context, id string) (bool, error) { return id == "live" || id == "me", nil }
	cutoff := base.Add(time.Hour)
	// Offline, "me" is another live replica.
	for replica, want := range map[string]jobs.OutputPurge{"me": {Jobs: 3, Bytes: 8, Elsewhere: 1, Unreachable: 1}, "": {Jobs: 2, Bytes: 5, Elsewhere: 2, Unreachable: 1}} {
		reach := jobs.OutputReach{Dir: dir, Replica: replica, Alive: alive}
		if p, err := jobs.PendingOutput(ctx, s, reach, cutoff); err != nil || p != want {
			t.Fatalf("replica %q: pending = %+v, %v; want %+v", replica, p, err, want)
		}
	}
	reach := jobs.OutputReach{Dir: dir, Replica: "me", Alive: alive}
	for i, want := range []jobs.OutputPurge{{Jobs: 1, Bytes: 5}, {Jobs: 1}, {Jobs: 1, Bytes: 3}, {Elsewhere: 1, Unreachable: 1}} {
		if p, err := jobs.PurgeOutput(ctx, s, reach, cutoff, 1); err != nil || p != want {
			t.Fatalf("batch %d = %+v, %v; want %+v", i, p, err, want)
		}
	}
	for _, c := range []struct {
		j      jobs.Job
		purged bool
	}{{live, false}, {away, false}, {restarted, true}, {inline, true}, {mine, true}} {
		if r, err := s.Get(ctx, c.j.ID); err != nil || r.OutputPurged != c.purged {
			t.Fatalf("%s of %s: output_purged %v, %v; want %v", c.j.ID, c.j.Replica, r.OutputPurged, err, c.purged)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, restarted.ID)); !os.IsNotExist(err) {
		t.Fatalf("the gone replica's output here is left: %v", err)
	}
	// An offline gc (no replica) finds the same two left and changes
	// nothing.
	if p, err := jobs.PurgeOutput(ctx, s, jobs.OutputReach{Dir: dir, Alive: alive}, cutoff, 10); err != nil || p != (jobs.OutputPurge{Elsewhere: 1, Unreachable: 1}) {
		t.Fatalf("offline purge = %+v, %v", p, err)
	}
}

// purgeOutputPastAPage: more than jobs.OutputScanPage jobs left to
// another replica do not hide this replica's job after them.
func purgeOutputPastAPage(t *testing.T, s jobs.Store, base time.Time) {
	ctx := context.Background()
	var last jobs.Job
	for i := range jobs.OutputScanPage + 2 {
		last = job(base.Add(time.Duration(i)*time.Second), jobs.Succeeded)
		last.Replica, last.StartedAt, last.FinishedAt = "live", last.CreatedAt, last.CreatedAt
		if i == jobs.OutputScanPage+1 {
			last.Replica = "me"
		}
		if err := s.Create(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	reach := jobs.OutputReach{Dir: t.TempDir(), Replica: "me", Alive: func(context.Context, string) (bool, error) { return true, nil }}
	if p, err := jobs.PurgeOutput(ctx, s, reach, base.Add(time.Hour), 1); err != nil || p != (jobs.OutputPurge{Jobs: 1}) {
		t.Fatalf("purge = %+v, %v; want this replica's job", p, err)
	}
	if r, err := s.Get(ctx, last.ID); err != nil || !r.OutputPurged {
		t.Fatalf("the job after a page of others: output_purged %v, %v", r.OutputPurged, err)
	}
}

// withOutput stores j and, unless output is empty, writes it as j's stdout
// file under dir.
func withOutput(t *testing.T, s jobs.Store, dir string, j jobs.Job, output string) jobs.Job {
	t.Helper()
	if err := s.Create(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if output != "" {
		os.MkdirAll(filepath.Join(dir, j.ID), 0o700)
		os.WriteFile(filepath.Join(dir, j.ID, "stdout"), []byte(output), 0o600)
	}
	return j
}

func ids(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}
