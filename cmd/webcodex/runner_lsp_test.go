package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRunnerNavigatesItsProject: the lsp tool on a runner's project runs
// the language server on the runner (the server keeps no cache of its
// own for it), and a bad position is refused there with its kind.
func TestRunnerNavigatesItsProject(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	if _, err := exec.LookPath("gopls"); err != nil && os.Getenv("WEBCODEX_REQUIRE_GOPLS") != "1" {
		if _, err := os.Stat(filepath.Join(os.Getenv("HOME"), "go", "bin", "gopls")); err != nil {
			t.Skip("gopls is not installed")
		}
	}
	f := newRunnerFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "go.mod"), []byte("module example.com/demo\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startRunner(t, f.srv.base, f.toml, f.token)
	r, err := callTool(context.Background(), f.srv.base, "lsp", map[string]any{"project": remoteProject, "op": "document_symbols", "path": "main.go"}, "")
	if err != nil || !r.Success {
		t.Fatalf("lsp on the runner's project: %v %+v %s", err, r.Error, r.Output)
	}
	var res struct {
		Symbols []struct {
			Name      string `json:"name"`
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
		} `json:"symbols"`
		Server string `json:"server"`
	}
	json.Unmarshal(r.Output, &res)
	if len(res.Symbols) != 1 || res.Symbols[0].Name != "main" || res.Symbols[0].Path != "main.go" || res.Symbols[0].StartLine != 3 || res.Server != "gopls" {
		t.Fatalf("document symbols: %s", r.Output)
	}
	// The server's own Manager never started a server for it.
	if entries, _ := os.ReadDir(filepath.Join(f.data, "lsp")); len(entries) != 0 {
		t.Fatalf("the server ran a language server for a runner's project: %v", entries)
	}
	r, err = callTool(context.Background(), f.srv.base, "lsp", map[string]any{"project": remoteProject, "op": "definition", "path": "main.go", "line": 9, "column": 1}, "")
	if err != nil || r.Success || r.Error.Kind != "invalid_arguments" {
		t.Fatalf("a position past the end: %v %+v", err, r.Error)
	}
}
