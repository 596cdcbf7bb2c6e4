package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// agedDataDir is a data directory with a [retention] policy of 30 days
// for session events and audit events, holding a session closed 40 days
// ago (old), one closed now and one active, and two audit events 40 days
// old and one new.
func agedDataDir(t *testing.T) (data string, old workflow.Session) {
	t.Helper()
	ctx := context.Background()
	data = t.TempDir()
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("[retention]\nsession_events_days = 30\naudit_events_days = 30\njob_output_days = 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-40 * 24 * time.Hour)
	for _, at := range []time.Time{then, time.Now()} {
		st, err := workflowdb.Open(ctx, filepath.Join(data, app.WorkflowDB), func() time.Time { return at })
		if err != nil {
			t.Fatal(err)
		}
		svc := workflow.NewService(st, func() time.Time { return at })
		s, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "old work"})
		if err != nil {
			t.Fatal(err)
		}
		if s, _, err = svc.Close(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if at.Equal(then) {
			old = s
			if _, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "still going"}); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
	}
	au, err := auditdb.Open(ctx, filepath.Join(data, app.AuditDB))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id string, at time.Time) audit.Event {
		return audit.Event{EventView: audit.EventView{EventID: id, SessionID: "as", Status: audit.EventSuccess, StartedAt: at.Unix(), EndedAt: at.Unix()}}
	}
	if err := au.AppendEvents(ctx, []audit.Event{ev("e1", then), ev("e2", then), ev("e3", time.Now())}, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	au.Close()
	jo, err := jobsdb.Open(ctx, filepath.Join(data, app.JobsDB))
	if err != nil {
		t.Fatal(err)
	}
	defer jo.Close()
	for _, at := range []time.Time{then, time.Now()} {
		j := jobs.Job{ID: jobs.NewID(), Project: "agent:local:demo", Principal: "fp", Tool: "run_job", Program: "sh", State: jobs.Succeeded,
			Expectation: jobs.ExpectSuccess, CreatedAt: at, StartedAt: at, FinishedAt: at, Background: true}
		if err := jo.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(data, app.JobsDir, j.ID), 0o700)
		os.WriteFile(filepath.Join(data, app.JobsDir, j.ID, "stdout"), []byte("output"), 0o600)
	}
	return data, old
}

