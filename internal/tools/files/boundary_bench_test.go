package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workspace"
)

// BenchmarkReadThroughTheBoundary alternates the read of read_files called
// as before the runner boundary (the effect function itself) and through
// it (workspace.Do on the in-process runner, as the tool calls it now).
// The goal is a ratio of at most 1.05.
func BenchmarkReadThroughTheBoundary(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "a.go"), []byte(strings.Repeat("package main // a line of a Go file\n", 40)), 0o644)
	root, _ := project.CanonicalRoot(dir)
	p := project.Project{ID: "agent:local:bench", Name: "bench", Root: root}
	in := ReadFilesInput{Files: []ReadRequest{{Path: "a.go"}}}
	ctx := context.Background()
	local := workspace.LocalOnly(&runner.Local{}).For(p)
	benchpair.Run(b, "direct", func() {
		if _, _, err := readFiles(ctx, p, in); err != nil {
			b.Fatal(err)
		}
	}, "boundary", func() {
		if _, err := workspace.Do(ctx, local, p, readOp, in); err != nil {
			b.Fatal(err)
		}
	})
}
