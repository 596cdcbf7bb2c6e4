package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
)

type server struct {
	a      *app.App
	base   string
	token  string
	cancel context.CancelFunc
	done   chan error
}

func startApp(t *testing.T, dataDir string, projects ...string) *server {
	t.Helper()
	return startAppWith(t, dataDir, nil, projects...)
}

// startAppWith is startApp with tune, when set, changing the configuration.
func startAppWith(t testing.TB, dataDir string, tune func(*app.Config), projects ...string) *server {
	t.Helper()
	return startAppLogging(t, dataDir, slog.New(slog.NewTextHandler(io.Discard, nil)), tune, projects...)
}

// startAppLogging is startAppWith logging to log.
func startAppLogging(t testing.TB, dataDir string, log *slog.Logger, tune func(*app.Config), projects ...string) *server {
	t.Helper()
	cfg, err := app.LoadConfig(dataDir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = app.Duration(5 * time.Second)
	if tune != nil {
		tune(&cfg)
	}
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		t.Fatal(err)
	}
	addr, err := a.Listen()
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &server{a: a, base: "http://" + addr.String(), token: a.AdminToken, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Serve(sctx) }()
	return s
}

func (s *server) stop(t testing.TB) {
	t.Helper()
	s.cancel()
	if err := <-s.done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if err := s.a.Close(); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	Success bool                       `json:"success"`
	Output  map[string]json.RawMessage `json:"output"`
	Error   *struct{ Kind, Message string }
}

func (s *server) do(t *testing.T, token, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, bytes.NewReader(body))
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

func (s *server) call(t *testing.T, tool string, args any, recorder string) result {
	t.Helper()
	return s.callAs(t, s.token, tool, args, recorder)
}

func (s *server) callAs(t *testing.T, token, tool string, args any, recorder string) result {
	t.Helper()
	data := s.callBody(t, token, tool, args, recorder)
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// callBody is the body of a REST tool call that answered 200.
func (s *server) callBody(t *testing.T, token, tool string, args any, recorder string) []byte {
	t.Helper()
	return s.callBodyAt(t, token, "/api/tools/call", tool, args, recorder)
}

// callBodyAt is callBody with the call endpoint's path (and query) given.
func (s *server) callBodyAt(t *testing.T, token, path, tool string, args any, recorder string) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args, "recording_session_id": recorder})
	code, data := s.do(t, token, "POST", path, body)
	if code != 200 {
		t.Fatalf("%s: HTTP %d %s", tool, code, data)
	}
	return data
}

func must(t *testing.T, r result, what string) result {
	t.Helper()
	if !r.Success {
		t.Fatalf("%s failed: %+v", what, r.Error)
	}
	return r
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a string: %s", raw)
	}
	return s
}

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(dir, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Run go test before finishing.\n"), 0o644)
	run("add", ".")
	run("commit", "-q", "-m", "init")
	return dir
}

