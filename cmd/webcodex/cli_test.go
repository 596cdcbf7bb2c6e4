package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// run executes the CLI in-process and returns its standard output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("webcodex %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestProjectCommands(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	out := mustRun(t, "--data-dir", data, "project", "add", "demo="+dir)
	if !strings.Contains(out, "agent:local:demo") {
		t.Fatalf("add: %s", out)
	}
	var list struct {
		Projects []struct{ ID, Root string }
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "project", "list", "--json")), &list)
	if len(list.Projects) != 1 || list.Projects[0].ID != "agent:local:demo" {
		t.Fatalf("list: %+v", list)
	}
	if out := mustRun(t, "--data-dir", data, "project", "list"); !strings.Contains(out, "ID") || !strings.Contains(out, "agent:local:demo") {
		t.Fatalf("table: %s", out)
	}
	if _, err := run(t, "--data-dir", data, "project", "add", "demo="+t.TempDir()); err == nil {
		t.Fatal("re-registering a name to another directory succeeded")
	}
	if _, err := run(t, "--data-dir", data, "project", "add", filepath.Join(dir, "missing")); err == nil {
		t.Fatal("registering a missing directory succeeded")
	}
	mustRun(t, "--data-dir", data, "project", "remove", "demo")
	if out := mustRun(t, "--data-dir", data, "project", "list"); !strings.Contains(out, "No projects") {
		t.Fatalf("after remove: %s", out)
	}
}

func TestTokenCommands(t *testing.T) {
	data := t.TempDir()
	var created struct {
		Token  string
		Record auth.Token
	}
	out := mustRun(t, "--data-dir", data, "token", "create", "--name", "ci", "--scopes", "project:read", "--json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Token, "wc_pat_") {
		t.Fatalf("create: %v %s", err, out)
	}
	if _, err := run(t, "--data-dir", data, "token", "create", "--name", "x", "--scopes", "project:everything"); err == nil {
		t.Fatal("unknown scope accepted")
	}
	// A token's own tool profile: checked against the tools, stored.
	if _, err := run(t, "--data-dir", data, "token", "create", "--name", "x", "--tools", "read_files,no_such_tool"); err == nil ||
		!strings.Contains(err.Error(), `unknown tool "no_such_tool"`) {
		t.Fatalf("a profile naming no tool: %v", err)
	}
	var narrow struct{ Record auth.Token }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "create", "--name", "n", "--tools", "read_files,git_diff", "--json")), &narrow)
	if strings.Join(narrow.Record.Tools, ",") != "read_files,git_diff" {
		t.Fatalf("token tools: %+v", narrow.Record)
	}
	table := mustRun(t, "--data-dir", data, "token", "list")
	if !strings.Contains(table, created.Record.ID) || strings.Contains(table, created.Token) {
		t.Fatalf("list must show the id and never the token:\n%s", table)
	}
	mustRun(t, "--data-dir", data, "token", "revoke", created.Record.ID)
	if !strings.Contains(mustRun(t, "--data-dir", data, "token", "list"), "revoked") {
		t.Fatal("revoked token not shown as revoked")
	}
	// The raw token is nowhere in the data directory.
	filepath.Walk(data, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(created.Token)) {
				t.Errorf("%s holds the raw token", p)
			}
		}
		return nil
	})
}

func TestSessionCommands(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st.Workflow, nil)
	s, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "Refactor the parser\nwith care"})
	if err != nil {
		t.Fatal(err)
	}
	// A replayed post: shown as a replay of its original and counted
	// apart, and carried through export and import.
	const original = "wc_msg_0123456789abcdef0123456789abcdef"
	if err := svc.FinishCall(ctx, s.ID, s.CreatedAt, workflow.CallWrite{},
		workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness,
			Outcome: workflow.OutcomeOK, Replayed: true, ReplayOf: original}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	if out := mustRun(t, "--data-dir", data, "session", "list"); !strings.Contains(out, s.ID) || !strings.Contains(out, "Refactor the parser") {
		t.Fatalf("list: %s", out)
	}
	show := mustRun(t, "--data-dir", data, "session", "show", s.ID)
	if !strings.Contains(show, "task_instruction") || !strings.Contains(show, "active (normal)") ||
		!strings.Contains(show, "1 started, 0 failed, 1 replays (no new effect)") || !strings.Contains(show, "replay of "+original[:20]) {
		t.Fatalf("show: %s", show)
	}
	if _, err := run(t, "--data-dir", data, "session", "show", "wc_sess_bad"); err == nil {
		t.Fatal("malformed id accepted")
	}
	ledger := filepath.Join(t.TempDir(), "ledger.json")
	mustRun(t, "--data-dir", data, "session", "export", s.ID, "-o", ledger)

	other := t.TempDir()
	mustRun(t, "--data-dir", other, "project", "add", "demo="+t.TempDir())
	if out := mustRun(t, "--data-dir", other, "session", "import", ledger); !strings.Contains(out, "Imported 1") {
		t.Fatalf("import: %s", out)
	}
	a := mustRun(t, "--data-dir", data, "session", "show", s.ID, "--json")
	b := mustRun(t, "--data-dir", other, "session", "show", s.ID, "--json")
	if a != b {
		t.Fatalf("imported session differs:\n%s\n%s", a, b)
	}
	// Importing again conflicts; an old version is rejected with a clear message.
	if _, err := run(t, "--data-dir", other, "session", "import", ledger); err == nil {
		t.Fatal("second import succeeded")
	}
	old := filepath.Join(t.TempDir(), "old.json")
	os.WriteFile(old, []byte(`{"version":1,"sessions":[]}`), 0o600)
	if _, err := run(t, "--data-dir", t.TempDir(), "session", "import", old); err == nil || !strings.Contains(err.Error(), "version 1 is not supported") {
		t.Fatalf("old ledger: %v", err)
	}
}

