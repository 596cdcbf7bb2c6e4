//go:build unix

package console_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

func TestBrowserLoginAttentionSessionAndLiveJob(t *testing.T) {
	tab := newBrowser(t)
	dir := shots(t)
	s := start(t)
	alice := s.token(t, "alice")
	// A planted script in an instruction: it would set a global and the
	// title if it ever ran.
	planted := `Fix the parser <script>window.__planted = 1; document.title = "pwned"</script> and <img src=x onerror="window.__planted = 2">`
	sess := s.startSession(t, alice, planted)
	other := s.startSession(t, alice, "review the migration")
	s.call(t, alice, "post_session_message", map[string]any{"session_id": other, "kind": "risk", "message": "the migration may lose rows"})
	s.call(t, alice, "post_session_message", map[string]any{"session_id": other, "kind": "todo", "message": "add a rollback test"})
	ack := s.post(t, alice, other, map[string]any{"kind": "guidance", "message": "keep the old column", "requires_ack": true})
	p, err := s.a.Projects.Get(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(p.Root, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	job := s.runJob(t, alice, sess, `echo "tests started"; read word < gate; echo "tests finished: $word"; test "$word" = green`)

	// Sign in: the form posts the token, the console sets its cookie.
	must(t, tab, "sign in",
		chromedp.Navigate(s.base+"/console/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), alice),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)),
	)
	// The attention page lists both sessions, each linking to its page.
	must(t, tab, "attention page",
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/sessions/`+sess+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/sessions/`+other+`"]`)),
	)
	// Each blocked session says why, not just that it is blocked.
	main, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, why := range []string{
		"blocked: 1 open risk: “the migration may lose rows”",
		"1 open todo: “add a rollback test”",
		"blocked: 1 job of this session is not finished: running " + job + " (sh)",
	} {
		if !strings.Contains(main, why) {
			t.Fatalf("the attention page does not say %q:\n%s", why, main)
		}
	}
	screenshot(t, tab, dir, "console-attention.png")

	// The session page: the instruction is shown as text, its script
	// never ran; the running job's tail follows it live.
	must(t, tab, "session page",
		chromedp.Click(chromedp.CSS(`a[href="/console/sessions/`+sess+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`details.jobtail[open]`)),
	)
	why, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`ul.why`)))
	if err != nil || !strings.Contains(why, "blocked: 1 job of this session is not finished: running "+job) {
		t.Fatalf("the session page's why %q (%v)", why, err)
	}
	row := `document.querySelector('tr[data-live-slot="row"]').textContent`
	truthy(t, tab, "the job's row says running", row+`.includes("running")`)
	truthy(t, tab, "the job's first line", `document.querySelector('pre[data-live-slot="stdout"]').textContent.includes("tests started")`)
	ran, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.__planted !== undefined || document.title === "pwned"`))
	if err != nil || ran {
		t.Fatalf("the planted script ran (%v, %v)", ran, err)
	}
	shown, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.body.textContent.includes('<script>window.__planted = 1')`))
	if err != nil || !shown {
		t.Fatalf("the instruction is not shown as text (%v, %v)", shown, err)
	}
	// The running job's row is not coloured as failed.
	rowBackground := `getComputedStyle(document.querySelector('tr[data-live-slot="row"]')).backgroundColor`
	running, err := chromedp.Run(tab, chromedp.Evaluate[string](rowBackground))
	if err != nil {
		t.Fatal(err)
	}
	// Let the job fail and watch it end on the page.
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("red\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	truthy(t, tab, "the job's end", `document.querySelector('details.jobtail').getAttribute("data-live-state") === "ended"`)
	out, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`pre[data-live-slot="stdout"]`)))
	if err != nil || out != "tests started\ntests finished: red\n" {
		t.Fatalf("tail output %q (%v)", out, err)
	}
	state, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`details.jobtail [data-live-slot="state"]`)))
	if err != nil || !strings.Contains(state, "failed") || !strings.Contains(state, "exit code 1") {
		t.Fatalf("tail state %q (%v)", state, err)
	}
	// The job's row above the tail followed it: it says failed now, and
	// is coloured so without a reload.
	rowText, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`tr[data-live-slot="row"]`)))
	if err != nil || !strings.Contains(rowText, "failed") || strings.Contains(rowText, "running") || !strings.Contains(rowText, job) {
		t.Fatalf("job row %q (%v)", rowText, err)
	}
	failed, err := chromedp.Run(tab, chromedp.Evaluate[string](rowBackground))
	if err != nil || failed == running || failed != "rgb(253, 236, 234)" {
		t.Fatalf("the failed job's row background is %q (running: %q, %v)", failed, running, err)
	}
	must(t, tab, "scroll to the job", chromedp.ScrollIntoView(chromedp.CSS(`details.jobtail`)))
	screenshot(t, tab, dir, "console-job-tail.png")
	must(t, tab, "top of the session", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	screenshot(t, tab, dir, "console-session.png")

	// "Export as HTML" downloads one self-contained file of the session.
	export := download(t, tab, `a[href="/console/sessions/`+sess+`/export"]`)
	checkExport(t, export, sess)

	// The timeline pairs the calls.
	must(t, tab, "timeline",
		chromedp.Navigate(s.base+"/console/sessions/"+sess+"/timeline"),
		chromedp.WaitVisible(chromedp.CSS(`#h-timeline`)),
	)
	truthy(t, tab, "run_job in the timeline", `document.querySelector("main").textContent.includes("run_job")`)
	ran, err = chromedp.Run(tab, chromedp.Evaluate[bool](`window.__planted !== undefined`))
	if err != nil || ran {
		t.Fatalf("the planted script ran on the timeline (%v, %v)", ran, err)
	}
	screenshot(t, tab, dir, "console-timeline.png")

	// A person resolves the ACK-required message by clicking: the form
	// posts through the kernel and the page comes back with it resolved.
	form := `form[action="/console/sessions/` + other + `/messages/` + ack.ID + `/resolve"]`
	must(t, tab, "the other session's board",
		chromedp.Navigate(s.base+"/console/sessions/"+other),
		chromedp.WaitVisible(chromedp.CSS(form+` button`)),
	)
	why, err = chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(`ul.why`)))
	if err != nil || !strings.Contains(why, "1 message unresolved, ACK required: “keep the old column”") {
		t.Fatalf("the session page's why before resolving %q (%v)", why, err)
	}
	must(t, tab, "resolve by clicking",
		chromedp.SendKeys(chromedp.CSS(form+` input[name="resolution"]`), "kept until the backfill ran"),
		chromedp.ScrollIntoView(chromedp.CSS(form)),
	)
	screenshot(t, tab, dir, "console-board.png")
	resp, err := chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(form+` button`)))
	if err != nil || resp.Status != 200 || !strings.Contains(resp.URL, "/console/sessions/"+other) {
		t.Fatalf("resolve: %+v, %v", resp, err)
	}
	// A query, not a poll (see TestBrowserAuditChartsAndVerifyNow).
	must(t, tab, "the resolution on the page",
		chromedp.WaitVisible(chromedp.Search(`//article[@id="`+ack.ID+`"]//p[contains(., "Resolved: kept until the backfill ran")]`)))
	if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('`+form+`').length`)); err != nil || n != 0 {
		t.Fatalf("the resolved message still has its form (%d, %v)", n, err)
	}
	got := byID(s.messages(t, alice, other))[ack.ID]
	if got.Status != workflow.MessageResolved || got.Resolution != "kept until the backfill ran" {
		t.Fatalf("after the click: %+v", got)
	}
	if src := s.consoleSources(t, other, console.ResolveTool); !slices.Equal(src, []evidence.Source{evidence.SourceConsole}) {
		t.Fatalf("evidence sources of the resolution: %v", src)
	}
	screenshot(t, tab, dir, "console-board-resolved.png")
}

// TestBrowserDocsScreenshots (only with -console-docs) makes the README's
// two screenshots from a realistic scenario: a session blocked by a
// failing pytest run after a few calls, one waiting on an open todo and an
// ACK, and one running a job.
func TestBrowserDocsScreenshots(t *testing.T) {
	if !*consoleDocs {
		t.Skip("only with -console-docs")
	}
	tab := newBrowser(t)
	s := start(t)
	alice := s.token(t, "alice")
	proj := s.project

	// A session that fixed calc.add, ran the tests and is blocked by the
	// one still failing.
	fix := s.startSession(t, alice, "Fix the rounding in calc.add so the tests pass")
	calc := "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
	s.call(t, alice, "write_project_file", map[string]any{"project": proj, "session_id": fix, "path": "calc.py", "content": calc})
	s.call(t, alice, "write_project_file", map[string]any{"project": proj, "session_id": fix, "path": "calc.py", "expected_sha256": sha(calc),
		"content": strings.Replace(calc, "return a + b", "return round(a + b)", 1)})
	s.call(t, alice, "write_project_file", map[string]any{"project": proj, "session_id": fix, "path": "test_calc.py",
		"content": "from calc import add, mul\n\n\ndef test_add_ints():\n    assert add(2, 2) == 4\n\n\ndef test_add_floats():\n    assert add(0.1, 0.2) == 0.3\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"})
	s.call(t, alice, "list_project_files", map[string]any{"project": proj, "session_id": fix})
	s.call(t, alice, "read_files", map[string]any{"project": proj, "session_id": fix, "files": []map[string]any{{"path": "calc.py"}, {"path": "test_calc.py"}}})
	s.call(t, alice, "search_project_texts", map[string]any{"project": proj, "session_id": fix, "queries": []map[string]any{{"query": "round("}}})
	if kind := s.callFailing(t, alice, "run_tests", map[string]any{"project": proj, "session_id": fix, "runner": "pytest", "purpose": "unit tests after the rounding fix"}); kind != "validation_failed" {
		t.Fatalf("run_tests: %s", kind)
	}
	s.call(t, alice, "post_session_message", map[string]any{"session_id": fix, "kind": "risk",
		"message": "round() on the sum hides float error instead of fixing it; test_add_floats still fails"})

	// A session waiting on a person: an open todo and guidance to ACK.
	review := s.startSession(t, alice, "Review the 0042 migration before it ships")
	s.call(t, alice, "read_files", map[string]any{"project": proj, "session_id": review, "files": []map[string]any{{"path": "calc.py"}}})
	s.call(t, alice, "post_session_message", map[string]any{"session_id": review, "kind": "todo", "message": "Add a rollback test for the 0042 migration"})
	s.call(t, alice, "post_session_message", map[string]any{"session_id": review, "kind": "guidance", "requires_ack": true,
		"message": "Keep the old column until the backfill has run in production"})

	// A session running a long job.
	suite := s.startSession(t, alice, "Run the integration suite against the staging database")
	p, err := s.a.Projects.Get(context.Background(), proj)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(p.Root, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	s.call(t, alice, "run_job", map[string]any{"project": proj, "session_id": suite, "purpose": "integration suite",
		"command": `echo "collecting 184 integration tests"; read word < gate; echo "$word"`})
	defer func() {
		f, err := os.OpenFile(gate, os.O_WRONLY, 0)
		if err == nil {
			f.WriteString("done\n")
			f.Close()
		}
	}()

	must(t, tab, "sign in",
		chromedp.Navigate(s.base+"/console/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), alice),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/sessions/`+fix+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/sessions/`+review+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/console/sessions/`+suite+`"]`)),
	)
	docShot(t, tab, "console-attention.png")
	must(t, tab, "the blocked session",
		chromedp.Click(chromedp.CSS(`a[href="/console/sessions/`+fix+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`ul.why`)),
	)
	// Tall enough to show the brief and the timeline's newest calls.
	must(t, tab, "a taller window", chromedp.EmulateViewport(1280, 1700))
	docShot(t, tab, "console-session.png")
}