func exportLedger(t *testing.T, a *app.App, id string) []byte {
	t.Helper()
	l, err := workflow.Export(context.Background(), a.Sessions.Store(), []string{id}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(l)
	return b
}

// TestWholeTaskAndRestart runs a task end to end over HTTP, then restarts
// the server on the same data directory and checks the session is byte for
// byte the same.
func TestWholeTaskAndRestart(t *testing.T) {
	repo := gitRepo(t)
	data := t.TempDir()
	s := startApp(t, data, "calc="+repo)
	const proj = "agent:local:calc"

	w := must(t, s.call(t, "work_on_project", map[string]any{"project": proj, "instruction": "Fix Add: it subtracts"}, ""), "work_on_project")
	id := str(t, w.Output["session_id"])
	if str(t, w.Output["continuation"]) != "created" || !strings.Contains(string(w.Output["instructions"]), "Run go test") {
		t.Fatalf("work_on_project output: %v", w.Output)
	}
	sr := must(t, s.call(t, "search_project_texts", map[string]any{"project": proj, "queries": []any{map[string]any{"query": "a - b"}}}, id), "search")
	if !strings.Contains(string(sr.Output["matches"]), "calc.go") {
		t.Fatalf("search found no match: %s", sr.Output["matches"])
	}
	rd := must(t, s.call(t, "read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}}, id), "read")
	var files []struct {
		ReadRevision string `json:"read_revision"`
	}
	json.Unmarshal(rd.Output["files"], &files)
	ed := must(t, s.call(t, "apply_text_edits", map[string]any{"project": proj, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": files[0].ReadRevision,
		"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}},
	}}}, id), "edit")
	_ = ed
	// The same fence is now stale: nothing may change.
	stale := s.call(t, "apply_text_edits", map[string]any{"project": proj, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": files[0].ReadRevision,
		"edits": []any{map[string]any{"old_text": "a + b", "new_text": "a * b"}},
	}}}, id)
	if stale.Success || stale.Error.Kind != "edit_conflict" {
		t.Fatalf("stale fence: %+v", stale)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); !strings.Contains(string(b), "a + b") {
		t.Fatalf("file not edited as expected:\n%s", b)
	}
	df := must(t, s.call(t, "git_diff", map[string]any{"project": proj}, id), "git_diff")
	if !strings.Contains(string(df.Output["files"]), "+\\treturn a + b") {
		t.Fatalf("diff does not show the change: %s", df.Output["files"])
	}
	sum := must(t, s.call(t, "session_summary", map[string]any{"session_id": id, "limit": 200}, ""), "summary")
	var evs []workflow.Event
	json.Unmarshal(sum.Output["events"], &evs)
	var changed, observed []string
	for _, e := range evs {
		changed = append(changed, e.ChangedPaths...)
		observed = append(observed, e.ObservedPaths...)
	}
	if strings.Join(changed, ",") != "calc.go" || !strings.Contains(strings.Join(observed, ","), "calc.go") {
		t.Fatalf("ledger changed=%v observed=%v", changed, observed)
	}
	for _, e := range evs {
		if strings.Contains(e.Text+strings.Join(e.ObservedPaths, ""), "a - b") {
			t.Fatal("ledger holds search pattern or file content")
		}
	}
	before := exportLedger(t, s.a, id)
	s.stop(t)

	s2 := startApp(t, data)
	defer s2.stop(t)
	after := exportLedger(t, s2.a, id)
	if !bytes.Equal(before, after) {
		t.Fatalf("session changed across restart:\n%s\n%s", before, after)
	}
	// And it continues by exact id after the restart.
	c := must(t, s2.call(t, "work_on_project", map[string]any{"project": proj, "session_id": id, "instruction": "Also add a test"}, ""), "continue")
	if str(t, c.Output["continuation"]) != "continued" || str(t, c.Output["session_id"]) != id {
		t.Fatalf("continue: %v", c.Output)
	}
}

