package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/workflow"
)

// attentionRows maps each session id on the attention page to its row's
// text.
func attentionRows(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[0]
	}
	return out
}

var whyRE = regexp.MustCompile(`(?s)<dt>Why</dt><dd><ul class="reasons why">.*?</ul>`)

var rowRE = regexp.MustCompile(`(?s)<tr>\s*<td><a href="/console/sessions/(wc_sess_[0-9a-f]{32})">.*?</tr>`)

func TestAttentionListsWhatWaits(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	bob := s.token(t, "bob")
	quiet := s.startSession(t, tok, "quiet session")
	risky := s.startSession(t, tok, "risky session")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": risky, "kind": "risk", "message": "the migration may lose rows"})
	changed := s.startSession(t, tok, "changed session")
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": changed, "path": "a.txt", "content": "a\n"})
	waiting := s.startSession(t, tok, "waiting session")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": waiting, "kind": "todo", "message": "add the test"})
	s.call(t, tok, "post_session_message", map[string]any{"session_id": waiting, "kind": "guidance", "message": "ack this", "requires_ack": true})
	running := s.startSession(t, tok, "running session")
	runJob := s.runJob(t, tok, running, "sleep 60")
	failing := s.startSession(t, tok, "failing session")
	s.failingPytest(t, tok, failing)
	claimed := s.startSession(t, tok, "claimed session")
	// Bob claims alice's session as his recorder: an invalid claim on it.
	body, _ := json.Marshal(map[string]any{"tool": "list_sessions", "arguments": map[string]any{"project": s.project}, "recording_session_id": claimed})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bob)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := s.a.Evidence.SyncOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}

	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/")
	if p.status != http.StatusOK {
		t.Fatalf("attention: %d", p.status)
	}
	rows := attentionRows(t, p.body)
	// Each row names the cause, not just the state.
	want := map[string][]string{
		risky:   {"blocked: 1 open risk: “the migration may lose rows”"},
		changed: {"needs validation: 1 changed path not validated since the change: a.txt"},
		waiting: {"1 message unresolved, ACK required: “ack this”", "1 open todo: “add the test”"},
		running: {"blocked: 1 job of this session is not finished: running " + runJob + " (sh)"},
		failing: {"blocked: validation failed; 1 failing test not yet proven passing: test_calc.test_add"},
		claimed: {"1 invalid claim in the last day"},
	}
	for id, reasons := range want {
		row, ok := rows[id]
		if !ok {
			t.Errorf("%s is not on the attention page", id)
			continue
		}
		for _, r := range reasons {
			if !strings.Contains(row, "<li>"+r+"</li>") {
				t.Errorf("%s: row lacks %q:\n%s", id, r, row)
			}
		}
	}
	if _, ok := rows[quiet]; ok {
		t.Errorf("the quiet session is on the attention page")
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	// Each row links to its session, which opens and names the same
	// causes in its brief (the invalid claim is the attention page's).
	for id, reasons := range want {
		pg := b.get("/console/sessions/" + id)
		if pg.status != http.StatusOK {
			t.Errorf("%s: %d", id, pg.status)
			continue
		}
		if id == claimed {
			if strings.Contains(pg.body, "<dt>Why</dt>") {
				t.Errorf("%s: the session page says why, but nothing in its brief calls for it", id)
			}
			continue
		}
		why := whyRE.FindString(pg.body)
		for _, r := range reasons {
			if !strings.Contains(why, "<li>"+r+"</li>") {
				t.Errorf("%s: the session page's why lacks %q:\n%s", id, r, why)
			}
		}
	}
	// The list filters by state with the same projection.
	p = b.get("/console/sessions?state=blocked")
	got := regexp.MustCompile(`/console/sessions/(wc_sess_[0-9a-f]{32})"`).FindAllStringSubmatch(p.body, -1)
	ids := map[string]bool{}
	for _, m := range got {
		ids[m[1]] = true
	}
	if len(ids) != 3 || !ids[risky] || !ids[running] || !ids[failing] {
		t.Errorf("state=blocked lists %v, want the risky, running and failing sessions", ids)
	}
	listed := func(query string) int {
		p := b.get("/console/sessions?" + query)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", query, p.status)
		}
		ids := map[string]bool{}
		for _, m := range regexp.MustCompile(`/console/sessions/(wc_sess_[0-9a-f]{32})"`).FindAllStringSubmatch(p.body, -1) {
			ids[m[1]] = true
		}
		return len(ids)
	}
	s.call(t, tok, "close_session", map[string]any{"session_id": quiet})
	for query, want := range map[string]int{"": 7, "project=" + url.QueryEscape(s.project): 7, "project=agent%3Alocal%3Aother": 0,
		"lifecycle=closed": 1, "lifecycle=active": 6, "state=closed": 1, "state=needs_validation": 1} {
		if got := listed(query); got != want {
			t.Errorf("sessions?%s lists %d, want %d", query, got, want)
		}
	}
	if p := b.get("/console/sessions?lifecycle=nope"); p.status != http.StatusBadRequest {
		t.Errorf("lifecycle=nope: %d", p.status)
	}
	if p := b.get("/console/sessions?state=nope"); p.status != http.StatusBadRequest {
		t.Errorf("state=nope: %d", p.status)
	}
	if p := b.get("/console/sessions?offset=-1"); p.status != http.StatusBadRequest {
		t.Errorf("offset=-1: %d", p.status)
	}
	if p := b.get("/console/sessions/" + risky + "/timeline?page=x"); p.status != http.StatusBadRequest {
		t.Errorf("page=x: %d", p.status)
	}
}

