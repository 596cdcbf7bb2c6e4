package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/workflow"
)

// MaxPageBytes is the weight bound of the heaviest console page (issue
// 17: ≤ 200 KB), checked for a session with a full 2,000-event tail.
const MaxPageBytes = 200_000

// MaxExportBytes bounds the export of that session: every retained row,
// brief, board and evidence in one file.
const MaxExportBytes = 3_000_000

// fullSession fills a session of token with a full tail: tool call pairs
// with facts, changed paths, some failures, instructions and validation,
// and a board of messages.
func fullSession(tb testing.TB, s *server, token string) string {
	tb.Helper()
	id := s.startSession(tb, token, "a long session: refactor the parser and keep the tests green")
	ctx := context.Background()
	at := time.Now().Add(-2 * time.Hour)
	var batch []workflow.Event
	for i := 0; len(batch) < workflow.TailLimit; i++ {
		call := fmt.Sprintf("call_%06d", i)
		at = at.Add(3 * time.Second)
		if i%100 == 0 {
			batch = append(batch, workflow.Event{Kind: workflow.EventTaskInstruction, At: at,
				Text: strings.Repeat("Continue with the next package and keep every test passing. ", 10)})
			continue
		}
		tool := []string{"read_files", "apply_text_edits", "run_process", "search_project_texts"}[i%4]
		batch = append(batch, workflow.Event{Kind: workflow.EventToolCallStarted, At: at, Tool: tool, CallID: call, Role: workflow.RoleBusiness, InvocationID: "inv_" + call})
		fin := workflow.Event{Kind: workflow.EventToolCallFinished, At: at.Add(1500 * time.Millisecond), Tool: tool, CallID: call, Role: workflow.RoleBusiness,
			InvocationID: "inv_" + call, Outcome: workflow.OutcomeOK, DurationMS: 1500,
			Facts: map[string]string{"exit_code": "0", "expectation": "success", "expectation_matched": "true", "program": "go"}}
		if tool == "apply_text_edits" {
			fin.ChangedPaths = []string{fmt.Sprintf("internal/parser/file_%d.go", i), fmt.Sprintf("internal/parser/file_%d_test.go", i)}
		}
		if i%37 == 0 {
			fin.Outcome, fin.ErrorKind, fin.Facts["exit_code"], fin.Facts["expectation_matched"] = workflow.OutcomeFailed, "command_failed", "1", "false"
		}
		batch = append(batch, fin)
	}
	batch = batch[:workflow.TailLimit]
	for len(batch) > 0 {
		n := min(len(batch), 200)
		if _, _, err := s.a.Sessions.Append(ctx, id, batch[:n]...); err != nil {
			tb.Fatal(err)
		}
		batch = batch[n:]
	}
	for i := range 60 {
		kind := []string{"note", "progress", "question", "guidance"}[i%4]
		s.call(tb, token, "post_session_message", map[string]any{"session_id": id, "kind": kind,
			"message": strings.Repeat(fmt.Sprintf("message %d: the parser change is on its way. ", i), 8)})
	}
	return id
}

func TestHeaviestPageWeight(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := fullSession(t, s, tok)
	b := s.browser(t)
	b.login(tok)
	heaviest, weight := "", 0
	for _, p := range []string{"/console/", "/console/sessions", "/console/sessions/" + id, "/console/sessions/" + id + "/timeline",
		"/console/sessions/" + id + "/timeline?page=19"} {
		pg := b.get(p)
		if pg.status != http.StatusOK {
			t.Fatalf("%s: %d", p, pg.status)
		}
		t.Logf("%s: %d bytes", p, len(pg.body))
		if len(pg.body) > weight {
			heaviest, weight = p, len(pg.body)
		}
	}
	if weight > MaxPageBytes {
		t.Errorf("the heaviest page %s weighs %d bytes, over %d", heaviest, weight, MaxPageBytes)
	}
	// The timeline is paged: console.TimelinePageSize rows a page.
	tl := b.get("/console/sessions/" + id + "/timeline").body
	m := regexp.MustCompile(`(\d+) rows over the retained tail`).FindStringSubmatch(tl)
	pages := regexp.MustCompile(`page 1 of (\d+)`).FindStringSubmatch(tl)
	if m == nil || pages == nil {
		t.Fatal("the timeline page has no row count or page count")
	}
	rows, _ := strconv.Atoi(m[1])
	if n, _ := strconv.Atoi(pages[1]); rows < workflow.TailLimit/2 || n != (rows+console.TimelinePageSize-1)/console.TimelinePageSize {
		t.Errorf("%d rows in %d pages", rows, n)
	}
	if got := strings.Count(tl, "<tr class="); got != console.TimelinePageSize {
		t.Errorf("the first timeline page has %d rows, want %d", got, console.TimelinePageSize)
	}
	exp := b.get("/console/sessions/" + id + "/export")
	t.Logf("export: %d bytes", len(exp.body))
	if exp.status != http.StatusOK || len(exp.body) > MaxExportBytes {
		t.Errorf("export: %d, %d bytes (bound %d)", exp.status, len(exp.body), MaxExportBytes)
	}
	if got := strings.Count(exp.body, "<tr class="); got < workflow.TailLimit/2 {
		t.Errorf("the export holds %d timeline rows", got)
	}
}

// BenchmarkSessionPage renders the session page of a session with a full
// 2,000-event tail through the real server (goal: < 100 ms).
func BenchmarkSessionPage(b *testing.B) {
	s := start(b)
	tok := s.token(b, "alice")
	id := fullSession(b, s, tok)
	br := s.browser(b)
	br.login(tok)
	req, _ := http.NewRequest("GET", s.base+"/console/sessions/"+id, nil)
	b.ResetTimer()
	for b.Loop() {
		p := br.do(req)
		if p.status != http.StatusOK {
			b.Fatalf("status %d", p.status)
		}
		b.SetBytes(int64(len(p.body)))
	}
}
