//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/project"
)

// fakeCloudflared writes a cloudflared to dir that logs a quick tunnel's
// URL the way cloudflared does, records its arguments and pid, and runs
// until it is killed: the tunnel service itself is the edge a test cannot
// reach.
func fakeCloudflared(t *testing.T, dir string) {
	t.Helper()
	script := "#!/bin/sh\n" +
		"echo \"$@\" > \"" + filepath.Join(dir, "args") + "\"\n" +
		"echo $$ > \"" + filepath.Join(dir, "pid") + "\"\n" +
		"echo '2026-12-03T18:00:00Z INF |  https://fake-share.trycloudflare.com  |' >&2\n" +
		"exec tail -f /dev/null\n"
	if err := os.WriteFile(filepath.Join(dir, "cloudflared"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestShareServesOneProjectAndRevokesAtInterrupt: share with cloudflared on
// PATH starts a quick tunnel to its loopback address, turns OAuth on with
// the tunnel as issuer, hands out a credential that reaches only the
// shared project, prints what each client needs, and at Ctrl-C revokes
// the credential and stops the tunnel.
func TestShareServesOneProjectAndRevokesAtInterrupt(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the stand-in cloudflared")
	}
	data, bin := t.TempDir(), t.TempDir()
	fakeCloudflared(t, bin)
	shared, other := t.TempDir(), t.TempDir()
	mustRun(t, "--data-dir", data, "project", "add", "other="+other)
	srv := startChild(t, func(c *exec.Cmd) {
		c.Env = append(c.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}, "--data-dir", data, "share", "--project", shared, "--listen", "127.0.0.1:0")

	out := srv.out.String()
	token := regexp.MustCompile(`Bearer token  (wc_pat_\S+)`).FindStringSubmatch(out)
	for _, want := range []string{"https://fake-share.trycloudflare.com/mcp", "claude mcp add --transport http webcodex",
		"codex mcp add webcodex", "Authentication OAuth", "Add custom connector"} {
		if !strings.Contains(out, want) {
			t.Errorf("share's instructions lack %q:\n%s", want, out)
		}
	}
	if token == nil {
		t.Fatalf("no bearer token printed:\n%s", out)
	}
	args, _ := os.ReadFile(filepath.Join(bin, "args"))
	if string(args) != "tunnel --no-autoupdate --url "+srv.base+"\n" {
		t.Fatalf("cloudflared started with %q, want a tunnel to %s", args, srv.base)
	}

	// OAuth is on, its issuer the tunnel's URL.
	code, body := get(t, srv.base+"/.well-known/oauth-authorization-server")
	var meta struct{ Issuer string }
	if json.Unmarshal(body, &meta); code != 200 || meta.Issuer != "https://fake-share.trycloudflare.com" {
		t.Fatalf("authorization server metadata: %d %s", code, body)
	}
	sharedID := "agent:local:" + project.NameFromDir(shared)
	if r := shareCall(t, srv.base, token[1], "project_overview", map[string]any{"project": sharedID}); !r.Success {
		t.Fatalf("the shared project: %+v", r.Error)
	}
	if r := shareCall(t, srv.base, token[1], "project_overview", map[string]any{"project": "agent:local:other"}); r.Error == nil || r.Error.Kind != "permission_denied" {
		t.Fatalf("another project with the share credential: %+v", r)
	}

	srv.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-srv.done:
	case <-time.After(60 * time.Second):
		t.Fatal("share did not stop at Ctrl-C")
	}
	if !strings.Contains(srv.out.String(), "Revoked the share credential") {
		t.Fatalf("no revocation reported:\n%s", srv.out.String())
	}
	var list struct{ Tokens []auth.Token }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "list", "--json")), &list)
	revoked := false
	for _, tk := range list.Tokens {
		if tk.Kind == auth.KindProjectCredential && tk.Project == sharedID {
			revoked = tk.Revoked()
		}
	}
	if !revoked {
		t.Fatalf("the share credential is not revoked after Ctrl-C: %+v", list.Tokens)
	}
	pid, _ := os.ReadFile(filepath.Join(bin, "pid"))
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n, 0); err == nil {
		t.Fatalf("cloudflared (pid %d) still runs after share stopped", n)
	}
}

// shareCall calls tool over REST with token and returns the ToolResult
// whatever the status.
func shareCall(t *testing.T, base, token, tool string, args any) toolResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r toolResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: HTTP %d: %v", tool, resp.StatusCode, err)
	}
	return r
}

// get fetches u and returns the status and body.
func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