// The attention page judges only the AttentionScanSessions most recently
// updated sessions and says so, naming how many more there are; an older
// session that needs attention is not listed.
func TestAttentionSaysWhatItJudged(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	old := s.startSession(t, tok, "an old session with a risk")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": old, "kind": "risk", "message": "an old risk"})
	for i := range console.AttentionScanSessions {
		s.startSession(t, tok, fmt.Sprintf("newer session %d", i))
	}
	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/")
	if p.status != http.StatusOK {
		t.Fatalf("attention: %d", p.status)
	}
	want := fmt.Sprintf("Judged: the %d most recently updated of your %d active sessions (1 more not judged here: see <a href=\"/console/sessions?lifecycle=active\">the sessions list</a>); each on its handoff brief over its retained ledger tail (at most %d events)",
		console.AttentionScanSessions, console.AttentionScanSessions+1, workflow.TailLimit)
	if !strings.Contains(p.body, want) {
		t.Fatalf("the page does not say what it judged (%q):\n%s", want, p.body)
	}
	if _, listed := attentionRows(t, p.body)[old]; listed {
		t.Fatalf("the unjudged old session is listed")
	}
}

// rowOrder lists the session ids of the attention page's rows in order.
func rowOrder(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// The attention list is ordered by severity (blocked, then needs
// validation, then waiting messages), then most recently updated first:
// the sessions are made so that recency alone would list them the other
// way round.
func TestAttentionOrderedBySeverityThenRecency(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	olderBlocked := s.startSession(t, tok, "older blocked")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": olderBlocked, "kind": "risk", "message": "an old risk"})
	validation := s.startSession(t, tok, "needs validation")
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": validation, "path": "b.txt", "content": "b\n"})
	waiting := s.startSession(t, tok, "waits on a message")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": waiting, "kind": "guidance", "message": "read me", "requires_ack": true})
	newerBlocked := s.startSession(t, tok, "newer blocked")
	s.call(t, tok, "post_session_message", map[string]any{"session_id": newerBlocked, "kind": "risk", "message": "a new risk"})

	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/")
	if p.status != http.StatusOK {
		t.Fatalf("attention: %d", p.status)
	}
	got := rowOrder(p.body)
	want := []string{newerBlocked, olderBlocked, validation, waiting}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v (newer blocked, older blocked, needs validation, waiting)", got, want)
	}
}

// A message that was ACKed but not resolved is still counted and named
// "unresolved, ACK required", never as waiting for an ACK; resolving it
// takes it off the page.
func TestAckedUnresolvedMessageWording(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "acked but open")
	out := s.call(t, tok, "post_session_message", map[string]any{"session_id": id, "kind": "guidance", "message": "keep the API stable", "requires_ack": true})
	var m workflow.Message
	if err := json.Unmarshal(out["message"], &m); err != nil {
		t.Fatal(err)
	}
	// The session ACKs it as its own recorder, over the REST envelope.
	body, _ := json.Marshal(map[string]any{"tool": "list_session_messages", "arguments": map[string]any{"session_id": id, "limit": 1},
		"recording_session_id": id, "ack_session_message_ids": []string{m.ID}})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Success   bool
		Attention struct {
			AckAccepted []string `json:"ack_accepted"`
		} `json:"session_attention"`
	}
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || !r.Success || !slices.Equal(r.Attention.AckAccepted, []string{m.ID}) {
		t.Fatalf("the ACK was not accepted: %v %+v", err, r)
	}

	b := s.browser(t)
	b.login(tok)
	want := "<li>1 message unresolved, ACK required: “keep the API stable”</li>"
	for _, path := range []string{"/console/", "/console/sessions/" + id} {
		p := b.get(path)
		if !strings.Contains(p.body, want) {
			t.Errorf("%s lacks %q:\n%s", path, want, p.body)
		}
		if strings.Contains(p.body, "waits for an ACK") {
			t.Errorf("%s says the ACKed message waits for an ACK", path)
		}
	}
	s.call(t, tok, "resolve_session_message", map[string]any{"session_id": id, "message_id": m.ID})
	if p := b.get("/console/"); strings.Contains(p.body, "ACK required:") {
		t.Errorf("the resolved message is still named:\n%s", p.body)
	}
}
