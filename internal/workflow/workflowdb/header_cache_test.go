package workflowdb

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// TestAsDecodedEqualsTheDecodedHeader checks asDecoded against
// workflowrow.DecodeHeader(workflowrow.EncodeHeader(s)) for sessions whose decoding it claims to
// know, and that it refuses those it cannot know (a zone other than UTC,
// invalid UTF-8).
func TestAsDecodedEqualsTheDecodedHeader(t *testing.T) {
	now := time.Now() // carries a monotonic reading
	closed := now.Add(time.Second).UTC()
	base := workflow.Session{ID: workflow.NewSessionID(), Project: "agent:local:demo", Title: "fix <the> \u2028 test ✓",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, OwnerFingerprint: auth.Fingerprint("local"),
		CreatedAt: now.UTC(), UpdatedAt: now.Add(time.Millisecond).UTC(), EventsObserved: 7,
		Counters: workflow.Counters{ToolCalls: 3, ToolFailures: 1}}
	known := map[string]func(s *workflow.Session){
		"plain":             func(*workflow.Session) {},
		"empty job markers": func(s *workflow.Session) { s.JobMarkers = []string{} },
		"job markers":       func(s *workflow.Session) { s.JobMarkers = []string{"job_1", "job_2"} },
		"closed":            func(s *workflow.Session) { s.Lifecycle, s.ClosedAt = workflow.Closed, &closed },
		"execution context": func(s *workflow.Session) {
			s.ExecutionContext = workflow.ExecutionContext{DefaultCwd: "src", DefaultShell: "bash"}
		},
		"retention truncated": func(s *workflow.Session) { s.RetentionTruncated = true },
	}
	for name, change := range known {
		s := base
		change(&s)
		want, err := workflowrow.DecodeHeader([]byte(workflowrow.EncodeHeader(s)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, ok := asDecoded(s)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: asDecoded = %+v, %v; want %+v, true", name, got, ok, want)
		}
	}
	zone := time.FixedZone("east", 2*3600)
	unknown := map[string]func(s *workflow.Session){
		"local time":    func(s *workflow.Session) { s.UpdatedAt = now.Add(time.Millisecond) },
		"fixed zone":    func(s *workflow.Session) { s.CreatedAt = now.In(zone) },
		"invalid title": func(s *workflow.Session) { s.Title = "bad \xff" },
		"invalid job":   func(s *workflow.Session) { s.JobMarkers = []string{"\xfe"} },
	}
	for name, change := range unknown {
		s := base
		change(&s)
		if _, ok := asDecoded(s); ok {
			t.Errorf("%s: asDecoded claims to know the decoding", name)
		}
	}
}

// TestHeaderCacheHoldsTheStoredHeader checks that after each kind of
// update the cached header is the stored JSON and exactly its decoding,
// so reads that hit it return what decoding would.
func TestHeaderCacheHoldsTheStoredHeader(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := workflow.NewService(st, nil)
	s, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		var hdr string
		if err := st.db.Read.QueryRowContext(ctx, `SELECT header_json FROM sessions WHERE session_id = ?`, s.ID).Scan(&hdr); err != nil {
			t.Fatal(err)
		}
		v, ok := st.headers.Load(s.ID)
		if !ok {
			t.Fatalf("%s: no cached header", step)
		}
		d := v.(*decodedHeader)
		want, err := workflowrow.DecodeHeader([]byte(hdr))
		if err != nil {
			t.Fatal(err)
		}
		if d.json != hdr || !reflect.DeepEqual(d.sess, want) {
			t.Fatalf("%s: cached %s / %+v, stored %s / %+v", step, d.json, d.sess, hdr, want)
		}
		got, err := st.GetCommitted(ctx, s.ID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: GetCommitted = %+v, %v; want %+v", step, got, err, want)
		}
	}
	if _, err := svc.Continue(ctx, s.ID, "and the docs", ""); err != nil {
		t.Fatal(err)
	}
	check("continue")
	if _, _, err := svc.Close(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	check("close")
}
