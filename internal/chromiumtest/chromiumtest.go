// Package chromiumtest starts real headless Chromium for tests (Debian's
// chromium, through the DevTools protocol with chromedp): the console's
// pages and the OAuth consent flow are proven in a browser, not only over
// HTTP.
//
// Without chromium a test skips, unless WEBCODEX_REQUIRE_CHROMIUM=1 (set
// by .ci/run), when it fails. WEBCODEX_CHROMIUM names another browser.
package chromiumtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// SessionBound bounds a whole browser session, so that a broken page
// fails its test instead of hanging it; no step waits for a time.
const SessionBound = 3 * time.Minute

// Path returns the browser's path, or skips the test (fails it when the
// browser is required).
func Path(t testing.TB) string {
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

// Start starts a fresh headless chromium (its own profile directory, no
// network beyond what the test serves) with extra options, and returns a
// tab's context, bounded by SessionBound. Everything ends with the test.
func Start(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := Path(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	opts = append(opts, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), SessionBound)
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
