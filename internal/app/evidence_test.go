package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/transport/evidenceapi"
	"github.com/webcodex/webcodex/internal/workflow"
)

// evidenceOf reads GET /api/evidence/sessions/{id} as token.
func evidenceOf(t *testing.T, s *server, token, id string) (int, evidenceapi.Response) {
	t.Helper()
	code, body := s.do(t, token, "GET", "/api/evidence/sessions/"+id, nil)
	var r evidenceapi.Response
	if code == 200 {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
	}
	return code, r
}

// TestEvidenceScenarios drives real calls through the HTTP server and
// checks the journal record each one left: the binding, its reasons, the
// claim kept as presented and the verified values copied from the store;
// then verifies the whole journal offline, and detects a tampered byte.
func TestEvidenceScenarios(t *testing.T) {
	data := t.TempDir()
	s := startApp(t, data, "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	ctx := context.Background()
	other, _, err := s.a.Auth.CreateToken(ctx, "other", "someone-else", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	start := func() string {
		r := must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "Fix the parser."}, ""), "work_on_project")
		return str(t, r.Output["session_id"])
	}
	a, b, closed := start(), start(), start()
	must(t, s.call(t, "close_session", map[string]any{"session_id": closed}, ""), "close_session")
	// Closing a session signs the head (the first checkpoint of this journal).
	if cp, err := s.a.Evidence.Latest(ctx); err != nil || cp.Size < 3 {
		t.Fatalf("no checkpoint signed at session close: %+v %v", cp, err)
	}
	read := func(project string) map[string]any {
		return map[string]any{"project": project, "files": []any{map[string]any{"path": "a.txt"}}}
	}
	forged := workflow.NewSessionID() // well-formed, never registered

	cases := []struct {
		name, token, project, recorder string
		binding                        evidence.Binding
		reasons                        string
	}{
		{"verified", s.token, "agent:local:p", a, evidence.BindingVerified, "runtime_session_store_match"},
		{"second session on the same task", s.token, "agent:local:p", b, evidence.BindingVerified, "runtime_session_store_match"},
		{"forged id", s.token, "agent:local:p", forged, evidence.BindingInvalidClaim, "not_registered"},
		{"closed session", s.token, "agent:local:p", closed, evidence.BindingInvalidClaim, "session_closed"},
		{"other principal's session", other, "agent:local:p", a, evidence.BindingInvalidClaim, "authority_mismatch"},
		{"other project's session", s.token, "agent:local:q", a, evidence.BindingInvalidClaim, "project_mismatch"},
		{"no recorder", s.token, "agent:local:p", "", evidence.BindingSessionless, "no_recorder_requested"},
	}
	count := func(id string) int {
		entries, err := s.a.Evidence.SessionRecords(ctx, id, 500)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	for _, c := range cases {
		before := 0
		if c.recorder != "" {
			before = count(c.recorder)
		}
		res := s.callAs(t, c.token, "read_files", read(c.project), c.recorder)
		if (c.binding == evidence.BindingInvalidClaim) == res.Success {
			t.Fatalf("%s: success=%v %+v", c.name, res.Success, res.Error)
		}
		id := c.recorder
		if id == "" {
			continue // a sessionless record belongs to no session; checked below
		}
		// A read-only call's record is appended beside the response.
		s.a.WaitEvidence()
		if n := count(id); n != before+1 {
			t.Fatalf("%s: %d records appended, want 1", c.name, n-before)
		}
		entries, err := s.a.Evidence.SessionRecords(ctx, id, 1) // newest first
		if err != nil {
			t.Fatal(err)
		}
		r := entries[0].Record
		var reasons []string
		for _, x := range r.Reasons {
			reasons = append(reasons, string(x))
		}
		if r.Binding != c.binding || strings.Join(reasons, ",") != c.reasons || r.Claim.RecordingSessionID != c.recorder || r.Tool != "read_files" {
			t.Errorf("%s: record %+v", c.name, r)
		}
		switch c.binding {
		case evidence.BindingVerified:
			if r.Verified.SessionID != c.recorder || r.Verified.Project != "agent:local:p" || r.Verified.Lifecycle != "active" ||
				r.Claim.PrincipalKind != "api_token" || r.Outcome != evidence.OutcomeOK || r.SessionRecordDigest == "" {
				t.Errorf("%s: verified values %#v", c.name, r)
			}
		default:
			if r.Verified != (evidence.Verified{}) || r.Outcome != evidence.OutcomeRefused {
				t.Errorf("%s: an invalid claim carries verified values or ran: %+v", c.name, r)
			}
		}
	}
	// A mutating call's record is durable before its result returns: no
	// waiting.
	n := count(a)
	must(t, s.call(t, "write_project_file", map[string]any{"project": "agent:local:p", "path": "new.txt", "content": "x\n"}, a), "write_project_file")
	if entries, _ := s.a.Evidence.SessionRecords(ctx, a, 1); count(a) != n+1 || entries[0].Record.Tool != "write_project_file" ||
		entries[0].Record.Binding != evidence.BindingVerified {
		t.Fatalf("the mutating call's record is not there when its result is: %d -> %d", n, count(a))
	}

	// The sessionless call is the newest record of the journal.
	if cp, err := s.a.Evidence.Checkpoint(ctx); err != nil || cp.Size < uint64(len(cases)) {
		t.Fatalf("checkpoint: %+v %v", cp, err)
	}

	// Counts and listing over HTTP, with authority.
	code, resp := evidenceOf(t, s, s.token, a)
	if code != 200 || resp.Counts.Verified < 1 || resp.Counts.InvalidClaim != 2 || resp.Checkpoint == nil ||
		resp.Returned != len(resp.Records) || !strings.Contains(resp.Proves, "never that the work was correct") {
		t.Fatalf("GET evidence of %s: HTTP %d %+v", a, code, resp)
	}
	if code, _ := evidenceOf(t, s, other, a); code != 404 {
		t.Fatalf("another authority group read the records: HTTP %d", code)
	}
	if code, resp := evidenceOf(t, s, s.token, forged); code != 200 || resp.Counts.InvalidClaim != 1 {
		t.Fatalf("admin reading a forged id's records: HTTP %d %+v", code, resp)
	}
	if code, _ := s.do(t, s.token, "GET", "/api/evidence/sessions/"+a+"?limit=-1", nil); code != 400 {
		t.Fatalf("negative limit: HTTP %d", code)
	}

	// session_summary and the handoff brief carry the counts; the brief
	// carries a signed checkpoint.
	sum := must(t, s.call(t, "session_summary", map[string]any{"session_id": a}, ""), "session_summary")
	var ev struct {
		Verified     int64 `json:"verified"`
		InvalidClaim int64 `json:"invalid_claim"`
		Proves       string
	}
	json.Unmarshal(sum.Output["evidence"], &ev)
	if ev.Verified < 1 || ev.InvalidClaim != 2 || ev.Proves == "" {
		t.Fatalf("session_summary evidence: %s", sum.Output["evidence"])
	}
	h := must(t, s.call(t, "session_handoff_summary", map[string]any{"session_id": a}, ""), "session_handoff_summary")
	var brief struct {
		Basis struct {
			Evidence struct {
				Verified     int64 `json:"verified"`
				InvalidClaim int64 `json:"invalid_claim"`
				Checkpoint   *struct {
					Size uint64
					Note string
				}
			}
		}
	}
	json.Unmarshal(h.Output["handoff_brief"], &brief)
	if e := brief.Basis.Evidence; e.Verified < 1 || e.InvalidClaim != 2 || e.Checkpoint == nil || !strings.HasPrefix(e.Checkpoint.Note, "webcodex.local/evidence/") {
		t.Fatalf("brief basis evidence: %s", h.Output["handoff_brief"])
	}
	note := brief.Basis.Evidence.Checkpoint.Note

	code, stBody := s.do(t, s.token, "GET", "/api/status", nil)
	var st app.Status
	json.Unmarshal(stBody, &st)
	if code != 200 || st.Evidence.JournalID == "" || st.Evidence.KeyID == "" || st.Evidence.LastCheckpointSize == 0 || st.Evidence.AppendFailures != 0 {
		t.Fatalf("status: HTTP %d %s", code, stBody)
	}

	// Offline: the journal verifies, also from the checkpoint the brief
	// handed out; one changed byte is found.
	s.stop(t)
	from := filepath.Join(t.TempDir(), "kept.note")
	os.WriteFile(from, []byte(note), 0o600)
	rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{From: mustRead(t, from)})
	if err != nil || !rep.Clean || rep.Records < int64(len(cases)) || rep.From == nil {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, app.EvidenceDB))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE record_payloads SET tool = 'read_filez' WHERE idx = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rep, err = evidencedb.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil || rep.Clean || !rep.Has(evidence.FindingBadLeaf) {
		t.Fatalf("a changed byte was not found: %v %+v", err, rep.Totals)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
