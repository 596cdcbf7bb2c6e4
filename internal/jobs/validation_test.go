package jobs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
)

func TestValidationJobMetadataAndKeptOutput(t *testing.T) {
	e := newEnv(t, jobs.Options{SyncGrace: 200 * time.Millisecond})
	ctx := context.Background()
	meta := &jobs.ValidationMeta{Tool: "run_tests", ScopeID: "validation_scope:v1:x", Parser: "junit_xml",
		Expectation: "success", MinTests: 2, Sessions: []string{"wc_sess_a", "wc_sess_b"}, ReportFile: "junit.xml"}

	// Inline with KeepOutput: the caller picks its id, the files stay
	// until DiscardOutput, and the record carries the metadata.
	// (A grace no loaded machine runs out of: `echo out` ends inline.)
	spec := e.spec("echo out")
	spec.Background, spec.KeepOutput, spec.Validation, spec.ID = false, true, meta, jobs.NewID()
	j, res, err := e.m.RunSync(ctx, spec, time.Minute)
	if err != nil || res == nil || j.ID != spec.ID || j.Background {
		t.Fatalf("inline: %+v %v %v", j, res, err)
	}
	if b, err := os.ReadFile(e.m.OutputPath(j.ID, jobs.Stdout)); err != nil || string(b) != "out\n" {
		t.Fatalf("kept output: %q %v", b, err)
	}
	if _, err := e.store.Get(ctx, j.ID); failure.KindOf(err) != failure.JobNotFound {
		t.Fatalf("an inline run left a record: %v", err)
	}
	got := j
	if got.Validation == nil || got.Validation.ReportFile != "junit.xml" || len(got.Validation.Sessions) != 2 || got.Validation.MinTests != 2 {
		t.Fatalf("stored metadata: %+v", got.Validation)
	}
	e.m.DiscardOutput(ctx, j.ID)
	if _, err := os.Stat(e.m.JobDir(j.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DiscardOutput left %v", err)
	}

	// Handed off: a candidate of each named session once terminal, and
	// DiscardOutput never removes a background job's output.
	// It runs until the test opens its gate: still running (not a
	// candidate) however late the checks below come.
	gate := filepath.Join(e.work, "gate")
	spec = e.spec("while [ ! -f " + gate + " ]; do sleep 0.02; done; echo late")
	spec.Background, spec.KeepOutput, spec.Validation = false, true, meta
	h, res, err := e.m.RunSync(ctx, spec, 0)
	if err != nil || res != nil || !h.Background {
		t.Fatalf("handoff: %+v %v %v", h, res, err)
	}
	if got, err := e.store.Get(ctx, h.ID); err != nil || got.Validation == nil || !got.Background || got.State != jobs.Running {
		t.Fatalf("handed-off record: %+v %v", got, err)
	}
	if c, _ := e.m.ValidationCandidates(ctx, "wc_sess_a", 64); len(c) != 0 {
		t.Fatalf("a running job is a candidate: %v", c)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.wait(h.ID)
	e.m.DiscardOutput(ctx, h.ID)
	if _, err := os.Stat(filepath.Join(e.m.JobDir(h.ID), "stdout")); err != nil {
		t.Fatalf("background output removed: %v", err)
	}
	for _, sid := range []string{"wc_sess_a", "wc_sess_b"} {
		c, err := e.m.ValidationCandidates(ctx, sid, 64)
		if err != nil || len(c) != 1 || c[0].ID != h.ID {
			t.Fatalf("candidates of %s: %v %v", sid, c, err)
		}
	}
	if c, _ := e.m.ValidationCandidates(ctx, "wc_sess_c", 64); len(c) != 0 {
		t.Fatalf("candidates of another session: %v", c)
	}
	if c, _ := e.m.ValidationCandidates(ctx, "wc_sess_a", 0); len(c) != 0 {
		t.Fatalf("limit ignored: %v", c)
	}

	// Bad ids and report names are refused before anything runs.
	bad := e.spec("true")
	bad.ID = "nope"
	if _, err := e.m.Start(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("bad id: %v", err)
	}
	bad = e.spec("true")
	bad.Validation = &jobs.ValidationMeta{Tool: "run_tests", ScopeID: "s", ReportFile: "../x"}
	if _, err := e.m.Start(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("bad report file: %v", err)
	}
}

// TestHandoffRacesFinish: a run ending right at the grace is either
// answered inline with no record, or handed off with a record that
// becomes terminal — never a record left unfinished, never both.
func TestHandoffRacesFinish(t *testing.T) {
	e := newEnv(t, jobs.Options{SyncGrace: time.Millisecond})
	ctx := context.Background()
	for range 40 {
		spec := e.spec("true")
		spec.Background = false
		j, res, err := e.m.RunSync(ctx, spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, gerr := e.store.Get(ctx, j.ID)
		switch {
		case res == nil:
			if gerr != nil || !got.Background {
				t.Fatalf("handed off without a record: %+v %v", got, gerr)
			}
			if w := e.wait(j.ID); w.State != jobs.Succeeded {
				t.Fatalf("handed-off job ended %s", w.State)
			}
		case j.Background:
			// Handed off, then finished before RunSync returned.
			if gerr != nil || got.State != jobs.Succeeded {
				t.Fatalf("terminal handoff record: %+v %v", got, gerr)
			}
		default:
			if failure.KindOf(gerr) != failure.JobNotFound {
				t.Fatalf("inline run left a record: %+v %v", got, gerr)
			}
		}
	}
	if u, err := e.store.Unfinished(ctx); err != nil || len(u) != 0 {
		t.Fatalf("unfinished records: %v %v", u, err)
	}
}
