package console_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// The browser tests drive the console in real headless Chromium (Debian's
// chromium, through the DevTools protocol with chromedp). Without chromium
// they skip, unless WEBCODEX_REQUIRE_CHROMIUM=1 (set by .ci/run), when they
// fail. Screenshots go to $WEBCODEX_SCREENSHOTS (kept) or a temporary
// directory. With -console-docs, TestBrowserDocsScreenshots builds a
// realistic scenario and writes the README's two screenshots into docs/.

var consoleDocs = flag.Bool("console-docs", false, "run TestBrowserDocsScreenshots: write docs/console-attention.png and docs/console-session.png")

// chromium returns the browser's path, or skips (fails when required).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("WEBCODEX_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WEBCODEX_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is required (WEBCODEX_REQUIRE_CHROMIUM=1) but not found: apt-get install -y chromium, or set WEBCODEX_CHROMIUM")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium); the browser tests need it")
	return ""
}

// newBrowser starts a fresh headless chromium (its own profile directory,
// no network beyond the test server) and returns a tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 960),
	)
	// A bound on the whole browser session, so that a broken page fails
	// the test instead of hanging it; no step waits for a time.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(tcancel)
	if err := chromedp.Do(tab); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// shots is where screenshots go.
func shots(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("WEBCODEX_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, tab context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// must runs steps in the tab and fails the test with what on an error.
func must(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// truthy waits (without a timeout of its own) until expr is true in the
// page.
func truthy(t *testing.T, tab context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

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

// download clicks the link at selector in tab and returns the file the
// browser saved.
func download(t *testing.T, tab context.Context, selector string) []byte {
	t.Helper()
	dir := t.TempDir()
	progress := chromedp.Events(tab, browser.DownloadProgress)
	enable := true
	must(t, tab, "download "+selector,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &enable,
			})
			return err
		}),
		chromedp.Click(chromedp.CSS(selector)),
	)
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download %s: %v", selector, err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCanceled:
			t.Fatalf("download %s was cancelled", selector)
		case browser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("download %s: no completed download", selector)
	return nil
}

var (
	// tagRE finds the markup tags of a file (escaped text has no "<").
	tagRE = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	// refRE finds, in a tag, an attribute that refers to something
	// other than a #fragment of the file itself.
	refRE   = regexp.MustCompile(`(?i)\s(?:src|href|action|formaction|srcset|poster|data|background)\s*=\s*["']?\s*[^"'#\s>]`)
	styleRE = regexp.MustCompile(`(?s)<style>(.+?)</style>`)
)

// checkExport checks that b is one self-contained HTML file of session
// id: no script, nothing referenced from outside, its CSS inline, the
// planted markup escaped.
func checkExport(t *testing.T, b []byte, id string) {
	t.Helper()
	doc := string(b)
	if !strings.HasPrefix(doc, "<!doctype html>") || !strings.HasSuffix(strings.TrimSpace(doc), "</html>") {
		t.Fatalf("export is not one HTML document: %.200q", doc)
	}
	if scriptRE.MatchString(doc) || handlerRE.MatchString(doc) {
		t.Fatalf("export holds a script or an event handler: %s", scriptRE.FindString(doc)+handlerRE.FindString(doc))
	}
	for _, tag := range tagRE.FindAllString(doc, -1) {
		if refRE.MatchString(tag) {
			t.Fatalf("export refers outside itself: %s", tag)
		}
	}
	if css := styleRE.FindAllStringSubmatch(doc, -1); len(css) != 1 || strings.Contains(css[0][1], "url(") || strings.Contains(css[0][1], "@import") {
		t.Fatalf("export CSS is not one inline <style> that loads nothing")
	}
	if strings.Contains(doc, "/console") || strings.Contains(doc, "http://") || strings.Contains(doc, "https://") {
		t.Fatalf("export names a server path or URL")
	}
	if m := styleRE.FindStringSubmatch(doc); m == nil || !strings.Contains(m[1], ".card") {
		t.Fatalf("export has no inline CSS")
	}
	if !strings.Contains(doc, "&lt;script&gt;window.__planted = 1") || !strings.Contains(doc, "&lt;img src=x onerror=") {
		t.Fatalf("export does not show the planted markup escaped")
	}
	if !strings.Contains(doc, id) {
		t.Fatalf("export does not name session %s", id)
	}
}

func TestBrowserAuditChartsAndVerifyNow(t *testing.T) {
	tab := newBrowser(t)
	dir := shots(t)
	s := start(t)
	op := s.token(t, "ops", auth.ScopeAccountManage, auth.ScopeProjectRead)
	alice := s.token(t, "alice")
	s.auditCall(t, alice, "audit-browser", "work_on_project", map[string]any{"project": s.project, "instruction": "audited"})
	s.auditCall(t, alice, "audit-browser", "work_on_project", map[string]any{"project": s.project, "bogus": 1})
	s.auditCall(t, alice, "audit-browser", "list_sessions", map[string]any{"project": s.project})
	ctx := context.Background()
	if err := s.a.Evidence.SyncOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.a.Evidence.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, tab, "sign in",
		chromedp.Navigate(s.base+"/console/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), op),
		chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/console/audit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart`)),
	)
	charts, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart").length`))
	if err != nil || charts != 4 {
		t.Fatalf("%d charts (%v)", charts, err)
	}
	screenshot(t, tab, dir, "console-audit.png")

	// Verify now: the POST starts the run, the page follows it to its end.
	must(t, tab, "evidence page",
		chromedp.Navigate(s.base+"/console/evidence"),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/console/evidence/verify"] button`)),
	)
	// RunResponse returns once the navigation the click starts (the POST
	// and its redirect) has loaded.
	resp, err := chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS(`form[action="/console/evidence/verify"] button`)))
	if err != nil || resp.Status != 200 || !strings.HasSuffix(resp.URL, "/console/evidence") {
		t.Fatalf("verify now: %+v, %v", resp, err)
	}
	// A query, not a poll: chromedp returns from RunResponse on the load
	// event, which its listeners see before its target has replaced the
	// old document's execution context, and a poll evaluated there fails
	// ("Cannot find context with specified id"); a query asks the browser
	// for the document it has.
	must(t, tab, "the verification's report",
		chromedp.WaitVisible(chromedp.Search(`//div[@class="verify"][contains(., "Run 1: clean.")]`)))
	screenshot(t, tab, dir, "console-evidence.png")
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

// docShot writes a screenshot of tab into docs/.
func docShot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/%s", name)
}
