package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
)

// runChild runs the CLI in a child process and returns its output and
// exit code.
func runChild(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestSessionMessagesCommand(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st.Workflow, nil)
	s, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "x"})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "y"})
	board := workflow.NewBoard(st.Workflow, nil)
	post := func(p workflow.PostParams) workflow.Message {
		p.SessionID = s.ID
		m, _, err := board.Post(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	todo := post(workflow.PostParams{Kind: workflow.MessageTodo, Body: "write the parser\nsecond line", Priority: workflow.PriorityHigh, RequiresAck: true})
	long := post(workflow.PostParams{Kind: workflow.MessageNote, Body: strings.Repeat("n", 100)})
	q := post(workflow.PostParams{Kind: workflow.MessageQuestion, Body: "which format?", ReplyTo: todo.ID})
	if _, _, err := board.Resolve(ctx, workflow.ResolveParams{SessionID: s.ID, MessageID: q.ID}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := mustRun(t, "--data-dir", data, "session", "messages", s.ID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !regexp.MustCompile(`^KIND\s+STATUS\s+PRIORITY\s+ID\s+AGE\s+MESSAGE$`).MatchString(lines[0]) {
		t.Fatalf("table:\n%s", out)
	}
	// Newest first; one line each; the first line of the text, clipped.
	for i, want := range []string{
		`^question\s+resolved\s+normal\s+` + q.ID + `\s+\d+[smhd]\s+which format\?$`,
		`^note\s+open\s+normal\s+` + long.ID + `\s+\d+[smhd]\s+n{59}…$`,
		`^todo\s+open \(ack\)\s+high\s+` + todo.ID + `\s+\d+[smhd]\s+write the parser$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i+1]) {
			t.Fatalf("line %d %q does not match %s", i+1, lines[i+1], want)
		}
	}
	out = mustRun(t, "--data-dir", data, "session", "messages", s.ID, "--kind", "todo")
	if !strings.Contains(out, todo.ID) || strings.Contains(out, q.ID) {
		t.Fatalf("--kind todo:\n%s", out)
	}
	out = mustRun(t, "--data-dir", data, "session", "messages", s.ID, "--limit", "1")
	if !strings.Contains(out, q.ID) || strings.Contains(out, todo.ID) || !strings.Contains(out, "more match") {
		t.Fatalf("--limit 1:\n%s", out)
	}

	var got struct {
		SessionID string             `json:"session_id"`
		Messages  []workflow.Message `json:"messages"`
		HasMore   bool               `json:"has_more"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "session", "messages", s.ID, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.SessionID != s.ID || got.HasMore || len(got.Messages) != 3 || got.Messages[0].ID != q.ID ||
		got.Messages[0].ReplyTo != todo.ID || got.Messages[2].Body != todo.Body || !got.Messages[2].RequiresAck {
		t.Fatalf("json: %+v", got)
	}
	if out := mustRun(t, "--data-dir", data, "session", "messages", empty.ID); out != "No messages.\n" {
		t.Fatalf("empty board: %q", out)
	}
	if out := mustRun(t, "--data-dir", data, "session", "messages", empty.ID, "--json"); !strings.Contains(out, `"messages": []`) {
		t.Fatalf("empty board json: %s", out)
	}

	// session handoff counts the same board.
	if out := mustRun(t, "--data-dir", data, "session", "handoff", s.ID); !strings.Contains(out,
		"Board     1 open todo(s), 0 question(s), 0 risk(s), 0 guidance; 1 unresolved ACK-required") {
		t.Fatalf("handoff:\n%s", out)
	}

	// Export and import carry the board: the other data directory lists
	// the same messages.
	ledger := t.TempDir() + "/ledger.json"
	mustRun(t, "--data-dir", data, "session", "export", s.ID, "-o", ledger)
	other := t.TempDir()
	mustRun(t, "--data-dir", other, "project", "add", "demo="+t.TempDir())
	if out := mustRun(t, "--data-dir", other, "session", "import", ledger); out != "Imported 1 session(s) with 3 message(s).\n" {
		t.Fatalf("import: %q", out)
	}
	if a, b := mustRun(t, "--data-dir", data, "session", "messages", s.ID, "--json"),
		mustRun(t, "--data-dir", other, "session", "messages", s.ID, "--json"); a != b {
		t.Fatalf("imported board differs:\n%s\n%s", a, b)
	}

	// An edited message row is left out and named.
	raw, _ := os.ReadFile(ledger)
	edited := t.TempDir() + "/edited.json"
	os.WriteFile(edited, bytes.Replace(raw, []byte("which format?"), []byte("which format!"), 1), 0o600)
	third := t.TempDir()
	mustRun(t, "--data-dir", third, "project", "add", "demo="+t.TempDir())
	out = mustRun(t, "--data-dir", third, "session", "import", edited)
	if !strings.HasPrefix(out, "Imported 1 session(s) with 2 message(s).\nDiscarded 1 message row(s) that could not prove their shape:\n") ||
		!strings.Contains(out, "session "+s.ID+"), message 3 "+q.ID+": digest does not match") {
		t.Fatalf("edited import:\n%s", out)
	}

	// Exit codes, from a real process: success 0; an unknown or malformed
	// id, or a bad filter, 1 with a clear error and nothing on stdout.
	if o, e, code := runChild(t, "--data-dir", data, "session", "messages", s.ID); code != 0 || !strings.Contains(o, todo.ID) {
		t.Fatalf("exit %d: %s %s", code, o, e)
	}
	unknown := "wc_sess_" + strings.Repeat("0", 32)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"session", "messages", unknown}, "unknown_session_id: no Workflow Session " + unknown + " exists"},
		{[]string{"session", "messages", "wc_sess_bad"}, "invalid_session_id"},
		{[]string{"session", "messages", s.ID, "--kind", "memo"}, "invalid_arguments: unknown kind"},
		{[]string{"session", "messages", s.ID, "--limit", "101"}, "invalid_arguments: limit must be 1-100"},
	} {
		o, e, code := runChild(t, append([]string{"--data-dir", data}, c.args...)...)
		if code != 1 || o != "" || !strings.Contains(e, c.want) {
			t.Fatalf("%v: exit %d stdout %q stderr %q, want 1 and %q", c.args, code, o, e, c.want)
		}
	}
}
