package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// TestRetentionInTheServer: a server with session_events_days purges a
// session closed before the policy's cutoff in its first pass, logs it,
// shows the run in /api/status, and session_summary says the events were
// purged, not that there were none.
func TestRetentionInTheServer(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	then := time.Now().Add(-40 * 24 * time.Hour)
	st, err := workflowdb.Open(ctx, filepath.Join(data, app.WorkflowDB), func() time.Time { return then })
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st, func() time.Time { return then })
	old, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "long ago"})
	if err != nil {
		t.Fatal(err)
	}
	if old, _, err = svc.Close(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var logs syncBuffer
	days := 30
	s := startAppLogging(t, data, slog.New(slog.NewTextHandler(&logs, nil)), func(c *app.Config) { c.Retention.SessionEventsDays = &days }, "demo="+t.TempDir())
	defer s.stop(t)
	<-s.a.RetentionFirstPass()

	code, body := s.do(t, s.token, "GET", "/api/status", nil)
	var status struct {
		Retention app.RetentionStatus `json:"retention"`
	}
	if err := json.Unmarshal(body, &status); code != 200 || err != nil {
		t.Fatalf("/api/status: %d %v %s", code, err, body)
	}
	r := status.Retention
	if len(r.Policies) != 1 || r.Policies[0] != "session_events_days=30" || len(r.Runs) != 1 {
		t.Fatalf("retention status = %+v", r)
	}
	if run := r.Runs[0]; run.Store != "workflow" || run.Policy != "session_events_days" || run.Removed.Items != old.EventsObserved || run.Removed.Owners != 1 || run.Error != "" {
		t.Fatalf("run = %+v, want %d events of 1 session", run, old.EventsObserved)
	}
	logs.mu.Lock()
	logged := logs.b.String()
	logs.mu.Unlock()
	if !strings.Contains(logged, "retention: purged") || !strings.Contains(logged, "policy=session_events_days") {
		t.Fatalf("no purge in the log:\n%s", logged)
	}
	out := must(t, s.call(t, "session_summary", map[string]any{"session_id": old.ID}, ""), "session_summary")
	var view struct {
		EventsPurged       int64 `json:"events_purged"`
		EventsObserved     int64 `json:"events_observed"`
		RetentionTruncated bool  `json:"retention_truncated"`
	}
	if err := json.Unmarshal(out.Output["session"], &view); err != nil {
		t.Fatal(err)
	}
	if view.EventsPurged != old.EventsObserved || view.EventsObserved != old.EventsObserved || !view.RetentionTruncated || string(out.Output["events_complete"]) != "false" {
		t.Fatalf("session_summary of a purged session: %+v, events_complete %s", view, out.Output["events_complete"])
	}
}
