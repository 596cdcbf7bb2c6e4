package files_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/files"
)

func TestOverview(t *testing.T) {
	e := newEnv(t)
	e.Write(".gitignore", "node_modules/\n*.log\n")
	e.Write(".git/HEAD", "ref")
	e.Write("AGENTS.md", "# rules\n")
	e.Write("README.md", "readme")
	e.Write("readme.txt", "r")
	e.Write(".github/copilot-instructions.md", "c")
	e.Write("main.go", "package main\n")      // 13
	e.Write("pkg/a.go", "package pkg\n")      // 12
	e.Write("pkg/b_test.GO", "package pkg\n") // 12, upper-case extension
	e.Write("web/app.ts", "let x = 1\n")      // 10
	e.Write("Makefile", "all:\n")             // 5
	e.Write("node_modules/dep/index.js", "x") // ignored
	e.Write("debug.log", "ignored")           // ignored
	if err := os.Symlink("AGENTS.md", filepath.Join(e.Project.Root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "r"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "r"), filepath.Join(e.Project.Root, "README.escape")); err != nil {
		t.Fatal(err)
	}

	res := e.Call("project_overview", map[string]any{})
	out := kerneltest.OK[files.OverviewOutput](t, res)
	if out.Project != e.Project.ID || out.RootName != filepath.Base(e.Project.Root) || !out.IsGitRepo {
		t.Fatalf("identity = %q %q git=%v", out.Project, out.RootName, out.IsGitRepo)
	}
	if raw := kerneltest.OutputBytes(t, res); bytes.Contains(raw, []byte(e.Project.Root)) {
		t.Fatalf("output reveals the absolute root: %s", raw)
	}
	var top []string
	for _, en := range out.TopLevel {
		top = append(top, en.Path+" "+string(en.Kind))
	}
	wantTop := []string{
		".github dir", ".gitignore file", "AGENTS.md file", "CLAUDE.md symlink", "Makefile file",
		"README.escape symlink", "README.md file", "main.go file", "pkg dir", "readme.txt file", "web dir",
	}
	if !slices.Equal(top, wantTop) || out.TopLevelTruncated {
		t.Fatalf("top level = %v", top)
	}
	// Files: .github/copilot-instructions.md, .gitignore, AGENTS.md,
	// Makefile, README.md, main.go, pkg/a.go, pkg/b_test.GO, readme.txt,
	// web/app.ts. Dirs: .github, pkg, web.
	if out.FileCount != 10 || out.DirCount != 3 || out.Truncated {
		t.Fatalf("counts: files %d dirs %d truncated %v", out.FileCount, out.DirCount, out.Truncated)
	}
	wantBytes := int64(1 + 20 + 8 + 5 + 6 + 13 + 12 + 12 + 1 + 10)
	if out.TotalBytes != wantBytes {
		t.Fatalf("total bytes %d, want %d", out.TotalBytes, wantBytes)
	}
	wantLangs := []files.Language{
		{Name: "Go", Files: 3, Bytes: 37},
		{Name: "Markdown", Files: 3, Bytes: 15},
		{Name: "TypeScript", Files: 1, Bytes: 10},
		{Name: "Makefile", Files: 1, Bytes: 5},
	}
	if !slices.Equal(out.Languages, wantLangs) {
		t.Fatalf("languages = %+v", out.Languages)
	}
	wantInstr := []string{".github/copilot-instructions.md", "AGENTS.md", "CLAUDE.md", "README.md", "readme.txt"}
	if !slices.Equal(out.InstructionFiles, wantInstr) {
		t.Fatalf("instruction files = %v", out.InstructionFiles)
	}
}

func TestOverviewNotGitAndBounds(t *testing.T) {
	if files.MaxOverviewTopLevel != 100 || files.MaxOverviewLanguages != 10 {
		t.Fatal("overview bounds changed")
	}
	e := newEnv(t)
	exts := []string{"go", "rs", "py", "js", "ts", "java", "rb", "php", "c", "cs", "swift", "kt"}
	for i, ext := range exts {
		for j := 0; j <= i; j++ {
			e.Write(fmt.Sprintf("l%02d/f%d.%s", i, j, ext), "x")
		}
	}
	for i := range files.MaxOverviewTopLevel {
		e.Write(fmt.Sprintf("t%03d", i), "")
	}
	out := kerneltest.OK[files.OverviewOutput](t, e.Call("project_overview", map[string]any{}))
	if out.IsGitRepo {
		t.Error("is_git_repo without .git")
	}
	if len(out.TopLevel) != files.MaxOverviewTopLevel || !out.TopLevelTruncated {
		t.Fatalf("top level: %d entries, truncated %v", len(out.TopLevel), out.TopLevelTruncated)
	}
	if len(out.Languages) != files.MaxOverviewLanguages {
		t.Fatalf("languages = %d", len(out.Languages))
	}
	// The most frequent language has 12 files ("kt"), the tenth has 3.
	if out.Languages[0].Name != "Kotlin" || out.Languages[0].Files != 12 || out.Languages[9].Files != 3 {
		t.Fatalf("languages = %+v", out.Languages)
	}
	if len(out.InstructionFiles) != 0 {
		t.Fatalf("instruction files = %v", out.InstructionFiles)
	}
	names := make([]string, len(out.Languages))
	for i, l := range out.Languages {
		names[i] = l.Name
	}
	if strings.Contains(strings.Join(names, ","), "Go") || strings.Contains(strings.Join(names, ","), "Rust") {
		t.Fatalf("least frequent languages kept: %v", names)
	}
}