// jobOutputs is how many jobs' output directories the data directory holds.
func jobOutputs(t *testing.T, data string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(data, app.JobsDir))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// held is what the data directory holds: the workflow store's status,
// the header of session id and how many audit events exist.
func held(t *testing.T, data, id string) (workflow.StoreStatus, workflow.Session, int64) {
	t.Helper()
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wf, err := st.Workflow.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.Workflow.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.Audit.(audit.EventPurger).CountEventsBefore(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return wf, sess, n.Items
}

// TestGC: --dry-run prints what the policy would remove, per store and
// policy, and removes nothing; gc removes exactly that, and the purged
// session's header says so; a second dry run finds nothing.
func TestGC(t *testing.T) {
	data, old := agedDataDir(t)
	wfBefore, _, auditBefore := held(t, data, old.ID)

	out := mustRun(t, "--data-dir", data, "gc", "--dry-run")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(fmt.Sprintf(`(?m)^workflow\s+session_events_days\s+\S+\s+%d\s+1\s+0$`, old.EventsObserved)),
		regexp.MustCompile(`(?m)^audit\s+audit_events_days\s+\S+\s+2\s+1\s+0$`),
		regexp.MustCompile(`(?m)^jobs\s+job_output_days\s+\S+\s+1\s+1\s+0$`),
		regexp.MustCompile(`Dry run: nothing was removed`),
	} {
		if !want.MatchString(out) {
			t.Fatalf("gc --dry-run output lacks %v:\n%s", want, out)
		}
	}
	if wf, _, n := held(t, data, old.ID); wf != wfBefore || n != auditBefore || jobOutputs(t, data) != 2 {
		t.Fatalf("the dry run changed the stores: %+v %d events, was %+v %d", wf, n, wfBefore, auditBefore)
	}

	out = mustRun(t, "--data-dir", data, "gc")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^workflow\s+session_events_days\s+\S+\s+%d\s+1\s+0\s+1\s*$`, old.EventsObserved)).MatchString(out) ||
		!regexp.MustCompile(`(?m)^audit\s+audit_events_days\s+\S+\s+2\s+1\s+0\s+1\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^jobs\s+job_output_days\s+\S+\s+1\s+1\s+0\s+1\s*$`).MatchString(out) || jobOutputs(t, data) != 1 {
		t.Fatalf("gc output:\n%s", out)
	}
	wf, purged, n := held(t, data, old.ID)
	if wf.Events != wfBefore.Events-old.EventsObserved || n != auditBefore-2 {
		t.Fatalf("after gc: %+v with %d audit events; want %d fewer session events and 2 fewer audit events", wf, n, old.EventsObserved)
	}
	if purged.EventsPurged != old.EventsObserved || !purged.RetentionTruncated || purged.EventsObserved != old.EventsObserved {
		t.Fatalf("the purged session's header: %+v", purged)
	}
	out = mustRun(t, "--data-dir", data, "gc", "--dry-run")
	if !regexp.MustCompile(`(?m)^workflow\s+session_events_days\s+\S+\s+0\s+0\s+0$`).MatchString(out) {
		t.Fatalf("a dry run after gc:\n%s", out)
	}
}

// TestGCWithoutPolicy: nothing set, nothing removed, and said so.
func TestGCWithoutPolicy(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{{"gc", "--dry-run"}, {"gc"}} {
		out := mustRun(t, append([]string{"--data-dir", data}, args...)...)
		if !strings.Contains(out, "No [retention] policy is set") {
			t.Fatalf("webcodex %v:\n%s", args, out)
		}
	}
}

// TestGCRefusesABadPolicy: a bad value stops gc as it stops serve,
// naming the key, with nothing removed.
func TestGCRefusesABadPolicy(t *testing.T) {
	data, old := agedDataDir(t)
	os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("[retention]\nsession_events_days = 0\n"), 0o600)
	wfBefore, _, auditBefore := held(t, data, old.ID)
	out, err := run(t, "--data-dir", data, "gc")
	if err == nil || !strings.Contains(err.Error(), "retention.session_events_days") {
		t.Fatalf("gc with session_events_days = 0: %v\n%s", err, out)
	}
	if wf, _, n := held(t, data, old.ID); wf != wfBefore || n != auditBefore {
		t.Fatal("a refused gc changed the stores")
	}
}

// TestStatusDisk: each store's size, as DiskUsage measures it, in a
// table with a total.
func TestStatusDisk(t *testing.T) {
	data, _ := agedDataDir(t)
	out := mustRun(t, "--data-dir", data, "status", "--disk")
	sizes, err := app.DiskUsage(data)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range sizes {
		total += s.Bytes
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+.+\s%d\s+%d$`, regexp.QuoteMeta(s.Store), s.Bytes, s.Files)).MatchString(out) {
			t.Fatalf("status --disk lacks %+v:\n%s", s, out)
		}
	}
	for _, want := range []string{"STORE", "workflow", "audit", fmt.Sprintf("total"), "session_events_days=30"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status --disk lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^total\s+.+\s%d\s*$`, total)).MatchString(out) {
		t.Fatalf("status --disk total is not %d:\n%s", total, out)
	}
}

// TestGCPurgesEvidencePayloads: evidence_payload_days purges the payloads
// of signed records older than the policy (storetest's records are from
// 2026-11-30), shown first by a dry run that changes nothing; afterwards
// the journal verifies clean with the records reported purged.
func TestGCPurgesEvidencePayloads(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("[retention]\nevidence_payload_days = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Fill(t, j, 0, 5, "wc_sess_a")
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	j.Close()

	out := mustRun(t, "--data-dir", data, "gc", "--dry-run")
	if !regexp.MustCompile(`(?m)^evidence\s+evidence_payload_days\s+\S+\s+5\s+0\s+0$`).MatchString(out) {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if out := mustRun(t, "--data-dir", data, "evidence", "verify"); strings.Contains(out, "purged") {
		t.Fatalf("the dry run purged:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "gc")
	if !regexp.MustCompile(`(?m)^evidence\s+evidence_payload_days\s+\S+\s+5\s+0\s+0\s+\d+\s*$`).MatchString(out) {
		t.Fatalf("gc:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "evidence", "verify")
	if !regexp.MustCompile(`purged\s+5 record`).MatchString(out) {
		t.Fatalf("evidence verify after gc:\n%s", out)
	}
}
