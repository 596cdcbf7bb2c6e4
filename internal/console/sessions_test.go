package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// messages lists session id's board through the API as token.
func (s *server) messages(t *testing.T, token, id string) []workflow.Message {
	t.Helper()
	out := s.call(t, token, "list_session_messages", map[string]any{"session_id": id, "limit": 100})
	var ms []workflow.Message
	if err := json.Unmarshal(out["messages"], &ms); err != nil {
		t.Fatalf("messages: %s", out["messages"])
	}
	return ms
}

func TestAnotherOwnersSessionIsNotFound(t *testing.T) {
	s := start(t)
	alice, bob := s.token(t, "alice"), s.token(t, "bob")
	mine := s.startSession(t, alice, "alice's own work")
	theirs := s.startSession(t, bob, "bob's private work")
	s.call(t, bob, "post_session_message", map[string]any{"session_id": theirs, "kind": "note", "message": "bob's note"})
	b := s.browser(t)
	b.login(alice)

	unknown := workflow.SessionIDPrefix + strings.Repeat("0", 32)
	var notFound string
	for _, id := range []string{theirs, unknown} {
		for _, path := range []string{"", "/timeline", "/export", "/bundle"} {
			p := b.get("/console/sessions/" + id + path)
			if p.status != http.StatusNotFound {
				t.Fatalf("%s%s: %d, want 404", id, path, p.status)
			}
			if strings.Contains(p.withoutCSRF(), "bob") {
				t.Fatalf("%s%s leaks bob's session:\n%s", id, path, p.body)
			}
			// The foreign and the unknown id get the same page.
			body := strings.ReplaceAll(p.body, id, "ID")
			if notFound == "" {
				notFound = body
			} else if body != notFound {
				t.Fatalf("%s%s: the 404 differs from another 404:\n%s\n---\n%s", id, path, body, notFound)
			}
		}
		p := b.post("/console/sessions/"+id+"/messages", url.Values{"kind": {"guidance"}, "message": {"from alice"}, console.CSRFField: {b.csrf}})
		if p.status != http.StatusNotFound {
			t.Fatalf("post to %s: %d, want 404", id, p.status)
		}
	}
	if ms := s.messages(t, bob, theirs); len(ms) != 1 {
		t.Fatalf("bob's board has %d messages after alice's refused post", len(ms))
	}
	// Lists and the home page show alice's session only.
	for _, path := range []string{"/console/sessions", "/console/sessions?lifecycle=active", "/console/sessions?state=ready_to_continue", "/console/"} {
		p := b.get(path)
		if p.status != http.StatusOK || strings.Contains(p.body, theirs) || strings.Contains(p.body, "bob's") {
			t.Fatalf("%s: %d, shows bob's session:\n%s", path, p.status, p.body)
		}
	}
	if p := b.get("/console/sessions"); !strings.Contains(p.body, mine) {
		t.Fatalf("the list lacks alice's session")
	}
	// Bob sees his own.
	bb := s.browser(t)
	bb.login(bob)
	if p := bb.get("/console/sessions/" + theirs); p.status != 200 || !strings.Contains(p.body, "bob&#39;s note") {
		t.Fatalf("bob's own session: %d", p.status)
	}
}

