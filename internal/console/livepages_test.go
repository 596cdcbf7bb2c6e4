package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
)

// event is one server-sent event.
type event struct{ name, data string }

// events parses a whole event stream.
func events(body string) []event {
	var out []event
	var cur event
	var data []string
	for line := range strings.SplitSeq(body, "\n") {
		switch {
		case line == "":
			if cur.name != "" || data != nil {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = event{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

// auditCall makes one REST tool call in Action Audit session auditID.
func (s *server) auditCall(t *testing.T, token, auditID, tool string, args any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-action-session-id", auditID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestAuditPageShowsTheToolReport(t *testing.T) {
	s := start(t)
	op := s.token(t, "ops", auth.ScopeAccountManage, auth.ScopeProjectRead)
	alice := s.token(t, "alice")
	s.auditCall(t, alice, "audit-console-1", "work_on_project", map[string]any{"project": s.project, "instruction": "audited"})
	s.auditCall(t, alice, "audit-console-1", "work_on_project", map[string]any{"project": s.project, "bogus": 1})
	cred, _, err := s.a.Auth.CreateProjectCredential(context.Background(), "", "alice", s.project, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.auditCall(t, cred, "audit-console-2", "list_sessions", map[string]any{"project": s.project})
	// An OAuth client's calls, as the built-in authorization server's
	// tokens are attributed, and its name from the client store.
	for range 2 {
		if err := s.a.Audit.Record(context.Background(), "audit-console-3", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess, ActionName: "read_files"}},
			audit.Attribution{PrincipalKind: "oauth2", PrincipalUserID: "alice", OAuthClientID: "client-claude"}); err != nil {
			t.Fatal(err)
		}
	}
	s.a.Audit.NameClients(func(_ context.Context, ids []string) map[string]string {
		return map[string]string{"client-claude": "Claude <ai>"}
	})

	b := s.browser(t)
	b.login(op)
	p := b.get("/console/audit")
	if p.status != http.StatusOK {
		t.Fatalf("audit page: %d\n%s", p.status, p.body)
	}
	// The figures are the audit service's own report.
	rep, err := s.a.Audit.Tools(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var wop *audit.ToolStats
	for i := range rep.Tools {
		if rep.Tools[i].Tool == "work_on_project" {
			wop = &rep.Tools[i]
		}
	}
	if wop == nil || wop.Count != 2 || wop.Successes != 1 {
		t.Fatalf("report: %+v", rep.Tools)
	}
	for _, want := range []string{
		`<svg`, "Calls per tool", "Latency per tool", "2 calls", "50 % (1 ok)", "<code>invalid_arguments</code> × 1",
		`href="/console/audit/sessions/audit-console-1"`, "solid: up to p50",
		// Usage by credential kind; no OAuth client has called.
		"<td><code>api_token</code></td><td>2</td>", "<td><code>project-credential</code></td><td>1</td>", "<td><code>oauth2</code></td><td>2</td>",
		"<td>Claude &lt;ai&gt;</td><td><code class=\"id\">client-claude</code></td><td>2</td>",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("audit page lacks %q", want)
		}
	}

	ps := b.get("/console/audit/sessions/audit-console-1")
	if ps.status != http.StatusOK || strings.Count(ps.body, "<code>/api/tools/call</code>") != 2 || !strings.Contains(ps.body, `class="failed"`) {
		t.Fatalf("audit session page: %d\n%s", ps.status, ps.body)
	}
	// A session page shows no attribution.
	if ps := b.get("/console/audit/sessions/audit-console-2"); ps.status != http.StatusOK || strings.Contains(ps.body, "project-credential") {
		t.Fatalf("audit session page of the credential's call: %d\n%s", ps.status, ps.body)
	}
	if ps := b.get("/console/audit/sessions/audit-console-3"); ps.status != http.StatusOK || strings.Contains(ps.body, "client-claude") || strings.Contains(ps.body, "oauth2") {
		t.Fatalf("audit session page of the OAuth client's calls: %d\n%s", ps.status, ps.body)
	}
	if p := b.get("/console/audit/sessions/no-such-audit-session"); p.status != http.StatusNotFound {
		t.Fatalf("unknown audit session: %d", p.status)
	}
	if p := b.get("/console/audit/sessions/audit-console-1?events=x"); p.status != http.StatusBadRequest {
		t.Fatalf("bad events limit: %d", p.status)
	}

	// Without account:manage the audit pages are refused, like the API.
	ab := s.browser(t)
	ab.login(alice)
	for _, path := range []string{"/console/audit", "/console/audit/sessions/audit-console-1"} {
		if p := ab.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, "account:manage") || strings.Contains(p.body, "audited") {
			t.Fatalf("%s without account:manage: %d\n%s", path, p.status, p.body)
		}
	}
}

func TestEvidencePageVerifyNow(t *testing.T) {
	s := start(t)
	op := s.token(t, "ops", auth.ScopeAccountManage, auth.ScopeProjectRead)
	alice := s.token(t, "alice")
	s.startSession(t, alice, "make some evidence")
	b := s.browser(t)
	b.login(op)
	p := b.get("/console/evidence")
	if p.status != http.StatusOK || !strings.Contains(p.body, s.a.Evidence.JournalID()) || !strings.Contains(p.body, s.a.Evidence.KeyID()) ||
		!strings.Contains(p.body, "No verification has run") {
		t.Fatalf("evidence page: %d\n%s", p.status, p.body)
	}

	// No or a wrong CSRF token: refused, and no run starts.
	for name, csrf := range map[string]string{"missing": "", "wrong": "AAAA"} {
		form := url.Values{}
		if csrf != "" {
			form.Set(console.CSRFField, csrf)
		}
		if p := b.post("/console/evidence/verify", form); p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Fatalf("%s CSRF token: %d\n%s", name, p.status, p.body)
		}
		if p := b.get("/console/evidence"); !strings.Contains(p.body, "No verification has run") {
			t.Fatalf("%s CSRF token started a run:\n%s", name, p.body)
		}
	}
	// Without account:manage: the status, no verify.
	ab := s.browser(t)
	ab.login(alice)
	ap := ab.get("/console/evidence")
	if ap.status != http.StatusOK || !strings.Contains(ap.body, s.a.Evidence.JournalID()) || strings.Contains(ap.body, "Verify now") {
		t.Fatalf("evidence page without account:manage: %d\n%s", ap.status, ap.body)
	}
	if p := ab.post("/console/evidence/verify", url.Values{console.CSRFField: {ab.csrf}}); p.status != http.StatusForbidden || !strings.Contains(p.body, "account:manage") {
		t.Fatalf("verify without account:manage: %d\n%s", p.status, p.body)
	}
	if p := ab.get("/console/evidence/verify/events"); p.status != http.StatusForbidden {
		t.Fatalf("verify events without account:manage: %d", p.status)
	}
	if p := b.get("/console/evidence"); !strings.Contains(p.body, "No verification has run") {
		t.Fatalf("a refused verify started a run:\n%s", p.body)
	}

	// With the token: the run starts, its events end with the report. The
	// fresh journal has records and no checkpoint yet: a true finding.
	verify := func(run string) string {
		t.Helper()
		if p := b.post("/console/evidence/verify", url.Values{console.CSRFField: {b.csrf}}); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/evidence" {
			t.Fatalf("verify: %d %s", p.status, p.header.Get("Location"))
		}
		ev := events(b.get("/console/evidence/verify/events").body)
		if len(ev) < 2 || ev[len(ev)-1] != (event{"end", "finished"}) || ev[len(ev)-2].name != "verify" || !strings.Contains(ev[len(ev)-2].data, "Run "+run+":") {
			t.Fatalf("verify events: %+v", ev)
		}
		return ev[len(ev)-2].data
	}
	if last := verify("1"); !strings.Contains(last, "Run 1: findings.") || !strings.Contains(last, "<code>no_checkpoint</code> × 1") {
		t.Fatalf("run over an unsigned journal:\n%s", last)
	}
	ctx := context.Background()
	if err := s.a.Evidence.SyncOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.a.Evidence.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if last := verify("2"); !strings.Contains(last, "Run 2: clean.") {
		t.Fatalf("run over a signed journal:\n%s", last)
	}
	if p := b.get("/console/evidence"); !strings.Contains(p.body, "Run 2: clean.") || !strings.Contains(p.body, "Verify now") {
		t.Fatalf("evidence page after the run:\n%s", p.body)
	}
}

// runJob starts a background job in session id and returns its id.
func (s *server) runJob(t *testing.T, token, session, command string) string {
	t.Helper()
	out := s.call(t, token, "run_job", map[string]any{"project": s.project, "session_id": session, "command": command})
	var j struct {
		ID string `json:"job_id"`
	}
	if err := json.Unmarshal(out["job"], &j); err != nil || j.ID == "" {
		t.Fatalf("run_job: %s", out["job"])
	}
	return j.ID
}

func TestJobTailStreamsTheJobToItsEnd(t *testing.T) {
	s := start(t)
	alice, bob := s.token(t, "alice"), s.token(t, "bob")
	sess := s.startSession(t, alice, "run a job")
	other := s.startSession(t, alice, "another session")
	job := s.runJob(t, alice, sess, `printf 'one\n<b>two</b>\n'; printf 'warn\n' >&2`)
	b := s.browser(t)
	b.login(alice)
	tail := "/console/sessions/" + sess + "/jobs/" + job + "/tail"
	p := b.get(tail)
	if p.status != http.StatusOK || p.header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("tail: %d %s", p.status, p.body)
	}
	ev := events(p.body)
	var out, errOut, states strings.Builder
	lastRow := ""
	for _, e := range ev {
		switch e.name {
		case "row":
			lastRow = e.data
		case "stdout":
			out.WriteString(e.data)
		case "stderr":
			errOut.WriteString(e.data)
		case "state":
			states.WriteString(e.data)
		}
	}
	if ev[0].name != "reset" || ev[len(ev)-1] != (event{"end", "succeeded"}) {
		t.Fatalf("tail events: %+v", ev)
	}
	// Output is sent as it was stored (the page appends it as text).
	if out.String() != "one\n<b>two</b>\n" || errOut.String() != "warn\n" || !strings.Contains(states.String(), "succeeded") {
		t.Fatalf("stdout %q stderr %q states %q", out.String(), errOut.String(), states.String())
	}
	// The job's row above the tail gets the final state too, rendered as
	// the page renders it: its cells, the job's id and its exit code.
	if !strings.HasPrefix(lastRow, `<td><code class="id">`+job+`</code>`) || !strings.Contains(lastRow, `<span class="state state-succeeded">succeeded</span>`) ||
		!strings.Contains(lastRow, "<td>0</td>") || strings.Contains(lastRow, "<tr") {
		t.Fatalf("last row event %q", lastRow)
	}
	// The session page has the tail, closed for a finished job.
	if p := b.get("/console/sessions/" + sess); !strings.Contains(p.body, `data-live="`+tail+`"`) {
		t.Fatalf("session page lacks the tail:\n%s", p.body)
	}

	// Another owner, another session, no such job: one 404.
	bb := s.browser(t)
	bb.login(bob)
	for name, c := range map[string]struct {
		b    *client
		path string
	}{
		"another owner":     {bb, tail},
		"another session":   {b, "/console/sessions/" + other + "/jobs/" + job + "/tail"},
		"unknown job":       {b, "/console/sessions/" + sess + "/jobs/wc_job_00000000000000000000000000000000/tail"},
		"another's session": {bb, "/console/sessions/" + sess + "/jobs/nope/tail"},
	} {
		if p := c.b.get(c.path); p.status != http.StatusNotFound || strings.Contains(p.withoutCSRF(), "two") {
			t.Fatalf("%s: %d\n%s", name, p.status, p.body)
		}
	}
}

