package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/kernel"
)

// TestEveryAcknowledgedCallIsSeenByReaders makes recorded reads (written
// behind their responses, their evidence in the ledger's outbox) and
// recorded writes, and after each one asks the journal and the session
// summary at once: every acknowledged call is there, with its evidence
// record, in order; after a graceful close and reopen nothing is journaled
// twice.
func TestEveryAcknowledgedCallIsSeenByReaders(t *testing.T) {
	ctx := context.Background()
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "seed.txt"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, dir, "bench="+root)
	id := outputOf(t, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "read and write"})["session_id"].(string)
	var invocations []string
	for i := range 20 {
		tool, args := "read_files", map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": "seed.txt"}}}
		if i%4 == 3 {
			tool, args = "write_project_file", map[string]any{"project": "agent:local:bench", "path": fmt.Sprintf("w%d.txt", i), "content": "x"}
		}
		raw, _ := json.Marshal(args)
		res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: id, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
		if !res.Success {
			t.Fatalf("%s: %+v", tool, res.Error)
		}
		recs, err := a.Evidence.SessionRecords(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Newest first: the call just acknowledged is the newest record.
		if len(recs) != i+1 || recs[0].Record.Tool != tool || recs[0].Record.Binding != evidence.BindingVerified {
			t.Fatalf("after call %d (%s) the journal holds %d records for the session, newest %+v", i, tool, len(recs), recs[0].Record)
		}
		invocations = append(invocations, recs[0].Record.InvocationID)
		// The summary (the service behind session_summary and the handoff)
		// sees the call's events, though a read's were written behind
		// (tool_calls counts work_on_project too).
		sess, evs, err := a.Sessions.Summary(ctx, id, 2)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.Kind != "tool_call_finished" || last.Tool != tool || last.InvocationID != recs[0].Record.InvocationID || sess.Counters.ToolCalls != int64(i+2) {
			t.Fatalf("after call %d the summary's last event is %+v (tool_calls %d), want the finish of %s %s", i, last, sess.Counters.ToolCalls, tool, recs[0].Record.InvocationID)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openApp(t, dir)
	// A graceful close leaves no read unrecorded, and status says so.
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(st)
	var status struct {
		Workflow map[string]any `json:"workflow"`
	}
	json.Unmarshal(raw, &status)
	if v, ok := status.Workflow["unrecorded_reads_at_start"]; !ok || v != float64(0) {
		t.Fatalf("status workflow = %v, want unrecorded_reads_at_start 0", status.Workflow)
	}
	recs, err := b.Evidence.SessionRecords(ctx, id, 0)
	if err != nil || len(recs) != 20 {
		t.Fatalf("after reopen: %d records (%v), want 20 (none journaled twice)", len(recs), err)
	}
	for i, r := range recs {
		if want := invocations[len(invocations)-1-i]; r.Record.InvocationID != want {
			t.Fatalf("record %d is %s, want %s", i, r.Record.InvocationID, want)
		}
	}
}

// openApp opens an app on dataDir with the given projects (name=root) and
// closes it at the end of the test (a second Close is harmless).
func openApp(t *testing.T, dataDir string, projects ...string) *app.App {
	t.Helper()
	ctx := context.Background()
	cfg, _ := app.LoadConfig(dataDir, func(string) string { return "" })
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if len(projects) > 0 {
		if _, err := a.RegisterProjects(ctx, projects); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// outputOf dispatches a call as the local user and returns its output.
func outputOf(t *testing.T, a *app.App, tool string, args map[string]any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(args)
	res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: raw, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	if !res.Success {
		t.Fatalf("%s: %+v", tool, res.Error)
	}
	var m map[string]any
	json.Unmarshal(res.Body, &m)
	return m["output"].(map[string]any)
}
