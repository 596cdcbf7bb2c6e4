package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
)

// TestRecorderContinuityGap: a window that forgot its recorder after an
// explicit session affinity gets that exact session suggested; the missed
// call is not backfilled into the ledger; a status call, a call with a
// recorder, another project, another window or principal, and a closed
// session get no suggestion.
func TestRecorderContinuityGap(t *testing.T) {
	p1, p2 := t.TempDir(), t.TempDir()
	for _, d := range []string{p1, p2} {
		os.WriteFile(filepath.Join(d, "a.txt"), []byte("x\n"), 0o644)
	}
	s, _ := startLogged(t, t.TempDir(), "p="+p1, "q="+p2)
	defer s.stop(t)
	ctx := context.Background()
	admin, err := s.a.Auth.Authenticate(ctx, s.token)
	if err != nil {
		t.Fatal(err)
	}
	bobTok, _, err := s.a.Auth.CreateToken(ctx, "bob", "bob", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.a.Auth.Authenticate(ctx, bobTok)
	if err != nil {
		t.Fatal(err)
	}
	win := window.Hash("gap-window", admin)
	call := func(p auth.Principal, w, tool string, args map[string]any, recorder string) (kernel.Call, kernel.Result) {
		t.Helper()
		raw, _ := json.Marshal(args)
		c := kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: p,
			Source: kernel.SourceMCP, ProtocolEra: "2026-07-28", ClientWindow: w}
		res := s.a.Kernel.Dispatch(ctx, c)
		if !res.Success {
			t.Fatalf("%s: %s", tool, res.Body)
		}
		return c, res
	}
	read := func(project string) map[string]any {
		return map[string]any{"project": project, "files": []any{map[string]any{"path": "a.txt"}}}
	}
	_, w := call(admin, win, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}, "")
	sess := w.BusinessSession
	if sess == "" {
		t.Fatal("work_on_project reported no session")
	}
	call(admin, win, "read_files", read("agent:local:p"), sess)
	before := exportLedger(t, s.a, sess)

	c, res := call(admin, win, "read_files", read("agent:local:p"), "") // forgot the recorder
	if got, ok := s.a.RecorderContinuityGap(ctx, c, res); !ok || got != sess {
		t.Fatalf("gap suggestion %q %v, want %s", got, ok, sess)
	}
	if after := exportLedger(t, s.a, sess); string(after) != string(before) {
		t.Fatal("the missed call was backfilled into the ledger")
	}

	no := func(what string, c kernel.Call, res kernel.Result) {
		t.Helper()
		if got, ok := s.a.RecorderContinuityGap(ctx, c, res); ok {
			t.Errorf("%s: suggested %s", what, got)
		}
	}
	c, res = call(admin, win, "read_files", read("agent:local:p"), sess)
	no("a call with its recorder", c, res)
	c, res = call(admin, win, "list_sessions", map[string]any{"project": "agent:local:p"}, "")
	no("a status call", c, res)
	c, res = call(admin, win, "read_files", read("agent:local:q"), "")
	no("another project", c, res)
	c, res = call(admin, window.Hash("other-window", admin), "read_files", read("agent:local:p"), "")
	no("another window", c, res)
	c, res = call(bob, window.Hash("gap-window", bob), "read_files", read("agent:local:p"), "")
	no("another principal", c, res)
	c, res = call(admin, "", "read_files", read("agent:local:p"), "")
	no("no window", c, res)

	call(admin, win, "close_session", map[string]any{"session_id": sess}, "")
	c, res = call(admin, win, "read_files", read("agent:local:p"), "")
	no("a closed session", c, res)
}