func TestUnknownConfigKeyNamesKey(t *testing.T) {
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "config.toml"), []byte("colour = \"blue\"\n"), 0o600)
	_, err := run(t, "--data-dir", data, "project", "list")
	if err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("got %v, want an error naming colour", err)
	}
}

func TestSessionHandoffCommand(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st.Workflow, nil)
	s, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"),
		Instruction: "Fix the parser; token wc_pat_" + strings.Repeat("Q", 43)})
	if err != nil {
		t.Fatal(err)
	}
	svc.Append(ctx, s.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "apply_text_edits", Outcome: workflow.OutcomeOK, ChangedPaths: []string{"parser.go"}})
	st.Close()

	out := mustRun(t, "--data-dir", data, "session", "handoff", s.ID)
	if !strings.Contains(out, "needs_validation") || !strings.Contains(out, "parser.go") || !strings.Contains(out, "Fix the parser") {
		t.Fatalf("handoff:\n%s", out)
	}
	raw := mustRun(t, "--data-dir", data, "session", "handoff", s.ID, "--json")
	var brief map[string]any
	if err := json.Unmarshal([]byte(raw), &brief); err != nil || brief["version"] != float64(1) || len(raw) > 8193 {
		t.Fatalf("handoff --json (%d bytes): %v", len(raw), err)
	}
	if strings.Contains(out+raw, strings.Repeat("Q", 43)) {
		t.Fatal("the brief shows a planted token")
	}
	if raw2 := mustRun(t, "--data-dir", data, "session", "handoff", s.ID, "--json"); raw2 != raw {
		t.Fatal("the brief is not deterministic")
	}
	if strings.Contains(out, "Evidence") || brief["basis"].(map[string]any)["evidence"] != nil {
		t.Fatal("a data directory without a journal shows evidence")
	}
	if _, err := os.Stat(filepath.Join(data, app.EvidenceDB)); err == nil {
		t.Fatal("the handoff command created an evidence journal")
	}

	// With a journal: its counts and a signed head are in the basis.
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := evidence.Digest([]byte("x"))
	for i, b := range []evidence.Binding{evidence.BindingVerified, evidence.BindingInvalidClaim} {
		r := evidence.Record{InvocationID: fmt.Sprint("inv-", i), At: time.Unix(1, 0), Tool: "read_files", Source: evidence.SourceREST,
			Claim: evidence.Claim{RecordingSessionID: s.ID}, Binding: b, Outcome: evidence.OutcomeOK, ArgumentsDigest: d, ResultDigest: d,
			Reasons: []evidence.Reason{evidence.ReasonStoreMatch}}
		if b == evidence.BindingVerified {
			r.Verified = evidence.Verified{SessionID: s.ID, Project: "agent:local:demo"}
		} else {
			r.Reasons, r.Outcome = []evidence.Reason{evidence.ReasonAuthorityMismatch}, evidence.OutcomeRefused
		}
		if _, err := j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	out = mustRun(t, "--data-dir", data, "session", "handoff", s.ID)
	if !strings.Contains(out, "Evidence  1 verified, 0 sessionless, 1 invalid claims, 0 unknown") || !strings.Contains(out, "at size 2") {
		t.Fatalf("handoff with a journal:\n%s", out)
	}
}

// TestServePublicURLFlag: --public-url is checked like the config key,
// before anything is opened.
func TestServePublicURLFlag(t *testing.T) {
	data := t.TempDir()
	_, err := run(t, "--data-dir", data, "serve", "--listen", "127.0.0.1:0", "--public-url", "ftp://tunnel.example")
	var ce *app.ConfigError
	if !errors.As(err, &ce) || ce.Key != "public_url" {
		t.Fatalf("got %v, want a ConfigError on public_url", err)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Fatalf("a refused serve left %d files in the data directory", len(entries))
	}
}
