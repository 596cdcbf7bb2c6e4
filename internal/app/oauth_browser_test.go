package app_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/chromiumtest"
)

// TestOAuthConsentInChromium: in a real browser, a connection that starts
// on the client's own site (another site than the server's) reaches the
// consent page through the console sign-in, and the approval's redirect
// to the client is allowed by the page's policy and lands at the client
// with a code that redeems. A second connection from the client's site
// finds the browser signed in but without the SameSite=Strict cookie: the
// sign-in page's Continue link (a same-site navigation) carries it to the
// consent page without a new sign-in.
func TestOAuthConsentInChromium(t *testing.T) {
	tab := chromiumtest.Start(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.OAuth.Enabled = true }, "p="+rawProjectDir(t))
	defer s.stop(t)

	// The client's site: a start page linking to the authorization
	// request, and its callback, which records what arrived. localhost
	// is another site than the server's 127.0.0.1.
	codes := make(chan url.Values, 2)
	var start string
	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><a id="connect" href="` + strings.ReplaceAll(start, "&", "&amp;") + `">Connect</a>`))
		case "/callback":
			codes <- r.URL.Query()
			w.Write([]byte("connected"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer client.Close()
	clientSite := strings.Replace(client.URL, "127.0.0.1", "localhost", 1)
	redirect := clientSite + "/callback"
	id := register(t, s, redirect)

	connect := func(signIn bool) url.Values {
		t.Helper()
		verifier := oauth2.GenerateVerifier()
		start = authorizeURL(s, id, verifier, url.Values{"redirect_uri": {redirect}})
		actions := []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(clientSite + "/start"),
			chromedp.Click(chromedp.CSS("#connect")),
			chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		}
		if signIn {
			actions = append(actions,
				chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), s.token),
				chromedp.Click(chromedp.CSS(`form.login button[type="submit"]`)))
		} else {
			actions = append(actions, chromedp.Click(chromedp.CSS("#continue a")))
		}
		actions = append(actions,
			chromedp.WaitVisible(chromedp.CSS(`button[value="approve"]`)),
			chromedp.Click(chromedp.CSS(`button[value="approve"]`)))
		if err := chromedp.Do(tab, actions...); err != nil {
			t.Fatalf("connect (sign in %v): %v", signIn, err)
		}
		var q url.Values
		select {
		case q = <-codes:
		case <-tab.Done():
			t.Fatal("the approval never reached the client (a blocked redirect?)")
		}
		if q.Get("iss") != s.base || q.Get("state") != "st-1" || q.Get("code") == "" {
			t.Fatalf("the client received %v", q)
		}
		st, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {redirect},
			"client_id": {id}, "code_verifier": {verifier}})
		if st != http.StatusOK || toolStatus(t, s, tok["access_token"].(string)) != http.StatusOK {
			t.Fatalf("the code the browser delivered: HTTP %d %v", st, tok)
		}
		return q
	}
	connect(true)
	connect(false)
}
