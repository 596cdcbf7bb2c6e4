package console_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/chromiumtest"
)

// The browser tests drive the console in real headless Chromium
// (internal/chromiumtest: without chromium they skip, unless
// WEBCODEX_REQUIRE_CHROMIUM=1, set by .ci/run, when they fail). Screenshots go to $WEBCODEX_SCREENSHOTS (kept) or a temporary
// directory. With -console-docs, TestBrowserDocsScreenshots builds a
// realistic scenario and writes the README's two screenshots into docs/.

var consoleDocs = flag.Bool("console-docs", false, "run TestBrowserDocsScreenshots: write docs/console-attention.png and docs/console-session.png")

// newBrowser starts a fresh headless chromium (chromiumtest.Start) with
// the console's window size and returns a tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	return chromiumtest.Start(t, chromedp.WindowSize(1280, 960))
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
