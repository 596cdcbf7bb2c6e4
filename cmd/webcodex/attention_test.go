package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// windowCall is a REST tool call with the window header set to win.
func windowCall(t *testing.T, base, win, tool string, args any) toolResult {
	t.Helper()
	r, status, _ := tokenCall(t, base, testToken, win, tool, args)
	if status != http.StatusOK || !r.Success {
		t.Fatalf("%s: HTTP %d %+v", tool, status, r.Error)
	}
	return r
}

// tokenCall is a REST tool call with credential token and, unless win is
// "", the window header; it returns the result, the HTTP status and the
// body (with the ambient blocks beside the result).
func tokenCall(t *testing.T, base, token, win, tool string, args any) (toolResult, int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if win != "" {
		req.Header.Set("x-webcodex-window", win)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r toolResult
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	return r, resp.StatusCode, raw
}

// runAttention runs `webcodex attention` as a real child process with the
// server's credential and returns its stdout and exit status.
func runAttention(t *testing.T, data string, args ...string) (string, int) {
	t.Helper()
	return runAttentionAs(t, data, testToken, args...)
}

// runAttentionAs is runAttention with WEBCODEX_TOKEN set to token ("":
// unset, the local user).
func runAttentionAs(t *testing.T, data, token string, args ...string) (string, int) {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"--data-dir", data, "attention"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(withoutEnv(os.Environ(), "WEBCODEX_TOKEN"), "WEBCODEX_TEST_CHILD_ARGS="+string(argv))
	if token != "" {
		cmd.Env = append(cmd.Env, "WEBCODEX_TOKEN="+token)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String() + stderr.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// TestAttention: while a server runs, `webcodex attention` prints the
// session's ACK-required message and open todo and the peer message
// waiting for a window, exits 3, and changes nothing; with nothing
// waiting it exits 0; an unknown session is an error (exit 1).
// boardServer serves a fresh data directory with project p (holding
// a.txt) and opens a Workflow Session on it.
func boardServer(t *testing.T) (srv *child, data, sessionID string) {
	t.Helper()
	data, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x\n"), 0o644)
	srv = startServe(t, "--data-dir", data, "--project", "p="+dir)
	w, err := callTool(context.Background(), srv.base, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}, "")
	if err != nil || !w.Success {
		t.Fatalf("work_on_project: %v %+v", err, w.Error)
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(w.Output, &out)
	return srv, data, out.SessionID
}

// postMessage posts to the session's board and returns the message id.
func postMessage(t *testing.T, base, sessionID, kind, msg string, ack bool) string {
	t.Helper()
	r, err := callTool(context.Background(), base, "post_session_message", map[string]any{"session_id": sessionID, "kind": kind, "message": msg, "requires_ack": ack}, "")
	if err != nil || !r.Success {
		t.Fatalf("post: %v %+v", err, r.Error)
	}
	var out struct {
		Message struct {
			MessageID string `json:"message_id"`
		} `json:"message"`
	}
	json.Unmarshal(r.Output, &out)
	return out.Message.MessageID
}

func TestAttention(t *testing.T) {
	srv, data, sessionID := boardServer(t)
	post := func(kind, msg string, ack bool) string { return postMessage(t, srv.base, sessionID, kind, msg, ack) }
	ackID := post("guidance", "stop editing calc.go", true)
	todoID := post("todo", "fix Add", false)
	post("note", "just a note", false)

	// Two windows of the principal; A posts to B.
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	windowCall(t, srv.base, "hook-window-A", "read_files", read)
	windowCall(t, srv.base, "hook-window-B", "read_files", read)
	cur := windowCall(t, srv.base, "hook-window-B", "current_window_activity", map[string]any{})
	var cb struct {
		PeerID string `json:"peer_id"`
	}
	json.Unmarshal(cur.Output, &cb)
	pm := windowCall(t, srv.base, "hook-window-A", "post_peer_message", map[string]any{"peer_id": cb.PeerID, "message": "pull main first"})
	var pmo struct {
		MessageID string `json:"message_id"`
	}
	json.Unmarshal(pm.Output, &pmo)

	out, code := runAttention(t, data, "--session", sessionID, "--window", "hook-window-B")
	if code != ExitAttention {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitAttention, out)
	}
	for _, want := range []string{"ACK required " + ackID, "stop editing calc.go", "Open todo " + todoID, "fix Add", "Peer message " + pmo.MessageID, "pull main first"} {
		if !strings.Contains(out, want) {
			t.Errorf("attention output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "just a note") {
		t.Errorf("an ordinary note is not attention:\n%s", out)
	}
	out, code = runAttention(t, data, "--session", sessionID, "--json")
	var att struct {
		AckRequired []struct {
			MessageID string `json:"message_id"`
		} `json:"ack_required_messages"`
		OpenTodos []struct {
			MessageID string `json:"message_id"`
		} `json:"open_todos"`
		Peer   []any `json:"peer_messages"`
		Needed bool  `json:"attention_needed"`
	}
	if err := json.Unmarshal([]byte(out), &att); err != nil || code != ExitAttention || !att.Needed ||
		len(att.AckRequired) != 1 || len(att.OpenTodos) != 1 || len(att.Peer) != 0 {
		t.Fatalf("--json (exit %d): %+v %v\n%s", code, att, err, out)
	}

	// Nothing waiting for window A, and the check marked nothing: B's
	// message is still there.
	if out, code := runAttention(t, data, "--window", "hook-window-A"); code != 0 || !strings.Contains(out, "Nothing is waiting.") {
		t.Fatalf("window A: exit %d\n%s", code, out)
	}
	if out, code := runAttention(t, data, "--window", "hook-window-B"); code != ExitAttention || !strings.Contains(out, pmo.MessageID) {
		t.Fatalf("window B again: exit %d\n%s", code, out)
	}
	// Errors: an unknown session, a malformed window key, no selector.
	for _, args := range [][]string{
		{"--session", "wc_sess_00000000000000000000000000000000"},
		{"--window", "has space"},
		{},
	} {
		if out, code := runAttention(t, data, args...); code != 1 {
			t.Errorf("%v: exit %d, want 1\n%s", args, code, out)
		}
	}
}

// withoutEnv is env without the variables named name.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestAttentionWithARealToken reproduces the finding of issue 24: with a
// real API token in WEBCODEX_TOKEN, `webcodex attention` took that token
// for a bootstrap credential of its own, so it refused the token's own
// session and printed "Nothing is waiting." while a peer message waited
// for the token's window. It now judges every credential as the server
// does: the real token sees its session and window (exit 3) and marks
// nothing; the server's bootstrap credential is the bootstrap admin (not
// the token's owner: its session is refused, its window is another, as
// on the server); a credential the server does not accept is exit 1, and
// once the server listens without a bootstrap credential, so is that one.
func TestAttentionWithARealToken(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x\n"), 0o644)
	var created struct{ Token string }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "create", "--name", "agent", "--owner", "alice",
		"--scopes", "project:read,project:write", "--json")), &created)
	alice := created.Token
	srv := startServe(t, "--data-dir", data, "--project", "p="+dir)
	call := func(win, tool string, args any) toolResult {
		t.Helper()
		r, status, _ := tokenCall(t, srv.base, alice, win, tool, args)
		if status != http.StatusOK || !r.Success {
			t.Fatalf("%s as alice: HTTP %d %+v", tool, status, r.Error)
		}
		return r
	}
	var w struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(call("", "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}).Output, &w)
	var posted struct {
		Message struct {
			MessageID string `json:"message_id"`
		} `json:"message"`
	}
	json.Unmarshal(call("", "post_session_message", map[string]any{"session_id": w.SessionID, "kind": "guidance",
		"message": "stop editing calc.go", "requires_ack": true}).Output, &posted)
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	call("alice-window-A", "read_files", read)
	call("alice-window-B", "read_files", read)
	var cur struct {
		PeerID string `json:"peer_id"`
	}
	json.Unmarshal(call("alice-window-B", "current_window_activity", map[string]any{}).Output, &cur)
	var pm struct {
		MessageID string `json:"message_id"`
	}
	json.Unmarshal(call("alice-window-A", "post_peer_message", map[string]any{"peer_id": cur.PeerID, "message": "pull main first"}).Output, &pm)

	// The real token: its session and its window, exit 3.
	out, code := runAttentionAs(t, data, alice, "--session", w.SessionID, "--window", "alice-window-B")
	if code != ExitAttention || !strings.Contains(out, "ACK required "+posted.Message.MessageID) || !strings.Contains(out, "Peer message "+pm.MessageID) {
		t.Fatalf("alice's token: exit %d, want %d with both messages:\n%s", code, ExitAttention, out)
	}
	if out, code := runAttentionAs(t, data, alice, "--window", "alice-window-B"); code != ExitAttention || strings.Contains(out, "Nothing is waiting.") {
		t.Fatalf("alice's window: exit %d:\n%s", code, out)
	}
	// Nothing was marked: the server still projects the peer message.
	if _, _, raw := tokenCall(t, srv.base, alice, "alice-window-B", "read_files", read); !bytes.Contains(raw, []byte(pm.MessageID)) {
		t.Fatalf("the check marked the peer message; the server no longer projects it:\n%s", raw)
	}

	// The server's bootstrap credential is another principal, there as
	// here: alice's session is refused (exit 1), her window's hash is not
	// its own (nothing waiting, exit 0).
	if r, _, _ := tokenCall(t, srv.base, testToken, "", "session_summary", map[string]any{"session_id": w.SessionID}); r.Success || r.Error.Kind != "session_authority_denied" {
		t.Fatalf("the server gave the bootstrap credential alice's session: %+v", r)
	}
	if out, code := runAttentionAs(t, data, testToken, "--session", w.SessionID); code != 1 {
		t.Fatalf("bootstrap on alice's session: exit %d, want 1:\n%s", code, out)
	}
	if out, code := runAttentionAs(t, data, testToken, "--window", "alice-window-B"); code != 0 || !strings.Contains(out, "Nothing is waiting.") {
		t.Fatalf("bootstrap on alice's window key: exit %d, want 0:\n%s", code, out)
	}
	// A credential the server refuses is an error here too.
	stranger := "wc_pat_" + strings.Repeat("0", 43)
	if _, status, _ := tokenCall(t, srv.base, stranger, "", "session_summary", map[string]any{"session_id": w.SessionID}); status != http.StatusUnauthorized {
		t.Fatalf("the server accepted a credential it never issued: HTTP %d", status)
	}
	for _, tok := range []string{stranger, "some-other-long-credential"} {
		if out, code := runAttentionAs(t, data, tok, "--window", "alice-window-B"); code != 1 {
			t.Fatalf("%s: exit %d, want 1:\n%s", tok, code, out)
		}
	}

	// Served without a bootstrap credential, that one is refused too.
	stopServe(t, srv)
	startServeCmd(t, func(c *exec.Cmd) { c.Env = withoutEnv(c.Env, "WEBCODEX_TOKEN") }, "--data-dir", data, "--project", "p="+dir)
	if out, code := runAttentionAs(t, data, testToken, "--window", "alice-window-B"); code != 1 {
		t.Fatalf("the former bootstrap credential: exit %d, want 1:\n%s", code, out)
	}
	if out, code := runAttentionAs(t, data, alice, "--session", w.SessionID); code != ExitAttention {
		t.Fatalf("alice after the restart: exit %d:\n%s", code, out)
	}
}

// hookConfig is the part of a Claude Code settings.json or a Codex
// hooks.json that says what runs.
type hookConfig struct {
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// documentedHooks returns the JSON block that follows heading in
// docs/collaboration.md.
func documentedHooks(t *testing.T, heading string) hookConfig {
	t.Helper()
	doc, err := os.ReadFile("../../docs/collaboration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/collaboration.md has no %q", heading)
	}
	_, block, ok := strings.Cut(section, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no JSON block", heading)
	}
	var c hookConfig
	if err := json.Unmarshal([]byte(block), &c); err != nil {
		t.Fatalf("%s: %v\n%s", heading, err, block)
	}
	return c
}

// TestDocumentedHooks runs every command of the hook configurations in
// docs/collaboration.md through sh -c, with webcodex on $PATH, as Claude
// Code and Codex run them: each exits 0, prints what is waiting as plain
// text (Codex rejects stdout that looks like JSON unless it is its own hook
// JSON), and prints nothing once nothing is waiting.
func TestDocumentedHooks(t *testing.T) {
	srv, data, sessionID := boardServer(t)
	ackID := postMessage(t, srv.base, sessionID, "guidance", "stop editing calc.go", true)

	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "webcodex")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WEBCODEX_DATA="+data, "WEBCODEX_TOKEN="+testToken, "WEBCODEX_SESSION="+sessionID)
	hook := func(command string) (string, int) {
		cmd := exec.Command("sh", "-c", command)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}

	var commands []string
	for _, heading := range []string{"### Claude Code hooks", "### Codex hooks"} {
		c := documentedHooks(t, heading)
		for _, event := range []string{"SessionStart", "UserPromptSubmit"} {
			if len(c.Hooks[event]) == 0 {
				t.Errorf("%s: no %s hook", heading, event)
			}
			for _, g := range c.Hooks[event] {
				for _, h := range g.Hooks {
					if h.Type != "command" || h.Command == "" {
						t.Errorf("%s %s: %+v is not a command hook", heading, event, h)
					}
					commands = append(commands, h.Command)
				}
			}
		}
	}
	for _, c := range commands {
		out, code := hook(c)
		if code != 0 || !strings.Contains(out, "ACK required "+ackID) || !strings.Contains(out, "stop editing calc.go") {
			t.Errorf("%s: exit %d\n%s", c, code, out)
		}
		if o := strings.TrimSpace(out); strings.HasPrefix(o, "{") || strings.HasPrefix(o, "[") {
			t.Errorf("%s: output looks like JSON:\n%s", c, out)
		}
	}

	r, err := callTool(context.Background(), srv.base, "resolve_session_message", map[string]any{"session_id": sessionID, "message_id": ackID}, "")
	if err != nil || !r.Success {
		t.Fatalf("resolve: %v %+v", err, r.Error)
	}
	for _, c := range commands {
		if out, code := hook(c); code != 0 || out != "" {
			t.Errorf("%s with nothing waiting: exit %d, output %q", c, code, out)
		}
	}
}
