package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// BenchmarkReadFilesReadSet prices read-set tracking (decision 0080):
// read_files of one file over the model-facing path of the real kernel
// (ambient projections run), recorded in a session, with tracking off and
// on, alternated call by call (the ratio is on over off; goal ≤ 1.05), on
// SQLite files and on PostgreSQL.
func BenchmarkReadFilesReadSet(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchReadSet(b, benchApp(b)) })
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.URL(b)
		benchReadSet(b, benchAppWith(b, func(c *app.Config) { c.DatabaseURL = url }))
	})
}

func benchReadSet(b *testing.B, a *app.App) {
	id := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	benchCall(b, a, "write_project_file", map[string]any{"project": "agent:local:bench", "path": "x.go",
		"content": "package x\n\nfunc X() int { return 1 }\n"}, id)
	raw, _ := json.Marshal(map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": "x.go"}}})
	read := func() {
		res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "read_files", Arguments: raw, RecordingSessionID: id,
			Principal: auth.LocalUser(), Source: kernel.SourceMCP})
		if !res.Success {
			b.Fatalf("read_files: %+v", res.Error)
		}
	}
	benchpair.Run(b, "tracking_off", func() {
		a.ReadSetsOff.Store(true)
		read()
	}, "tracking_on", func() {
		a.ReadSetsOff.Store(false)
		read()
	})
	if err := a.ReadSets.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if a.ReadSets.Dropped() != 0 || a.ReadSets.Failed() != 0 {
		b.Fatalf("observations dropped %d, failed %d", a.ReadSets.Dropped(), a.ReadSets.Failed())
	}
}
