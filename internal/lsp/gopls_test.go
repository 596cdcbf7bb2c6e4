package lsp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
)

// goFixture is a module with two packages; a's call of b.Greet follows
// non-ASCII text (a 2-byte and a 4-byte character, the latter two UTF-16
// units) on the same line.
var goFixture = map[string]string{
	"go.mod": "module example.com/fix\n\ngo 1.21\n",
	"b/b.go": "package b\n\n// Greet returns a greeting for name.\nfunc Greet(name string) string { return \"hello \" + name }\n",
	"a/a.go": "package a\n\nimport \"example.com/fix/b\"\n\n// Run greets twice.\nfunc Run() string {\n\tw := \"é𝔸\"; x := b.Greet(w)\n\treturn x + b.Greet(\"again\")\n}\n",
	"c/c.go": "package c\n\nimport \"example.com/fix/b\"\n\nvar G = b.Greet(\"c\")\n",
}

// needGopls skips the test when gopls is not installed, unless
// WEBCODEX_REQUIRE_GOPLS=1 makes that a failure.
func needGopls(t testing.TB) {
	t.Helper()
	l, _ := LanguageNamed(Languages, "go")
	if _, ok := lookServer(l, runner.ChildEnv(os.Getenv, nil)); ok {
		return
	}
	if os.Getenv("WEBCODEX_REQUIRE_GOPLS") == "1" {
		t.Fatal("gopls is not installed and WEBCODEX_REQUIRE_GOPLS=1")
	}
	t.Skip("gopls is not installed (go install golang.org/x/tools/gopls@v0.23.0)")
}

func writeFixture(t testing.TB, files map[string]string) project.Project {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := project.CanonicalRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return project.Project{ID: "p", Name: "fix", Root: root}
}

// column is the 1-based character column of the n-th (from 1)
// occurrence of sub in line.
func column(t *testing.T, line, sub string, n int) int {
	t.Helper()
	at := -1
	for i := 0; i < n; i++ {
		j := strings.Index(line[at+1:], sub)
		if j < 0 {
			t.Fatalf("%q has no occurrence %d of %q", line, n, sub)
		}
		at += 1 + j
	}
	return utf8.RuneCountInString(line[:at]) + 1
}

func newTestManager(t *testing.T) *Manager {
	m := NewManager(Options{Sandbox: &runner.Policy{}})
	t.Cleanup(m.Close)
	return m
}