func TestHTTPBoundaries(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hello\n"), 0o644)
	s := startApp(t, t.TempDir(), "p="+proj)
	defer s.stop(t)

	t.Run("Healthz", func(t *testing.T) {
		if code, _ := s.do(t, "", "GET", "/healthz", nil); code != 200 {
			t.Fatalf("healthz %d", code)
		}
	})
	t.Run("ErrNoCredential", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.base+"/api/tools/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("ErrBadCredential", func(t *testing.T) {
		if code, _ := s.do(t, "wc_pat_nottherealtoken0000000000000000000000000", "POST", "/api/tools/list", nil); code != 401 {
			t.Fatalf("got %d", code)
		}
	})
	t.Run("ErrMalformedBody", func(t *testing.T) {
		code, body := s.do(t, s.token, "POST", "/api/tools/call", []byte(`{"tool":`))
		if code != 400 || !strings.Contains(string(body), "invalid_arguments") {
			t.Fatalf("got %d %s", code, body)
		}
	})
	t.Run("ErrOversized", func(t *testing.T) {
		big := []byte(`{"tool":"read_files","arguments":{"project":"agent:local:p","pad":"` + strings.Repeat("x", 5<<20) + `"}}`)
		code, body := s.do(t, s.token, "POST", "/api/tools/call", big)
		if code != 413 || !strings.Contains(string(body), "request_too_large") {
			t.Fatalf("got %d %.200s", code, body)
		}
	})
	t.Run("ErrDNSRebinding", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.base+"/healthz", nil)
		req.Host = "evil.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("got %d", resp.StatusCode)
		}
	})
	t.Run("ErrForeignOrigin", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.base+"/api/tools/list", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Origin", "https://evil.example.com")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("got %d", resp.StatusCode)
		}
	})
	t.Run("ScopesAndAuthority", func(t *testing.T) {
		reader, _, err := s.a.Auth.CreateToken(context.Background(), "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := s.a.Auth.CreateToken(context.Background(), "other", "someone-else", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
		if err != nil {
			t.Fatal(err)
		}
		r := s.stepUpAs(t, reader, "write_project_file", map[string]any{"project": "agent:local:p", "path": "a.txt", "content": "x"}) // 403
		w := must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "mine"}, ""), "start")
		id := str(t, w.Output["session_id"])
		r = s.callAs(t, other, "read_files", map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}, id)
		if r.Success || r.Error.Kind != "session_authority_denied" {
			t.Fatalf("foreign recorder: %+v", r.Error)
		}
		r = s.callAs(t, other, "list_sessions", map[string]any{"project": "agent:local:p"}, "")
		if !r.Success || string(r.Output["total"]) != "0" {
			t.Fatalf("another group's list shows sessions: %s", r.Output["total"])
		}
		if b, _ := os.ReadFile(filepath.Join(proj, "a.txt")); string(b) != "hello\n" {
			t.Fatalf("file changed: %q", b)
		}
	})
	t.Run("ReadOnlySessionDeniesWrites", func(t *testing.T) {
		w := must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "only look", "mode": "read_only"}, ""), "start")
		id := str(t, w.Output["session_id"])
		rd := must(t, s.call(t, "read_files", map[string]any{"project": "agent:local:p", "session_id": id, "files": []any{map[string]any{"path": "a.txt"}}}, ""), "read")
		var files []struct {
			ReadRevision string `json:"read_revision"`
		}
		json.Unmarshal(rd.Output["files"], &files)
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"apply_text_edits", map[string]any{"project": "agent:local:p", "session_id": id, "changes": []any{map[string]any{
				"path": "a.txt", "op": "replace", "expected_read_revision": files[0].ReadRevision,
				"edits": []any{map[string]any{"old_text": "hello", "new_text": "bye"}}}}}},
			{"write_project_file", map[string]any{"project": "agent:local:p", "session_id": id, "path": "new.txt", "content": "x"}},
		} {
			r := s.call(t, tc.tool, tc.args, "")
			if r.Success || r.Error.Kind != "session_guard_denied" {
				t.Fatalf("%s in a read_only session: %+v", tc.tool, r.Error)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(proj, "a.txt")); string(b) != "hello\n" {
			t.Fatalf("file changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(proj, "new.txt")); err == nil {
			t.Fatal("file created")
		}
		sess, _ := s.a.Sessions.Get(context.Background(), id)
		if sess.Counters.GuardDenials != 2 {
			t.Fatalf("guard denials recorded: %d, want 2", sess.Counters.GuardDenials)
		}
	})
	t.Run("OpenAPIMatchesRegistry", func(t *testing.T) {
		code, body := s.do(t, "", "GET", "/openapi.json?tools=all", nil)
		if code != 200 {
			t.Fatalf("openapi %d", code)
		}
		var doc struct {
			OpenAPI string                    `json:"openapi"`
			Paths   map[string]map[string]any `json:"paths"`
		}
		json.Unmarshal(body, &doc)
		tools := s.a.Kernel.Registry().Tools()
		if doc.OpenAPI != "3.1.0" || len(doc.Paths) != len(tools) {
			t.Fatalf("openapi %s with %d paths for %d tools", doc.OpenAPI, len(doc.Paths), len(tools))
		}
		for _, tl := range tools {
			if doc.Paths["/api/actions/"+tl.Name]["post"] == nil {
				t.Errorf("no operation for %s", tl.Name)
			}
		}
	})
	t.Run("OpenAPISubset", func(t *testing.T) {
		code, body := s.do(t, "", "GET", "/openapi.json?tools=read_files,git_diff", nil)
		var doc struct {
			Paths map[string]any `json:"paths"`
		}
		json.Unmarshal(body, &doc)
		if code != 200 || len(doc.Paths) != 2 || doc.Paths["/api/actions/read_files"] == nil {
			t.Fatalf("subset: %d %d paths", code, len(doc.Paths))
		}
		if code, _ := s.do(t, "", "GET", "/openapi.json?tools=read_files,nope", nil); code != 400 {
			t.Fatalf("unknown tool in subset: %d", code)
		}
	})
	t.Run("ActionsRoute", func(t *testing.T) {
		code, body := s.do(t, s.token, "POST", "/api/actions/read_files", []byte(`{"project":"agent:local:p","files":[{"path":"a.txt"}]}`))
		if code != 200 || !strings.Contains(string(body), `"success":true`) {
			t.Fatalf("got %d %s", code, body)
		}
	})
	t.Run("Status", func(t *testing.T) {
		code, body := s.do(t, s.token, "GET", "/api/status", nil)
		var st app.Status
		json.Unmarshal(body, &st)
		if code != 200 || st.Projects != 1 || st.Tools != len(s.a.Kernel.Registry().Tools()) || st.Kernel.Calls == 0 {
			t.Fatalf("status %d %s", code, body)
		}
	})
}

