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
	"github.com/webcodex/webcodex/internal/kernel"
)

// BenchmarkReadEditRoundTrip measures one read_files + apply_text_edits
// round trip through the kernel with a verified recorder (both calls
// recorded in a Workflow Session) against the same round trip with no
// recording, in the same run.
func BenchmarkReadEditRoundTrip(b *testing.B) {
	for _, mode := range []string{"unrecorded", "recorded"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			proj := b.TempDir()
			os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n\nconst v = 0\n\nfunc main() {}\n"), 0o644)
			cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
			a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
				b.Fatal(err)
			}
			call := func(tool string, args any, recorder string) kernel.Result {
				raw, _ := json.Marshal(args)
				res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
				if !res.Success {
					b.Fatalf("%s: %+v", tool, res.Error)
				}
				return res
			}
			recorder := ""
			if mode == "recorded" {
				out, _ := json.Marshal(call("work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "").Output)
				var w struct {
					SessionID string `json:"session_id"`
				}
				json.Unmarshal(out, &w)
				recorder = w.SessionID
			}
			vals := []string{"const v = 0", "const v = 1"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, _ := json.Marshal(call("read_files", map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": "main.go"}}}, recorder).Output)
				var rd struct {
					Files []struct {
						ReadRevision string `json:"read_revision"`
					} `json:"files"`
				}
				json.Unmarshal(out, &rd)
				call("apply_text_edits", map[string]any{"project": "agent:local:bench", "changes": []any{map[string]any{
					"path": "main.go", "op": "replace", "expected_read_revision": rd.Files[0].ReadRevision,
					"edits": []any{map[string]any{"old_text": vals[i%2], "new_text": vals[(i+1)%2]}},
				}}}, recorder)
			}
		})
	}
}
