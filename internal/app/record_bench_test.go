package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
)

// BenchmarkReadEditRecordedVsUnrecorded alternates, round trip by round
// trip, one read_files + apply_text_edits round trip with no recording and
// the same round trip on another file with both calls recorded in a
// Workflow Session (the read's events written behind its response, the
// edit's started and finished durable, each commit carrying its evidence
// record). The ratio is recorded over unrecorded; the goal is at most
// 1.25 (+25%).
func BenchmarkReadEditRecordedVsUnrecorded(b *testing.B) {
	a := benchApp(b)
	ctx := context.Background()
	ps, _ := a.Projects.List(ctx)
	root := ps[0].Root
	id := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	vals := []string{"const v = 0", "const v = 1"}
	roundTrip := func(file, recorder string) func() {
		os.WriteFile(filepath.Join(root, file), []byte("package main\n\nconst v = 0\n\nfunc main() {}\n"), 0o644)
		i := 0
		return func() {
			out := benchCall(b, a, "read_files", map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": file}}}, recorder)
			rev := out["files"].([]any)[0].(map[string]any)["read_revision"]
			benchCall(b, a, "apply_text_edits", map[string]any{"project": "agent:local:bench", "changes": []any{map[string]any{
				"path": file, "op": "replace", "expected_read_revision": rev,
				"edits": []any{map[string]any{"old_text": vals[i%2], "new_text": vals[(i+1)%2]}},
			}}}, recorder)
			i++
		}
	}
	benchpair.Run(b, "unrecorded", roundTrip("u.go", ""), "recorded", roundTrip("r.go", id))
}

// BenchmarkRecordedMutationOnTmpfs measures the kernel's own cost for a
// recorded mutating call apart from fsyncs: the data directory and the
// project are on tmpfs (/dev/shm), where fsync returns at once, and the
// call is write_project_file recorded in a session, alternated with the
// same call unrecorded. The difference of the medians is what recording
// adds besides the disk (two commits, the evidence record's encoding and
// outbox row); the goal is at most 0.2 ms.
func BenchmarkRecordedMutationOnTmpfs(b *testing.B) {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		b.Skip("no /dev/shm")
	}
	data, err := os.MkdirTemp("/dev/shm", "wcbench-data-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(data) })
	proj := filepath.Join(data, "proj")
	os.Mkdir(proj, 0o700)
	a := openBenchApp(b, filepath.Join(data, "data"), "bench="+proj)
	id := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	write := func(path, recorder string) func() {
		args, _ := json.Marshal(map[string]any{"project": "agent:local:bench", "path": path, "content": "x"})
		first := true
		return func() {
			raw := args
			if !first { // overwriting needs a fence: the content never changes
				raw, _ = json.Marshal(map[string]any{"project": "agent:local:bench", "path": path, "content": "x",
					"expected_sha256": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"})
			}
			first = false
			res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "write_project_file", Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
			if !res.Success {
				b.Fatalf("write_project_file: %+v", res.Error)
			}
		}
	}
	benchpair.Run(b, "unrecorded", write("u.txt", ""), "recorded", write("r.txt", id))
}

// openBenchApp opens an app on dataDir with the given projects.
func openBenchApp(b *testing.B, dataDir string, projects ...string) *app.App {
	ctx := context.Background()
	cfg, _ := app.LoadConfig(dataDir, func(string) string { return "" })
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		b.Fatal(err)
	}
	return a
}
