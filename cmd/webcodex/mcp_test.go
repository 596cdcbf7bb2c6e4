package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestMCPStdio drives `webcodex mcp` as a child process through the go-sdk
// CommandTransport, in both protocol eras, on one data directory.
func TestMCPStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644)
	var sessionID string
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("era="+map[string]string{"": "modern", "2025-11-25": "legacy"}[version], func(t *testing.T) {
			argv, _ := json.Marshal([]string{"mcp", "--data-dir", data, "--project", "demo=" + proj})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			want := "2026-07-28"
			if version != "" {
				want = version
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %s, want %s", got, want)
			}
			args := map[string]any{"project": "agent:local:demo", "instruction": "stdio task"}
			if sessionID != "" {
				args["session_id"] = sessionID
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "work_on_project", Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("work_on_project: %v %+v", err, res)
			}
			var out struct {
				Success bool `json:"success"`
				Output  struct {
					SessionID    string `json:"session_id"`
					Continuation string `json:"continuation"`
				} `json:"output"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &out)
			if sessionID == "" {
				sessionID = out.Output.SessionID
			} else if out.Output.Continuation != "continued" || out.Output.SessionID != sessionID {
				t.Fatalf("second process did not continue the exact session: %s", b)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_files", Arguments: map[string]any{
				"project": "agent:local:demo", "files": []any{map[string]any{"path": "main.go"}}, "recording_session_id": sessionID}})
			if err != nil || res.IsError {
				t.Fatalf("read_files: %v %+v", err, res)
			}
			// A failing run whose recorder is its business session counts
			// once; a business claim of a session that does not exist is
			// refused and journaled invalid (checked after both eras).
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_process", Arguments: map[string]any{
				"project": "agent:local:demo", "session_id": sessionID, "argv": []any{"false"}, "recording_session_id": sessionID}})
			if err != nil || !res.IsError {
				t.Fatalf("run_process false: %v %+v", err, res)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "work_on_project", Arguments: map[string]any{
				"project": "agent:local:demo", "instruction": "continue it", "session_id": forgedSession}})
			if err != nil || !res.IsError {
				t.Fatalf("work_on_project forged: %v %+v", err, res)
			}
			// Closing stdin ends the server: it exits on EOF, cleanly.
			if err := cs.Close(); err != nil {
				t.Fatalf("close: %v\n%s", err, stderr.String())
			}
			if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
				t.Fatalf("server did not exit cleanly on EOF: %v\n%s", cmd.ProcessState, stderr.String())
			}
			if !strings.Contains(stderr.String(), "serving MCP on stdio") {
				t.Fatalf("logs did not go to stderr: %q", stderr.String())
			}
		})
	}

	ctx := context.Background()
	stores, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer stores.Close()
	sess, err := workflow.NewService(stores.Workflow, nil).Get(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	// Per era: work_on_project, read_files, run_process; the failure is
	// run_process's alone.
	if sess.Counters.ToolCalls != 6 || sess.Counters.ToolFailures != 2 {
		t.Fatalf("counters %+v, want 6 calls and 2 failures over two eras", sess.Counters)
	}
	j, skipped, err := app.OpenJournal(ctx, app.Config{DataDir: data})
	if err != nil || skipped != nil {
		t.Fatal(err)
	}
	defer j.Close()
	entries, err := j.SessionRecords(ctx, forgedSession, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("records of the forged business claim: %d %v", len(entries), err)
	}
	for _, e := range entries {
		r := e.Record
		if r.Tool != "work_on_project" || r.Binding != evidence.BindingInvalidClaim || len(r.Reasons) != 1 || r.Reasons[0] != evidence.ReasonNotRegistered {
			t.Fatalf("forged business claim record %+v", r)
		}
	}
}

// forgedSession is a well-formed session id that is never registered.
var forgedSession = "wc_sess_" + strings.Repeat("0", 32)
