package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
)

// TestAuditCommands drives a real server with REST calls, then reads the
// trail with the audit commands, offline on audit.db, during and after a
// graceful stop (which writes every queued event).
func TestAuditCommands(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--data-dir", data, "--project", "p="+dir)
	ctx := context.Background()
	const calls = 6
	for i := 0; i < calls; i++ {
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		if i%3 == 2 {
			args["files"] = []any{map[string]any{"path": "../escape.txt"}}
		}
		if _, err := callTool(ctx, srv.base, "read_files", args, ""); err != nil {
			t.Fatal(err)
		}
	}
	stopServe(t, srv)

	var list struct{ Sessions []audit.Session }
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "audit", "sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].TotalActions != calls || list.Sessions[0].FailedCount != 2 {
		t.Fatalf("sessions after a graceful stop: %+v", list.Sessions)
	}
	id := list.Sessions[0].SessionID

	out := mustRun(t, "--data-dir", data, "audit", "sessions")
	if !strings.Contains(out, "ID") || !strings.Contains(out, "ACTIONS") || !strings.Contains(out, id[:8]) {
		t.Fatalf("sessions table:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "audit", "show", id)
	if !strings.Contains(out, "6 actions: 4 ok, 2 failed") || strings.Count(out, "/api/tools/call") != calls || !strings.Contains(out, "agent:local:p") {
		t.Fatalf("show:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "audit", "stats")
	if !strings.Contains(out, "Scanned 6 of 6 events in 1 of 1 sessions.") || !strings.Contains(out, "files") || !strings.Contains(out, "failed") {
		t.Fatalf("stats:\n%s", out)
	}
	var rep audit.ToolReport
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "audit", "tools", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tools) != 1 || rep.Tools[0].Tool != "read_files" || rep.Tools[0].Count != calls || rep.Tools[0].Successes != 4 ||
		len(rep.Tools[0].TopErrorKinds) != 1 || rep.Tools[0].TopErrorKinds[0].Count != 2 {
		t.Fatalf("tools report: %+v", rep)
	}
	out = mustRun(t, "--data-dir", data, "audit", "tools")
	if !strings.Contains(out, "read_files") || !strings.Contains(out, "67") || !strings.Contains(out, "×2") {
		t.Fatalf("tools table:\n%s", out)
	}
	// REST calls carry no MCP window facts: no loop timing, said so.
	if !strings.Contains(out, "Loop gaps: none measurable; 0 of 0 meaningful MCP calls scanned had no window") || rep.LoopTiming.CallsSeen != 0 {
		t.Fatalf("tools loop gaps:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "audit", "close", id)
	if !strings.Contains(out, "closed") {
		t.Fatalf("close: %s", out)
	}

	// Bad input: unknown session, negative limit, bad status.
	for _, args := range [][]string{
		{"audit", "show", "no-such-session"},
		{"audit", "sessions", "--limit", "-1"},
		{"audit", "sessions", "--status", "paused"},
		{"audit", "close", strings.Repeat("x", audit.MaxSessionIDChars+1)},
	} {
		if out, err := run(t, append([]string{"--data-dir", data}, args...)...); err == nil {
			t.Fatalf("%v succeeded: %s", args, out)
		}
	}
}

// TestAuditReadWhileServing is the reproduction across processes:
// four calls to a running server (a child process), then at once
// webcodex audit reads audit.db and sees all four events. An id the
// server refuses is refused by the commands too, without echoing it.
func TestAuditReadWhileServing(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--data-dir", data, "--project", "p="+dir)
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		if r, err := callTool(ctx, srv.base, "read_files", args, ""); err != nil || !r.Success {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	var list struct{ Sessions []audit.Session }
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "audit", "sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].TotalActions != 4 {
		t.Fatalf("webcodex audit sessions right after four calls: %+v", list.Sessions)
	}
	var show struct {
		Session audit.Session
		Events  []audit.EventView
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "audit", "show", list.Sessions[0].SessionID, "--json")), &show); err != nil {
		t.Fatal(err)
	}
	if len(show.Events) != 4 {
		t.Fatalf("webcodex audit show right after four calls: %d events", len(show.Events))
	}
	for _, e := range show.Events {
		if e.ActionName != "read_files" || e.Status != audit.EventSuccess {
			t.Fatalf("event %+v", e)
		}
	}
	for _, c := range []struct{ id, why string }{
		{"wc_sess_7f3c9a1e5b2d4c6a8e0f1a2b3c4d5e6f", "Workflow Session id"},
		{"ghp_RefusedAuditIdGhp7f3c9a1e5b2d4c6a8e", "looks like a credential"},
	} {
		for _, args := range [][]string{{"audit", "show", c.id}, {"audit", "close", c.id}, {"audit", "stats", "--session", c.id}} {
			out, err := run(t, append([]string{"--data-dir", data}, args...)...)
			if err == nil || !strings.Contains(err.Error(), c.why) || strings.Contains(err.Error()+out, c.id) {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
		}
	}
	stopServe(t, srv)
}

func TestPrintLoopTiming(t *testing.T) {
	var b strings.Builder
	printLoopTiming(&b, audit.LoopTiming{Pairs: 3, P50MS: 100, P90MS: 2000, P95MS: 2000, MaxMS: 2000, Overlapping: 1, Unavailable: 2, CallsSeen: 9})
	want := "Loop gaps (response to the next request of the same window): 3 pairs, p50 100 ms, p90 2000 ms, p95 2000 ms, max 2000 ms; 2 of 9 meaningful MCP calls scanned had no window (loop timing unavailable); 1 overlapping pairs.\n"
	if b.String() != want {
		t.Fatalf("got  %q\nwant %q", b.String(), want)
	}
}
