package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
)

// fsyncChildEnv names the data directory of the child run of
// TestRecordingFsyncs (the process strace watches).
const fsyncChildEnv = "WEBCODEX_FSYNC_CHILD"

// fsyncCalls is how many calls of each kind the child makes between its
// markers.
const fsyncCalls = 200

// TestRecordingFsyncs counts, with strace, the fsync and fdatasync calls
// of the whole server process (and its children) per recorded call, over
// fsyncCalls calls after a warm-up, everything included: the ledger's
// commits, the evidence journal's batches, WAL checkpoints. A recorded
// mutating call (run_process `true`, which syncs nothing itself) commits
// twice: its durable tool_call_started and its tool_call_finished with the
// evidence record in the same commit, one fsync each (with 6 fsyncs of the
// journal before this change). Beyond those, SQLite's WAL checkpoints (an
// fsync of the WAL and one of the database every 1000 pages, in both
// files) and the journal's once-a-second sync of its lazily committed
// batches add about 0.03 per call here; the bound allows 0.1. A recorded
// read-only call
// (list_project_files) waits for none, and its process makes far fewer
// than one; so does an unrecorded one (no session: its evidence record is
// appended behind, lazily, decision 0043).
func TestRecordingFsyncs(t *testing.T) {
	if dir := os.Getenv(fsyncChildEnv); dir != "" {
		fsyncChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a child under strace")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "strace.out")
	cmd := exec.Command(strace, "-f", "-qq", "-e", "trace=fsync,fdatasync,mkdirat", "-o", out,
		os.Args[0], "-test.run=^TestRecordingFsyncs$", "-test.v")
	cmd.Env = append(os.Environ(), fsyncChildEnv+"="+filepath.Join(dir, "data"))
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(b), "ptrace") || strings.Contains(string(b), "Operation not permitted") {
			t.Skipf("strace cannot trace here: %s", b)
		}
		t.Fatalf("child: %v\n%s", err, b)
	}
	counts := fsyncsBetweenMarkers(t, out)
	mut, read := float64(counts["mutations"])/fsyncCalls, float64(counts["reads"])/fsyncCalls
	unrec := float64(counts["unrecorded"]) / fsyncCalls
	t.Logf("fsync+fdatasync per recorded call: mutating %.2f, read-only %.2f; per unrecorded read-only call %.2f", mut, read, unrec)
	if mut > 2.1 {
		t.Errorf("a recorded mutating call makes %.2f fsyncs, want 2 (its two commits) and WAL checkpoints", mut)
	}
	if mut < 1 {
		t.Errorf("a recorded mutating call makes %.2f fsyncs: its finish cannot be durable before the acknowledgement", mut)
	}
	if read > 0.5 {
		t.Errorf("a recorded read-only call makes %.2f fsyncs, want well under one (written behind)", read)
	}
	if unrec > 0.5 {
		t.Errorf("an unrecorded read-only call makes %.2f fsyncs, want well under one (its evidence appended behind)", unrec)
	}
}

// fsyncsBetweenMarkers counts the fsync/fdatasync lines of an strace log
// between mkdirat of "<name>.begin" and "<name>.end" for each name.
func fsyncsBetweenMarkers(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	current := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "mkdirat("):
			for _, name := range []string{"mutations", "reads", "unrecorded"} {
				if strings.Contains(line, name+".begin") {
					current = name
					counts[name] += 0
				}
				if strings.Contains(line, name+".end") {
					current = ""
				}
			}
		case current != "" && (strings.Contains(line, "fsync(") || strings.Contains(line, "fdatasync(")):
			counts[current]++
		}
	}
	if _, ok := counts["mutations"]; !ok {
		t.Fatalf("no markers in the strace log")
	}
	return counts
}

func fsyncChild(t *testing.T, dir string) {
	ctx := context.Background()
	cfg, _ := app.LoadConfig(dir, func(string) string { return "" })
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o700)
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args map[string]any, recorder string) map[string]any {
		raw, _ := json.Marshal(args)
		res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
		if !res.Success {
			t.Fatalf("%s: %+v", tool, res.Error)
		}
		var m map[string]any
		json.Unmarshal(res.Body, &m)
		return m
	}
	id := call("work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "count fsyncs"}, "")["output"].(map[string]any)["session_id"].(string)
	run := map[string]any{"project": "agent:local:bench", "argv": []string{"true"}}
	list := map[string]any{"project": "agent:local:bench"}
	for range 20 { // warm-up: statements prepared, WAL grown
		call("run_process", run, id)
		call("list_project_files", list, id)
	}
	mark := func(name string) { os.Mkdir(filepath.Join(dir, name), 0o700) }
	mark("mutations.begin")
	for range fsyncCalls {
		call("run_process", run, id)
	}
	mark("mutations.end")
	mark("reads.begin")
	for range fsyncCalls {
		call("list_project_files", list, id)
	}
	mark("reads.end")
	mark("unrecorded.begin")
	for range fsyncCalls {
		call("list_project_files", list, "")
	}
	mark("unrecorded.end")
}
