package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestARunnerServesEveryReplica: a real `webcodex runner` given both
// replicas' addresses keeps a connection to each (decision 0075), so a
// call on its project that arrives at either replica is served. While A
// streams a command, the runner's connection to B is cut and made again:
// B's reconciliation of the runner's processes leaves A's command alone
// (neither adopts nor releases it) and A's call ends with its whole
// output. Replica A is then killed with -9 while a command it sent the runner runs: the command
// runs on to its end exactly once (nothing is re-sent), B keeps serving
// the runner's project, and the next replica to start records the cut-off
// call outcome_unknown in its session. The journal verifies.
func TestARunnerServesEveryReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	dbURL, keyFile, rs := startReplicas(t, 2, t.TempDir())
	var created struct {
		Token string `json:"token"`
	}
	out := mustRun(t, "--data-dir", t.TempDir(), "--database", dbURL, "runner", "token", "create", "--client-id", "box", "--json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Token, "wc_runner_") {
		t.Fatalf("runner token create: %v %q", err, out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("needle on the runner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(t.TempDir(), "runner.toml")
	if err := os.WriteFile(toml, fmt.Appendf(nil, "client_id = \"box\"\n\n[projects]\ndemo = %q\n", dir), 0o644); err != nil {
		t.Fatal(err)
	}
	// The runner reaches B through a proxy that cuts the connection
	// carrying the first request that names cutB.
	const cutB = "cut-the-link-to-B"
	proxy := startCutProxy(t, strings.TrimPrefix(rs[1].base, "http://"), cutB, false)
	r := startRunner(t, rs[0].base, toml, created.Token, "--server", "http://"+proxy.ln.Addr().String(), "--transport", "websocket")
	r.waitConnected(t) // the second connection
	a, b := replicaClient(t, rs[0].base), replicaClient(t, rs[1].base)
	for i, cs := range []*replicaSession{{a, "A"}, {b, "B"}} {
		runners := outField[[]struct {
			ClientID  string `json:"client_id"`
			Connected bool   `json:"connected"`
		}](t, mcpOutput(t, cs.cs, "list_runners", map[string]any{}), "runners")
		if len(runners) != 1 || runners[0].ClientID != "box" || !runners[0].Connected {
			t.Fatalf("list_runners on replica %d (%s): %+v", i, cs.name, runners)
		}
	}

	// A session made on A; calls on the runner's project at B and at A.
	sess := outField[string](t, mcpOutput(t, a, "work_on_project", map[string]any{"project": remoteProject, "instruction": "runner behind replicas"}), "session_id")
	read := mcpOutput(t, b, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "notes.txt"}}, "recording_session_id": sess})
	if !strings.Contains(string(read["files"]), "needle on the runner") {
		t.Fatalf("read_files at B: %s", read["files"])
	}
	for _, cs := range []*replicaSession{{a, "A"}, {b, "B"}} {
		ran := mcpOutput(t, cs.cs, "run_shell", map[string]any{"project": remoteProject, "command": "echo served for " + cs.name, "recording_session_id": sess})
		if !strings.Contains(string(ran["stdout"]), "served for "+cs.name) {
			t.Fatalf("run_shell at %s: %s", cs.name, ran["stdout"])
		}
	}

	// A streams a command while the runner's link to B is cut and made
	// again; the command waits for the file "go" the test makes after.
	runs := filepath.Join(dir, "runs.log")
	streamed := make(chan toolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := mcpCall(ctx, a, "run_shell", map[string]any{"project": remoteProject,
			"command": "echo first >> runs.log; while [ ! -e go ]; do sleep 0.05; done; echo streamed to A", "recording_session_id": sess})
		if err != nil {
			res.Output = json.RawMessage(fmt.Sprintf("%q", err.Error()))
		}
		streamed <- res
	}()
	waitFileHolds(t, runs, "first")
	if res, err := mcpCall(t.Context(), b, "run_shell", map[string]any{"project": remoteProject, "command": "echo " + cutB}); err != nil || res.Success {
		t.Fatalf("the call whose link was cut: %v %+v", err, res)
	}
	r.waitConnected(t) // to B again, through the proxy
	mcpOutput(t, b, "run_shell", map[string]any{"project": remoteProject, "command": "true"})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := <-streamed; !res.Success || !strings.Contains(string(res.Output), "streamed to A") {
		t.Fatalf("A's call while the runner reconnected to B: %+v %s", res.Error, res.Output)
	}

	// A dies with a command in flight on the runner.
	cut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := mcpCall(ctx, a, "run_shell", map[string]any{"project": remoteProject,
			"command": "echo started >> runs.log; sleep 2; echo finished >> runs.log", "recording_session_id": sess})
		if err == nil && res.Success {
			err = fmt.Errorf("the call A was killed in answered success: %s", res.Output)
		} else {
			err = nil
		}
		cut <- err
	}()
	waitFileHolds(t, runs, "started")
	if err := rs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-rs[0].done
	if err := <-cut; err != nil {
		t.Fatal(err)
	}
	// B keeps serving the runner's project; the command runs on, once.
	ran := mcpOutput(t, b, "run_shell", map[string]any{"project": remoteProject, "command": "echo after the kill"})
	if !strings.Contains(string(ran["stdout"]), "after the kill") {
		t.Fatalf("run_shell at B after A was killed: %s", ran["stdout"])
	}
	waitFileHolds(t, runs, "finished")
	if got, _ := os.ReadFile(runs); strings.Count(string(got), "started") != 1 {
		t.Fatalf("the command cut off with A ran %d times:\n%s", strings.Count(string(got), "started"), got)
	}

	// The next replica to start records the call A never finished.
	c := startServe(t, "--data-dir", t.TempDir(), "--database", dbURL, "--evidence-key", keyFile)
	unknown := outField[struct {
		Total int                    `json:"total"`
		Items []workflow.UnknownCall `json:"items"`
	}](t, mcpOutput(t, replicaClient(t, c.base), "session_summary", map[string]any{"session_id": sess}), "outcome_unknown")
	if unknown.Total != 1 || len(unknown.Items) != 1 || unknown.Items[0].Tool != "run_shell" || unknown.Items[0].Outcome != workflow.OutcomeUnknown {
		t.Fatalf("the call cut off with A: %+v", unknown)
	}
	if strings.Contains(r.output(), "level=ERROR") {
		t.Fatalf("the runner logged an error:\n%s", r.output())
	}
	stopServe(t, rs[1])
	stopServe(t, c)
	verifyReplicaEvidence(t, dbURL, keyFile)
}

// replicaSession is an MCP client of one replica, named for messages.
type replicaSession struct {
	cs   *mcp.ClientSession
	name string
}

// waitFileHolds waits until the file at path contains want.
func waitFileHolds(t *testing.T, path, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q", path, want)
		}
	}
}