func TestScopesAreTheAPIs(t *testing.T) {
	s := start(t)
	owner := s.token(t, "alice")
	id := s.startSession(t, owner, "scoped work")
	// runtime:read alone reads no session through the API, nor here.
	rt := s.token(t, "alice", auth.ScopeRuntimeRead)
	b := s.browser(t)
	b.login(rt)
	for _, path := range []string{"/console/", "/console/sessions", "/console/sessions/" + id} {
		if p := b.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, "insufficient_scope") {
			t.Fatalf("%s with runtime:read: %d", path, p.status)
		}
	}
	// project:read reads, and may post (as through the API), until the
	// session is closed: then no form, and a post is refused by the
	// kernel's lifecycle check.
	ro := s.token(t, "alice", auth.ScopeProjectRead)
	r := s.browser(t)
	r.login(ro)
	action := `action="/console/sessions/` + id + `/messages"`
	q := s.post(t, owner, id, map[string]any{"kind": "question", "message": "which one?"})
	resolve := `action="/console/sessions/` + id + `/messages/` + q.ID + `/resolve"`
	if p := r.get("/console/sessions/" + id); p.status != 200 || !strings.Contains(p.body, action) || !strings.Contains(p.body, resolve) {
		t.Fatalf("project:read viewer: %d, post form shown=%v, resolve form shown=%v", p.status, strings.Contains(p.body, action), strings.Contains(p.body, resolve))
	}
	s.call(t, owner, "close_session", map[string]any{"session_id": id})
	p := r.get("/console/sessions/" + id)
	if p.status != 200 || strings.Contains(p.body, action) || strings.Contains(p.body, `/resolve"`) || strings.Contains(p.body, `/answer"`) {
		t.Fatalf("closed session: %d, a board form is shown", p.status)
	}
	p = r.post("/console/sessions/"+id+"/messages/"+q.ID+"/resolve", url.Values{console.CSRFField: {r.csrf}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "session_closed") {
		t.Fatalf("resolve in a closed session: %d\n%s", p.status, p.body)
	}
	p = r.post("/console/sessions/"+id+"/messages", url.Values{"kind": {"todo"}, "message": {"do it"}, console.CSRFField: {r.csrf}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "session_closed") {
		t.Fatalf("post to a closed session: %d\n%s", p.status, p.body)
	}
	if ms := s.messages(t, owner, id); len(ms) != 1 || ms[0].Status != workflow.MessageOpen {
		t.Fatalf("messages after a refused post and resolution: %+v", ms)
	}
}

func TestPostNeedsTheSessionsCSRFToken(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "guided work")
	b := s.browser(t)
	b.login(tok)
	other := s.browser(t)
	other.login(tok) // another console session of the same token
	form := func(csrf string) url.Values {
		v := url.Values{"kind": {"guidance"}, "message": {"use the new parser"}}
		if csrf != "" {
			v.Set(console.CSRFField, csrf)
		}
		return v
	}
	for name, csrf := range map[string]string{"missing": "", "wrong": "AAAA", "another session's": other.csrf} {
		p := b.post("/console/sessions/"+id+"/messages", form(csrf))
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Fatalf("%s CSRF token: %d\n%s", name, p.status, p.body)
		}
		if ms := s.messages(t, tok, id); len(ms) != 0 {
			t.Fatalf("%s CSRF token: %d messages posted", name, len(ms))
		}
	}
	// The right token posts, as the operator, through the kernel.
	p := b.post("/console/sessions/"+id+"/messages", form(b.csrf))
	if p.status != http.StatusSeeOther {
		t.Fatalf("post: %d\n%s", p.status, p.body)
	}
	ms := s.messages(t, tok, id)
	if len(ms) != 1 || ms[0].Kind != workflow.MessageGuidance || ms[0].Body != "use the new parser" || ms[0].AuthorSessionID != "" ||
		len(ms[0].Tags) != 1 || ms[0].Tags[0] != console.OperatorTag {
		t.Fatalf("posted %+v", ms)
	}
	// The call is in the ledger as post_session_message and in the
	// evidence journal with source console.
	evs, err := s.a.Sessions.Store().Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		found = found || e.Kind == workflow.EventToolCallFinished && e.Tool == console.PostTool && e.Outcome == workflow.OutcomeOK
	}
	if !found {
		t.Fatal("no finished post_session_message in the ledger")
	}
	sources := s.consoleSources(t, id, console.PostTool)
	if len(sources) != 1 || sources[0] != evidence.SourceConsole {
		t.Fatalf("evidence sources of the post: %v", sources)
	}
	// The evidence bundle downloads and verifies offline.
	if _, err := s.a.Evidence.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	bun := b.get("/console/sessions/" + id + "/bundle")
	if bun.status != http.StatusOK || !strings.Contains(bun.header.Get("Content-Disposition"), id+".evidence.json") {
		t.Fatalf("bundle: %d %v", bun.status, bun.header)
	}
	rep, err := evidence.VerifyBundle([]byte(bun.body))
	if err != nil || len(rep.Kinds()) != 0 || rep.Records == 0 || rep.OK != rep.Records {
		t.Fatalf("the downloaded bundle does not verify: %v %+v", err, rep)
	}
	if sp := b.get("/console/sessions/" + id); !strings.Contains(sp.body, `href="/console/sessions/`+id+`/bundle"`) {
		t.Error("the session page has no bundle link")
	}
	// A todo, and an over-long body refused with the board's error kind.
	if p := b.post("/console/sessions/"+id+"/messages", url.Values{"kind": {"todo"}, "message": {"write the test"}, console.CSRFField: {b.csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("todo: %d", p.status)
	}
	long := strings.Repeat("x", workflow.MessageMaxChars+1)
	for name, v := range map[string]url.Values{
		"too long":  {"kind": {"todo"}, "message": {long}},
		"empty":     {"kind": {"todo"}, "message": {"  "}},
		"bad kind":  {"kind": {"decision"}, "message": {"x"}},
		"bad reply": {"kind": {"todo"}, "message": {"x"}, "reply_to": {"wc_msg_nope"}},
	} {
		v.Set(console.CSRFField, b.csrf)
		p := b.post("/console/sessions/"+id+"/messages", v)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid_arguments") {
			t.Fatalf("%s: %d\n%s", name, p.status, p.body)
		}
	}
	if ms := s.messages(t, tok, id); len(ms) != 2 {
		t.Fatalf("%d messages after refused posts, want 2", len(ms))
	}
}
