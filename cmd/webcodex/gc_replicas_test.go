package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestGCOnADatabasePurgesGoneReplicasOutput (decision 0090): an offline
// `webcodex gc` on a PostgreSQL database, whose data directory a gone
// replica used, purges that replica's expired job output (files, then the
// record's mark); a live replica's job is left to it, and a gone replica's
// job whose files are not here is reported and not marked.
func TestGCOnADatabasePurgesGoneReplicasOutput(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	db, err := pgdb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	live, err := db.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	st, err := jobspg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("[retention]\njob_output_days = 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-40 * 24 * time.Hour)
	mk := func(replica string, here bool) jobs.Job {
		t.Helper()
		j := jobs.Job{ID: jobs.NewID(), Project: "agent:local:demo", Principal: "fp", Tool: "run_job", Program: "sh", State: jobs.Succeeded,
			Expectation: jobs.ExpectSuccess, CreatedAt: then, StartedAt: then, FinishedAt: then, Background: true, Replica: replica, StdoutBytes: 6}
		if err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		if here {
			os.MkdirAll(filepath.Join(data, app.JobsDir, j.ID), 0o700)
			os.WriteFile(filepath.Join(data, app.JobsDir, j.ID, "stdout"), []byte("output"), 0o600)
		}
		return j
	}
	const gone = "00000000deadbeef" // never joined: not alive
	restarted, theirs, away := mk(gone, true), mk(live.ID(), true), mk(gone, false)

	out := mustRun(t, "--data-dir", data, "--database", dbURL, "gc", "--dry-run")
	if !regexp.MustCompile(`(?m)^jobs\s+job_output_days\s+\S+\s+1\s+1\s+2$`).MatchString(out) {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "--database", dbURL, "gc")
	if !regexp.MustCompile(`(?m)^jobs\s+job_output_days\s+\S+\s+1\s+1\s+2\s+1\s*$`).MatchString(out) {
		t.Fatalf("gc:\n%s", out)
	}
	for _, c := range []struct {
		j            jobs.Job
		purged, here bool
	}{{restarted, true, false}, {theirs, false, true}, {away, false, false}} {
		r, err := st.Get(ctx, c.j.ID)
		if err != nil || r.OutputPurged != c.purged {
			t.Fatalf("job of %s: output_purged %v, %v; want %v", c.j.Replica, r.OutputPurged, err, c.purged)
		}
		if _, err := os.Stat(filepath.Join(data, app.JobsDir, c.j.ID)); (err == nil) != c.here {
			t.Fatalf("job of %s: output here %v, want %v", c.j.Replica, err == nil, c.here)
		}
	}
}
