package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestBusinessClaimsAcrossTransports: through REST and MCP in both eras, a
// business session_id is journaled like a recorder claim (verified when
// it matches, invalid_claim when it does not), and a call naming the same
// session as business session and recorder counts once.
func TestBusinessClaimsAcrossTransports(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	ctx := context.Background()
	id := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "Fix the parser."}, ""), "work_on_project").Output["session_id"])
	forged := "wc_sess_" + strings.Repeat("0", 32)

	type call func(tool string, args map[string]any, recorder string) (success bool, kind string)
	rest := func(tool string, args map[string]any, recorder string) (bool, string) {
		r := s.call(t, tool, args, recorder)
		if r.Error != nil {
			return r.Success, r.Error.Kind
		}
		return r.Success, ""
	}
	overMCP := func(version string) call {
		cs := connectMCP(t, s, version, nil)
		return func(tool string, args map[string]any, recorder string) (bool, string) {
			if recorder != "" {
				args["recording_session_id"] = recorder
			}
			r, _ := callMCP(t, cs, tool, args, nil)
			if r.Error != nil {
				return r.Success, r.Error.Kind
			}
			return r.Success, ""
		}
	}
	newest := func(sessionID string) evidence.Record {
		t.Helper()
		entries, err := s.a.Evidence.SessionRecords(ctx, sessionID, 1)
		if err != nil || len(entries) == 0 {
			t.Fatalf("no record for %s: %v", sessionID, err)
		}
		return entries[0].Record
	}
	counters := func() workflow.Counters {
		sess, err := s.a.Sessions.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sess.Counters
	}

	for _, tr := range []struct {
		name string
		do   call
	}{{"rest", rest}, {"mcp 2026-07-28", overMCP("")}, {"mcp 2025-11-25", overMCP("2025-11-25")}} {
		// A valid business-only call (mutating: its record is durable
		// before the result) is verified.
		if ok, kind := tr.do("update_session_context", map[string]any{"session_id": id, "default_shell": "bash"}, ""); !ok {
			t.Fatalf("%s: update_session_context failed: %s", tr.name, kind)
		}
		r := newest(id)
		if r.Tool != "update_session_context" || r.Binding != evidence.BindingVerified || r.Verified.SessionID != id ||
			r.Claim.BusinessSessionID != id || r.Claim.RecordingSessionID != "" {
			t.Errorf("%s: business-only record %+v", tr.name, r)
		}

		// The reproduction: continuing a session that does not exist.
		ok, kind := tr.do("work_on_project", map[string]any{"project": "agent:local:p", "instruction": "Continue it.", "session_id": forged}, "")
		if ok || kind != "unknown_session_id" {
			t.Errorf("%s: work_on_project forged: %v %s", tr.name, ok, kind)
		}
		r = newest(forged)
		if r.Tool != "work_on_project" || r.Binding != evidence.BindingInvalidClaim || len(r.Reasons) != 1 ||
			r.Reasons[0] != evidence.ReasonNotRegistered || r.Outcome != evidence.OutcomeRefused {
			t.Errorf("%s: forged business claim record %+v", tr.name, r)
		}

		// One failing run_process whose recorder is its business session:
		// one tool call and one failure.
		before := counters()
		ok, kind = tr.do("run_process", map[string]any{"project": "agent:local:p", "session_id": id, "argv": []any{"false"}}, id)
		if ok || kind != "command_failed" {
			t.Fatalf("%s: run_process false: %v %s", tr.name, ok, kind)
		}
		after := counters()
		if after.ToolCalls-before.ToolCalls != 1 || after.ToolFailures-before.ToolFailures != 1 {
			t.Errorf("%s: counters before %+v after %+v", tr.name, before, after)
		}
	}
}
