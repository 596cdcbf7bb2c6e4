package app_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/workflow"
)

// lspProject writes a Go module with two packages and a symlink out of
// the project.
func lspProject(t *testing.T) string {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/nav\n\ngo 1.21\n",
		"b/b.go": "package b\n\n// Greet returns a greeting for name.\nfunc Greet(name string) string { return \"hello \" + name }\n",
		"a/a.go": "package a\n\nimport \"example.com/nav/b\"\n\n// Run greets.\nfunc Run() string { s := \"ünï\"; return b.Greet(s) }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "o.go"), []byte("package o\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "o.go"), filepath.Join(dir, "out.go")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLspOverRESTAndMCP: a definition across packages over REST, the
// references over MCP, bad inputs refused with their kinds over both;
// the session ledger observes paths only, and nothing in the project
// changes.
func TestLspOverRESTAndMCP(t *testing.T) {
	dir := lspProject(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolProfile = gateway.Full }, "p="+dir)
	defer s.stop(t)
	before := treeDigest(t, dir)
	w := must(t, s.call(t, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "Explore Greet"}, ""), "work_on_project")
	id := str(t, w.Output["session_id"])

	// "Greet" in a/a.go line 6 follows three 2-byte characters.
	line := "func Run() string { s := \"ünï\"; return b.Greet(s) }"
	col := len([]rune(line[:strings.Index(line, "Greet")])) + 1
	r := must(t, s.call(t, "lsp", map[string]any{"project": rawProjectID, "op": "definition", "path": "a/a.go", "line": 6, "column": col}, id), "definition")
	var res lsp.Result
	b, _ := json.Marshal(r.Output)
	json.Unmarshal(b, &res)
	if len(res.Locations) != 1 || res.Locations[0].Path != "b/b.go" || res.Locations[0].StartLine != 4 || res.Locations[0].StartColumn != 6 || res.Server != "gopls" {
		t.Fatalf("definition: %s", b)
	}

	mr := rawCall(t, s, s.token, "lsp", map[string]any{"project": rawProjectID, "op": "references", "path": "b/b.go", "line": 4, "column": 6})
	if !mr.StructuredContent.Success {
		t.Fatalf("references over MCP: %+v", mr.StructuredContent)
	}
	var refs lsp.Result
	b, _ = json.Marshal(mr.StructuredContent.Output)
	json.Unmarshal(b, &refs)
	if refs.Total != 2 || refs.Returned != 2 || refs.Truncated {
		t.Fatalf("references: %s", b)
	}

	hv := must(t, s.call(t, "lsp", map[string]any{"project": rawProjectID, "op": "hover", "path": "a/a.go", "line": 6, "column": col}, id), "hover")
	if !strings.Contains(string(hv.Output["hover"]), "Greet(name string) string") {
		t.Fatalf("hover: %s", hv.Output["hover"])
	}

	for _, c := range []struct {
		args map[string]any
		kind string
	}{
		{map[string]any{"op": "definition", "path": "a/a.go", "line": 8, "column": 1}, "invalid_arguments"},
		{map[string]any{"op": "definition", "path": "a/a.go", "line": 6, "column": len([]rune(line)) + 2}, "invalid_arguments"},
		{map[string]any{"op": "document_symbols", "path": "../x.go"}, "invalid_arguments"},
		{map[string]any{"op": "document_symbols", "path": "out.go"}, "permission_denied"},
		{map[string]any{"op": "rename", "path": "a/a.go"}, "invalid_arguments"},
	} {
		c.args["project"] = rawProjectID
		wantFail(t, s.call(t, "lsp", c.args, ""), c.kind)
		mr := rawCall(t, s, s.token, "lsp", c.args)
		if mr.StructuredContent.Success || mr.StructuredContent.Error.Kind != c.kind {
			t.Errorf("over MCP %v: %+v", c.args, mr.StructuredContent)
		}
	}

	sum := must(t, s.call(t, "session_summary", map[string]any{"session_id": id, "limit": 200}, ""), "summary")
	var evs []workflow.Event
	json.Unmarshal(sum.Output["events"], &evs)
	var observed []string
	for _, e := range evs {
		observed = append(observed, e.ObservedPaths...)
		if strings.Contains(e.Text+strings.Join(e.ObservedPaths, ""), "greeting for name") {
			t.Fatalf("the ledger carries hover text: %+v", e)
		}
	}
	if !slices.Contains(observed, "a/a.go") || !slices.Contains(observed, "b/b.go") {
		t.Fatalf("observed %v", observed)
	}
	// Successful navigation is exploration evidence: the continued
	// attempt's workset names the files the lsp calls observed.
	cont := must(t, s.call(t, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "Go on", "session_id": id}, ""), "continue")
	var fb struct {
		Attempt struct {
			Exploration struct {
				Items []string `json:"items"`
			} `json:"exploration"`
		} `json:"attempt"`
	}
	json.Unmarshal(cont.Output["continuation_feedback"], &fb)
	if ex := fb.Attempt.Exploration.Items; !slices.Contains(ex, "a/a.go") || !slices.Contains(ex, "b/b.go") {
		t.Fatalf("exploration workset after lsp calls: %s", cont.Output["continuation_feedback"])
	}
	if after := treeDigest(t, dir); !maps.Equal(before, after) {
		t.Fatalf("the project changed")
	}
}