func TestGoplsNavigation(t *testing.T) {
	needGopls(t)
	p := writeFixture(t, goFixture)
	m := newTestManager(t)
	ctx := context.Background()
	line := strings.Split(goFixture["a/a.go"], "\n")[6]
	col := column(t, line, "Greet", 1)

	def, err := m.Navigate(ctx, p, Request{Op: OpDefinition, Path: "a/a.go", Line: 7, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gopls sandbox in force: %s", def.Sandbox)
	if def.Sandbox != string(runner.InForce(&runner.Local{Policy: &runner.Policy{}}, runner.Sandbox{Mode: runner.ReadOnly})) {
		t.Errorf("sandbox %q", def.Sandbox)
	}
	if len(def.Locations) != 1 {
		t.Fatalf("definition: %+v", def)
	}
	got := def.Locations[0]
	want := Location{Path: "b/b.go", Range: Range{StartLine: 4, StartColumn: 6, EndLine: 4, EndColumn: 11},
		Snippet: "func Greet(name string) string { return \"hello \" + name }"}
	if got != want {
		t.Errorf("definition = %+v, want %+v", got, want)
	}

	refs, err := m.Navigate(ctx, p, Request{Op: OpReferences, Path: "b/b.go", Line: 4, Column: 6})
	if err != nil {
		t.Fatal(err)
	}
	// The declaration, two calls in a, one in c.
	if refs.Total != 4 || refs.Returned != 4 || refs.Truncated {
		t.Fatalf("references: %+v", refs)
	}
	var inA []int
	for _, l := range refs.Locations {
		if l.Path == "a/a.go" && l.StartLine == 7 {
			inA = append(inA, l.StartColumn)
		}
	}
	if len(inA) != 1 || inA[0] != col {
		t.Errorf("reference on the non-ASCII line at columns %v, want [%d]", inA, col)
	}

	hov, err := m.Navigate(ctx, p, Request{Op: OpHover, Path: "a/a.go", Line: 7, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hov.Hover, "Greet(name string) string") {
		t.Errorf("hover %q lacks the signature", hov.Hover)
	}

	syms, err := m.Navigate(ctx, p, Request{Op: OpDocumentSymbols, Path: "a/a.go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(syms.Symbols) != 1 || syms.Symbols[0].Name != "Run" || syms.Symbols[0].Kind != "function" || syms.Symbols[0].Path != "a/a.go" || syms.Symbols[0].StartLine != 6 {
		t.Errorf("document symbols: %+v", syms.Symbols)
	}

	ws, err := m.Navigate(ctx, p, Request{Op: OpWorkspaceSymbols, Language: "go", Query: "Greet"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range ws.Symbols {
		found = found || (s.Name == "Greet" && s.Path == "b/b.go" && s.StartLine == 4)
	}
	if !found {
		t.Errorf("workspace symbols: %+v", ws.Symbols)
	}
	if m.Running() != 1 {
		t.Errorf("%d servers running, want the one warm gopls", m.Running())
	}
}

func TestGoplsDiagnosticsFollowEdits(t *testing.T) {
	needGopls(t)
	p := writeFixture(t, goFixture)
	m := newTestManager(t)
	ctx := context.Background()
	diags := func() []Diagnostic {
		t.Helper()
		r, err := m.Navigate(ctx, p, Request{Op: OpDiagnostics, Path: "c/c.go"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Problems
	}
	if d := diags(); len(d) != 0 {
		t.Fatalf("diagnostics before the edit: %+v", d)
	}
	file := filepath.Join(p.Root, "c", "c.go")
	if err := os.WriteFile(file, []byte("package c\n\nimport \"example.com/fix/b\"\n\nvar G int = b.Greet(\"c\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := diags()
	if len(d) == 0 || d[0].Severity != "error" || d[0].StartLine != 5 {
		t.Fatalf("diagnostics after breaking the build: %+v", d)
	}
	if err := os.WriteFile(file, []byte(goFixture["c/c.go"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := diags(); len(d) != 0 {
		t.Fatalf("diagnostics after the fix: %+v", d)
	}
}

func TestExternalDefinitionHasNoPath(t *testing.T) {
	needGopls(t)
	files := map[string]string{
		"go.mod":  "module example.com/ext\n\ngo 1.21\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"x\") }\n",
	}
	p := writeFixture(t, files)
	m := newTestManager(t)
	r, err := m.Navigate(context.Background(), p, Request{Op: OpDefinition, Path: "main.go", Line: 5, Column: 19})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Locations) != 1 {
		t.Fatalf("%+v", r)
	}
	l := r.Locations[0]
	if !l.External || l.Path != "" || l.Snippet != "" || l.Hint != "std: fmt" || strings.Contains(l.Hint, "/") {
		t.Errorf("external location %+v", l)
	}
}

// A bad request fails with its kind and starts no server.
func TestBadRequestsStartNothing(t *testing.T) {
	files := map[string]string{
		"go.mod":  "module example.com/bad\n\ngo 1.21\n",
		"a.go":    "package a\n\nvar X = 1\n",
		"bin.go":  "package a\x00\x01\x02",
		"note.md": "# hi\n",
	}
	p := writeFixture(t, files)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "o.go"), []byte("package o\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "o.go"), filepath.Join(p.Root, "link.go")); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t)
	for _, c := range []struct {
		name string
		req  Request
		kind failure.Kind
	}{
		{"unknown op", Request{Op: "rename", Path: "a.go", Line: 1, Column: 1}, failure.InvalidArguments},
		{"line past the end", Request{Op: OpDefinition, Path: "a.go", Line: 5, Column: 1}, failure.InvalidArguments},
		{"column past the end", Request{Op: OpHover, Path: "a.go", Line: 3, Column: 11}, failure.InvalidArguments},
		{"line zero", Request{Op: OpReferences, Path: "a.go", Line: 0, Column: 1}, failure.InvalidArguments},
		{"binary file", Request{Op: OpDocumentSymbols, Path: "bin.go"}, failure.InvalidArguments},
		{"outside the project", Request{Op: OpDocumentSymbols, Path: "../x.go"}, failure.InvalidArguments},
		{"absolute path", Request{Op: OpDocumentSymbols, Path: filepath.Join(outside, "o.go")}, failure.InvalidArguments},
		{"symlink out", Request{Op: OpDocumentSymbols, Path: "link.go"}, failure.PermissionDenied},
		{"no such file", Request{Op: OpDocumentSymbols, Path: "nope.go"}, failure.NotFound},
		{"unknown language", Request{Op: OpDocumentSymbols, Path: "note.md"}, failure.InvalidArguments},
		{"no path", Request{Op: OpDefinition, Line: 1, Column: 1}, failure.InvalidArguments},
		{"workspace symbols without query", Request{Op: OpWorkspaceSymbols, Language: "go"}, failure.InvalidArguments},
		{"workspace symbols without language", Request{Op: OpWorkspaceSymbols, Query: "X"}, failure.InvalidArguments},
	} {
		_, err := m.Navigate(context.Background(), p, c.req)
		if k := failure.KindOf(err); k != c.kind {
			t.Errorf("%s: kind %q (%v), want %q", c.name, k, err, c.kind)
		}
	}
	if n := m.Running(); n != 0 {
		t.Errorf("%d servers started by bad requests", n)
	}
}

// A language whose server is not installed is language_server_unavailable
// naming the server; nothing runs.
func TestServerUnavailable(t *testing.T) {
	p := writeFixture(t, map[string]string{"m.py": "x = 1\n"})
	m := NewManager(Options{Getenv: func(k string) string {
		if k == "PATH" {
			return t.TempDir()
		}
		return ""
	}})
	defer m.Close()
	_, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "m.py"})
	if failure.KindOf(err) != failure.LanguageServerUnavailable || !strings.Contains(err.Error(), "pylsp") {
		t.Fatalf("got %v", err)
	}
	if failure.DetailOf(err)["server"] != "pylsp" {
		t.Errorf("detail %v", failure.DetailOf(err))
	}
	if m.Running() != 0 {
		t.Errorf("a server slot is left")
	}
}
