package app_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
)

// hostDo sends a request to s with the given Host header.
func hostDo(t *testing.T, s *server, host, token, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func errorKind(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Kind string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	return e.Error.Kind
}

// TestPublicURLHostAccepted: with public_url configured, a request whose
// Host is that URL's host (as a tunnel forwards it) passes the
// DNS-rebinding check on a loopback listener; any other foreign host is
// still refused with 403 permission_denied, and without public_url the
// same host is refused too.
func TestPublicURLHostAccepted(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hello\n"), 0o644)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("public_url = \"https://webcodex-tunnel.example\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startApp(t, data, "p="+proj)
	defer s.stop(t)

	for _, host := range []string{"webcodex-tunnel.example", "WEBCODEX-TUNNEL.example", "webcodex-tunnel.example:443"} {
		if code, body := hostDo(t, s, host, "", "GET", "/healthz", ""); code != 200 {
			t.Errorf("Host %s: HTTP %d %s", host, code, body)
		}
	}
	code, body := hostDo(t, s, "webcodex-tunnel.example", s.token, "POST", "/api/actions/read_files", `{"project":"agent:local:p","files":[{"path":"a.txt"}]}`)
	if code != 200 || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("action through the public host: HTTP %d %s", code, body)
	}
	code, body = hostDo(t, s, "webcodex-tunnel.example", "", "GET", "/openapi.json", "")
	if code != 200 || !strings.Contains(string(body), `"url":"https://webcodex-tunnel.example"`) {
		t.Fatalf("openapi through the public host does not publish the public URL: HTTP %d %.300s", code, body)
	}
	for _, host := range []string{"attacker.example", "webcodex-tunnel.example.attacker.example", "tunnel.example"} {
		code, body := hostDo(t, s, host, s.token, "POST", "/api/actions/read_files", `{"project":"agent:local:p","files":[{"path":"a.txt"}]}`)
		if code != http.StatusForbidden || errorKind(t, body) != "permission_denied" {
			t.Errorf("foreign Host %s: HTTP %d %s", host, code, body)
		}
	}

	plain := startApp(t, t.TempDir())
	defer plain.stop(t)
	code, body = hostDo(t, plain, "webcodex-tunnel.example", "", "GET", "/healthz", "")
	if code != http.StatusForbidden || errorKind(t, body) != "permission_denied" {
		t.Fatalf("without public_url the host is accepted: HTTP %d %s", code, body)
	}
}

// TestPublicURLMustBeHTTPURL: a public_url that is not an absolute http(s)
// URL is a configuration error naming the key.
func TestPublicURLMustBeHTTPURL(t *testing.T) {
	for _, bad := range []string{"webcodex.example", "ftp://webcodex.example", "https://", "https://u:p@webcodex.example", "https://webcodex.example/?a=1"} {
		_, err := app.LoadConfig(t.TempDir(), func(k string) string {
			if k == "WEBCODEX_PUBLIC_URL" {
				return bad
			}
			return ""
		})
		var ce *app.ConfigError
		if err == nil || !errors.As(err, &ce) || ce.Key != "public_url" {
			t.Errorf("public_url %q: err %v", bad, err)
		}
	}
	cfg, err := app.LoadConfig(t.TempDir(), func(k string) string {
		if k == "WEBCODEX_PUBLIC_URL" {
			return "https://webcodex.example:8443/base"
		}
		return ""
	})
	if err != nil || strings.Join(cfg.PublicHosts(), ",") != "webcodex.example" {
		t.Fatalf("valid public_url: %v %v", cfg.PublicHosts(), err)
	}
}
