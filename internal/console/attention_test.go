package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
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
	s.call(t, tok, "run_job", map[string]any{"project": s.project, "session_id": running, "command": "sleep 60"})
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
	want := map[string][]string{
		risky:   {"blocked"},
		changed: {"needs validation"},
		waiting: {"1 ACK-required message", "1 open todo"},
		running: {"blocked", "1 running job"},
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
	// Each row links to its session, which opens.
	for id := range want {
		if pg := b.get("/console/sessions/" + id); pg.status != http.StatusOK {
			t.Errorf("%s: %d", id, pg.status)
		}
	}
	// The list filters by state with the same projection.
	p = b.get("/console/sessions?state=blocked")
	got := regexp.MustCompile(`/console/sessions/(wc_sess_[0-9a-f]{32})"`).FindAllStringSubmatch(p.body, -1)
	ids := map[string]bool{}
	for _, m := range got {
		ids[m[1]] = true
	}
	if len(ids) != 2 || !ids[risky] || !ids[running] {
		t.Errorf("state=blocked lists %v, want the risky and running sessions", ids)
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
	for query, want := range map[string]int{"": 6, "project=" + url.QueryEscape(s.project): 6, "project=agent%3Alocal%3Aother": 0,
		"lifecycle=closed": 1, "lifecycle=active": 5, "state=closed": 1, "state=needs_validation": 1} {
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