// An audit session that recorded more calls than it retains is trimmed;
// the audit pages say how many are retained of how many, and that the
// older ones were trimmed, instead of "the newest N of N".
func TestAuditCoverageSaysWhatWasTrimmed(t *testing.T) {
	s := start(t)
	op := s.token(t, "ops", auth.ScopeAccountManage, auth.ScopeProjectRead)
	const recorded = 2801 // the count; more than a session retains
	var evs []audit.Event
	for i := range recorded {
		evs = append(evs, audit.Event{EventView: audit.EventView{
			EventID: fmt.Sprintf("ev-%04d", i), SessionID: "audit-trimmed", StartedAt: int64(1_700_000_000 + i), Endpoint: "/api/tools/call",
			Status: audit.EventSuccess, HTTPStatus: 200,
			Summary: map[string]any{audit.SummaryErgonomics: map[string]any{"schema_version": 1, "tool_name": "read_project_file",
				"tool_category": "read", "success": true, "duration_ms": 3, "execution_state": audit.ExecCompleted}},
		}})
	}
	if err := s.a.Audit.Store().AppendEvents(context.Background(), evs, audit.MaxEventsPerSession, time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := s.a.Audit.Stats(context.Background(), "audit-trimmed", 0)
	if err != nil {
		t.Fatal(err)
	}
	retained := st.EventsAvailable
	if retained >= recorded || retained == 0 {
		t.Fatalf("the store retains %d of %d: not trimmed", retained, recorded)
	}
	b := s.browser(t)
	b.login(op)
	p := b.get("/console/audit/sessions/audit-trimmed")
	trimmed := recorded - retained // between 1,000 and 999,999: written with one comma
	want := fmt.Sprintf("Shown: the newest %d, oldest first, of the newest %d retained of 2,801 calls in this audit session: %d,%03d older calls were trimmed (an audit session keeps at most its newest 500).",
		audit.DefaultEventsLimit, retained, trimmed/1000, trimmed%1000)
	if p.status != http.StatusOK || !strings.Contains(p.body, want) {
		t.Fatalf("audit session page: %d, lacks %q:\n%s", p.status, want, p.body)
	}
	p = b.get("/console/audit")
	want = fmt.Sprintf("The newest %d of the %d retained model tool calls. Older calls were trimmed and are not counted: 1 of the 1 audit sessions listed below recorded 2,801 calls and retain only the newest 500 of each.",
		retained, retained)
	if p.status != http.StatusOK || !strings.Contains(p.body, want) {
		t.Fatalf("audit page: %d, lacks %q:\n%s", p.status, want, p.body)
	}

	// A session that was never trimmed says so.
	alice := s.token(t, "alice")
	s.auditCall(t, alice, "audit-whole", "work_on_project", map[string]any{"project": s.project, "instruction": "audited"})
	want = "Shown: the newest 1, oldest first, of the 1 call in this audit session (none trimmed)."
	if p := b.get("/console/audit/sessions/audit-whole"); !strings.Contains(p.body, want) {
		t.Fatalf("audit session page lacks %q:\n%s", want, p.body)
	}
}