// TestSecretsNeverReachDisk plants credentials in what a caller sends and
// scans every file of the data directory for them.
func TestSecretsNeverReachDisk(t *testing.T) {
	proj := t.TempDir()
	data := t.TempDir()
	cfg, _ := app.LoadConfig(data, func(string) string { return "" })
	cfg.Listen = "127.0.0.1:0"
	cfg.BootstrapToken = "bootstrap-secret-value-0123456789"
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := a.Listen()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	s := &server{a: a, base: "http://" + addr.String(), token: cfg.BootstrapToken, cancel: cancel, done: done}
	a.RegisterProjects(context.Background(), []string{"p=" + proj})

	secrets := []string{
		"sk-proj0123456789abcdefghijklmnop",
		"ghp_0123456789abcdefghijklmnopqrstuvwxyz",
		"hunter2-is-my-password",
		cfg.BootstrapToken,
	}
	w := must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p",
		"instruction": "Use OPENAI key " + secrets[0] + " and GITHUB_TOKEN=" + secrets[1] + " with password: " + secrets[2]}, ""), "start")
	id := str(t, w.Output["session_id"])
	must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:p", "session_id": id,
		"instruction": "Authorization: Bearer " + cfg.BootstrapToken}, ""), "continue")
	// A credential pasted as a session id is refused and kept as negative
	// evidence, redacted.
	if r := s.call(t, "list_sessions", map[string]any{}, secrets[1]); r.Success {
		t.Fatal("a token accepted as recording_session_id")
	}
	// Project Memory bodies are redacted before memory.db (decision 0035).
	must(t, s.call(t, "memory_set", map[string]any{"project": "agent:local:p", "memory_key": "deploy",
		"body": "deploy with " + secrets[0] + " and password: " + secrets[2]}, id), "memory_set")
	s.stop(t)

	redacted := false
	filepathWalk(t, data, func(path string, b []byte) {
		redacted = redacted || bytes.Contains(b, []byte("[REDACTED]"))
		for _, sec := range secrets {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s contains a planted secret %q", filepath.Base(path), sec[:6])
			}
		}
	})
	if !redacted {
		t.Fatal("no redaction marker on disk: the instructions were not written at all")
	}
}

func filepathWalk(t *testing.T, dir string, fn func(string, []byte)) {
	t.Helper()
	n := 0
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n++
		fn(p, b)
		return nil
	})
	if n < 3 {
		t.Fatalf("scanned only %d files", n)
	}
}
