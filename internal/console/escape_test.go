package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestPlantedMarkupIsEscaped plants HTML and script in a session's title
// and instruction, a message, a changed file path, a job's purpose and
// command text, and checks every page and the export show it as text.
func TestPlantedMarkupIsEscaped(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, `<script>alert("title")</script><b>bold</b> fix it`)
	s.call(t, tok, "post_session_message", map[string]any{"session_id": id, "kind": "risk",
		"message": `<script>alert("message")</script><iframe src="https://evil.example"></iframe>`})
	path := `x<img src=y onerror=alert("path")>.txt`
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": path, "content": "<iframe src=\"diff\"></iframe>\n"})
	// A question (its answer form) and a pytest failure (its message)
	// carrying markup too.
	s.call(t, tok, "post_session_message", map[string]any{"session_id": id, "kind": "question", "message": `<svg onload=alert("question")>`})
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": "test_x.py",
		"content": "def test_x():\n    assert False, '<img src=y onerror=alert(\"failure\")>'\n"})
	s.callFailing(t, tok, "run_tests", map[string]any{"project": s.project, "session_id": id, "runner": "pytest"})
	s.call(t, tok, "run_process", map[string]any{"project": s.project, "session_id": id,
		"argv": []string{"echo", `<script>alert("output")</script>`}, "purpose": `<script>alert("purpose")</script>`})
	s.call(t, tok, "run_job", map[string]any{"project": s.project, "session_id": id,
		"command": `echo '<script>alert("job")</script>'`, "purpose": `<svg onload=alert("job")>`})

	b := s.browser(t)
	b.login(tok)
	pages := map[string]string{}
	for _, p := range []string{"/console/", "/console/sessions", "/console/sessions/" + id, "/console/sessions/" + id + "/timeline", "/console/sessions/" + id + "/export"} {
		pg := b.get(p)
		if pg.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", p, pg.status, pg.body)
		}
		pages[p] = pg.body
		assertNoInlineScript(t, p, pg.body)
		for _, raw := range []string{"<b>bold", "<iframe", "<img src=y", "<svg", `alert("`} {
			if strings.Contains(pg.body, raw) {
				t.Errorf("%s holds the planted %q unescaped", p, raw)
			}
		}
	}
	// The planted text is there, as text.
	sess := pages["/console/sessions/"+id]
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; fix it`,
		`&lt;script&gt;alert(&#34;message&#34;)&lt;/script&gt;&lt;iframe`,
		`x&lt;img src=y onerror=alert(&#34;path&#34;)&gt;.txt`,
		`&lt;svg onload=alert(&#34;job&#34;)&gt;`,
		`&lt;svg onload=alert(&#34;question&#34;)&gt;`,
		`<span class="add">&#43;&lt;iframe src=&#34;diff&#34;&gt;&lt;/iframe&gt;</span>`,
		`&lt;img src=y onerror=alert(&#34;failure&#34;)&gt;`,
	} {
		if !strings.Contains(sess, want) {
			t.Errorf("the session page lacks %s\n%s", want, changedRE.FindString(sess))
		}
	}
	if !strings.Contains(pages["/console/"], `&lt;script&gt;alert(&#34;title&#34;)`) {
		t.Error("the attention page lacks the (escaped) blocked session")
	}
	// The export carries no script element at all, and its own CSP.
	exp := b.get("/console/sessions/" + id + "/export")
	if scriptRE.MatchString(exp.body) {
		t.Errorf("the export holds a script element")
	}
	if exp.header.Get("Content-Security-Policy") != console.ExportContentSecurityPolicy ||
		!strings.Contains(exp.header.Get("Content-Disposition"), id+".html") {
		t.Errorf("export headers: %v", exp.header)
	}
	if strings.Contains(exp.body, `src="/console/`) || strings.Contains(exp.body, `href="/console/static`) {
		t.Error("the export loads files from the server")
	}
}

// TestHugePayloadsAreBounded stores an instruction event far beyond the
// ledger's bound and a board message at its bound: the ledger keeps the
// bounded text, and the pages show at most console.MaxShownChars of it.
func TestHugePayloadsAreBounded(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "bounded work")
	huge := strings.Repeat("é", 200_000)
	if _, _, err := s.a.Sessions.Append(context.Background(), id, workflow.Event{Kind: workflow.EventTaskInstruction, Text: huge,
		Facts: map[string]string{"big": strings.Repeat("f", 50_000)}}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.a.Sessions.Store().Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if n := utf8.RuneCountInString(last.Text); n > workflow.InstructionMaxChars+100 {
		t.Fatalf("the store kept %d characters of the instruction", n)
	}
	body := strings.Repeat("m", workflow.MessageMaxChars)
	s.call(t, tok, "post_session_message", map[string]any{"session_id": id, "kind": "note", "message": body})

	b := s.browser(t)
	b.login(tok)
	for _, p := range []string{"/console/sessions/" + id, "/console/sessions/" + id + "/timeline", "/console/sessions/" + id + "/export"} {
		pg := b.get(p)
		if pg.status != http.StatusOK {
			t.Fatalf("%s: %d", p, pg.status)
		}
		if strings.Contains(pg.body, strings.Repeat("m", console.MaxShownChars+1)) {
			t.Errorf("%s shows more than %d characters of the message", p, console.MaxShownChars)
		}
		if !strings.Contains(pg.body, "more bytes not shown") {
			t.Errorf("%s does not say that text was cut", p)
		}
		if strings.Contains(pg.body, strings.Repeat("f", workflow.FactMaxChars+1)) {
			t.Errorf("%s shows a fact beyond the store's bound", p)
		}
		if len(pg.body) > 200_000 {
			t.Errorf("%s weighs %d bytes", p, len(pg.body))
		}
	}
	if pg := b.get("/console/sessions/" + id + "/timeline"); strings.Contains(pg.body, strings.Repeat("é", console.RowTextChars+1)) {
		t.Errorf("a timeline row shows more than %d characters", console.RowTextChars)
	}
}
