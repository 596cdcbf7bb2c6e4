package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// post posts a message to session id's board through the API as token
// and returns it.
func (s *server) post(t *testing.T, token, id string, args map[string]any) workflow.Message {
	t.Helper()
	args["session_id"] = id
	out := s.call(t, token, "post_session_message", args)
	var m workflow.Message
	if err := json.Unmarshal(out["message"], &m); err != nil {
		t.Fatalf("message: %s", out["message"])
	}
	return m
}

// byID indexes messages by id.
func byID(ms []workflow.Message) map[string]workflow.Message {
	out := map[string]workflow.Message{}
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}

// consoleSources lists the evidence sources of session id's records of
// tool, newest first.
func (s *server) consoleSources(t *testing.T, id, tool string) []evidence.Source {
	t.Helper()
	if err := s.a.Evidence.SyncOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := s.a.Evidence.SessionRecords(context.Background(), id, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []evidence.Source
	for _, r := range recs {
		if r.Record.Tool == tool {
			out = append(out, r.Record.Source)
		}
	}
	return out
}

// The signed-in person answers an agent's question and resolves an
// ACK-required message from the session page's board: each a tool call
// through the kernel, recorded with source console.
func TestResolveAndAnswerFromTheBoard(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "asks and waits")
	q := s.post(t, tok, id, map[string]any{"kind": "question", "message": "Which Go version do we target?"})
	ack := s.post(t, tok, id, map[string]any{"kind": "guidance", "message": "Keep the API stable", "requires_ack": true})
	note := s.post(t, tok, id, map[string]any{"kind": "note", "message": "started"})

	b := s.browser(t)
	b.login(tok)
	// The attention page says what waits for the person.
	row := attentionRows(t, b.get("/console/").body)[id]
	for _, want := range []string{"<li>1 open question: “Which Go version do we target?”</li>", "<li>1 message unresolved, ACK required: “Keep the API stable”</li>"} {
		if !strings.Contains(row, want) {
			t.Errorf("the attention row lacks %q:\n%s", want, row)
		}
	}
	p := b.get("/console/sessions/" + id)
	answer := `action="/console/sessions/` + id + `/messages/` + q.ID + `/answer"`
	resolve := func(m string) string { return `action="/console/sessions/` + id + `/messages/` + m + `/resolve"` }
	// Every open message can be resolved; only the question answered.
	for _, want := range []string{answer, resolve(q.ID), resolve(ack.ID), resolve(note.ID)} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the session page lacks the form %s", want)
		}
	}
	if n := strings.Count(p.body, `/answer"`); n != 1 {
		t.Errorf("%d answer forms, want 1 (the question's)", n)
	}

	// The answer: a reply of kind answer, tagged operator, without an
	// author; the question stays open (decision 0052).
	p = b.post("/console/sessions/"+id+"/messages/"+q.ID+"/answer", url.Values{"message": {"  Go 1.24  "}, console.CSRFField: {b.csrf}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/sessions/"+id+"#"+q.ID {
		t.Fatalf("answer: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	ms := s.messages(t, tok, id)
	var answers []workflow.Message
	for _, m := range ms {
		if m.Kind == workflow.MessageAnswer {
			answers = append(answers, m)
		}
	}
	if len(answers) != 1 || answers[0].ReplyTo != q.ID || answers[0].Body != "Go 1.24" || answers[0].AuthorSessionID != "" ||
		!slices.Equal(answers[0].Tags, []string{console.OperatorTag}) {
		t.Fatalf("answers %+v", answers)
	}
	if byID(ms)[q.ID].Status != workflow.MessageOpen {
		t.Fatalf("answering resolved the question")
	}

	// The resolution, with its note.
	p = b.post("/console/sessions/"+id+"/messages/"+ack.ID+"/resolve", url.Values{"resolution": {"done in v2"}, console.CSRFField: {b.csrf}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/sessions/"+id+"#"+ack.ID {
		t.Fatalf("resolve: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	got := byID(s.messages(t, tok, id))[ack.ID]
	if got.Status != workflow.MessageResolved || got.Resolution != "done in v2" {
		t.Fatalf("resolved message %+v", got)
	}
	// Resolved: no form on it any more, and it no longer waits.
	p = b.get("/console/sessions/" + id)
	if strings.Contains(p.body, resolve(ack.ID)) || strings.Contains(p.body, "ACK required:") {
		t.Errorf("the resolved message still has its form or is still named")
	}
	if !strings.Contains(p.body, "Resolved: done in v2") {
		t.Errorf("the resolution is not shown")
	}

	// Both calls are in the ledger and in the evidence journal with
	// source console.
	evs, err := s.a.Sessions.Store().Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	finished := map[string]int{}
	for _, e := range evs {
		if e.Kind == workflow.EventToolCallFinished && e.Outcome == workflow.OutcomeOK {
			finished[e.Tool]++
		}
	}
	if finished[console.ResolveTool] != 1 {
		t.Errorf("%d finished %s in the ledger, want 1", finished[console.ResolveTool], console.ResolveTool)
	}
	if src := s.consoleSources(t, id, console.ResolveTool); !slices.Equal(src, []evidence.Source{evidence.SourceConsole}) {
		t.Errorf("evidence sources of the resolution: %v", src)
	}
	// Four posts: three through the API, then the answer from the console.
	if src := s.consoleSources(t, id, console.PostTool); !slices.Equal(src, []evidence.Source{evidence.SourceConsole, evidence.SourceREST, evidence.SourceREST, evidence.SourceREST}) {
		t.Errorf("evidence sources of the posts: %v", src)
	}

	// Refused, each with the tool's or the console's error, and nothing
	// changes: an answer to what is not an open question, an empty
	// answer, an unknown or malformed message, a resolution note over the
	// bound.
	before := s.messages(t, tok, id)
	for name, c := range map[string]struct {
		path string
		form url.Values
		kind string
	}{
		"answer a note":         {"/messages/" + note.ID + "/answer", url.Values{"message": {"x"}}, "invalid_arguments"},
		"answer a resolved one": {"/messages/" + ack.ID + "/answer", url.Values{"message": {"x"}}, "invalid_arguments"},
		"empty answer":          {"/messages/" + q.ID + "/answer", url.Values{"message": {"  "}}, "invalid_arguments"},
		"answer a bad id":       {"/messages/wc_msg_nope/answer", url.Values{"message": {"x"}}, "invalid_arguments"},
		"resolve unknown":       {"/messages/wc_msg_" + strings.Repeat("0", 32) + "/resolve", nil, "unknown_message_id"},
		"resolve a bad id":      {"/messages/nope/resolve", nil, "invalid_arguments"},
		"long note":             {"/messages/" + q.ID + "/resolve", url.Values{"resolution": {strings.Repeat("x", workflow.ResolutionMaxChars+1)}}, "invalid_arguments"},
	} {
		if c.form == nil {
			c.form = url.Values{}
		}
		c.form.Set(console.CSRFField, b.csrf)
		p := b.post("/console/sessions/"+id+c.path, c.form)
		if p.status < 400 || !strings.Contains(p.body, c.kind) {
			t.Errorf("%s: %d, want %s\n%s", name, p.status, c.kind, p.body)
		}
	}
	if after := s.messages(t, tok, id); !reflect.DeepEqual(before, after) {
		t.Errorf("refused actions changed the board:\n%+v\n%+v", before, after)
	}
}

// Without the console session's own CSRF token, an answer and a
// resolution are refused 403 before anything happens: the board and the
// ledger are unchanged. Another owner's session is not found.
func TestBoardActionsNeedTheCSRFToken(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "asks")
	q := s.post(t, tok, id, map[string]any{"kind": "question", "message": "Which database?", "requires_ack": true})
	b := s.browser(t)
	b.login(tok)
	other := s.browser(t)
	other.login(tok) // another console session of the same token
	ctx := context.Background()
	before := s.messages(t, tok, id)
	evsBefore, err := s.a.Sessions.Store().Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]url.Values{
		"/messages/" + q.ID + "/answer":  {"message": {"Postgres"}},
		"/messages/" + q.ID + "/resolve": {"resolution": {"answered"}},
	}
	for path, form := range actions {
		for name, csrf := range map[string]string{"missing": "", "wrong": "AAAA", "another session's": other.csrf} {
			v := url.Values{}
			for k, vs := range form {
				v[k] = vs
			}
			if csrf != "" {
				v.Set(console.CSRFField, csrf)
			}
			p := b.post("/console/sessions/"+id+path, v)
			if p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
				t.Fatalf("%s with %s CSRF token: %d\n%s", path, name, p.status, p.body)
			}
		}
	}
	if after := s.messages(t, tok, id); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused actions changed the board:\n%+v\n%+v", before, after)
	}
	// The ledger holds only the list calls above, no post or resolution.
	evs, err := s.a.Sessions.Store().Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[len(evsBefore):] {
		if e.Tool == console.PostTool || e.Tool == console.ResolveTool {
			t.Fatalf("a refused action reached the ledger: %+v", e)
		}
	}

	// Bob's console cannot act on alice's session, with his own valid
	// token: not found, nothing changes.
	bob := s.browser(t)
	bob.login(s.token(t, "bob"))
	for path, form := range actions {
		v := url.Values{console.CSRFField: {bob.csrf}}
		for k, vs := range form {
			v[k] = vs
		}
		if p := bob.post("/console/sessions/"+id+path, v); p.status != http.StatusNotFound {
			t.Fatalf("bob %s: %d\n%s", path, p.status, p.body)
		}
	}
	if after := s.messages(t, tok, id); !reflect.DeepEqual(before, after) {
		t.Fatalf("another owner's actions changed the board:\n%+v\n%+v", before, after)
	}
	// With the right token it works (the test can tell).
	if p := b.post("/console/sessions/"+id+"/messages/"+q.ID+"/resolve", url.Values{console.CSRFField: {b.csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("resolve with the right token: %d\n%s", p.status, p.body)
	}
	if byID(s.messages(t, tok, id))[q.ID].Status != workflow.MessageResolved {
		t.Fatal("not resolved with the right token")
	}
}
