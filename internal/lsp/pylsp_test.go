package lsp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// needPylsp skips the test when pylsp is not installed, unless
// WEBCODEX_REQUIRE_PYLSP=1 makes that a failure.
func needPylsp(t *testing.T) {
	t.Helper()
	l, _ := LanguageNamed(Languages, "python")
	if _, ok := lookServer(l, runner.ChildEnv(os.Getenv, nil)); ok {
		return
	}
	if os.Getenv("WEBCODEX_REQUIRE_PYLSP") == "1" {
		t.Fatal("pylsp is not installed and WEBCODEX_REQUIRE_PYLSP=1")
	}
	t.Skip("pylsp is not installed (Debian: python3-pylsp)")
}

func TestPylspNavigation(t *testing.T) {
	needPylsp(t)
	p := writeFixture(t, map[string]string{
		"pkg/__init__.py": "",
		"pkg/util.py":     "def greet(name):\n    \"\"\"Return a greeting for name.\"\"\"\n    return \"hello \" + name\n",
		"main.py":         "from pkg.util import greet\n\nw = \"é𝔸\"; x = greet(w)\nprint(greet(\"again\"))\n",
	})
	m := newTestManager(t)
	ctx := context.Background()
	line := "w = \"é𝔸\"; x = greet(w)"
	col := column(t, line, "greet", 1)
	def, err := m.Navigate(ctx, p, Request{Op: OpDefinition, Path: "main.py", Line: 3, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Locations) != 1 || def.Locations[0].Path != "pkg/util.py" || def.Locations[0].StartLine != 1 || def.Locations[0].StartColumn != 5 || def.Server != "pylsp" {
		t.Fatalf("definition: %+v", def)
	}
	refs, err := m.Navigate(ctx, p, Request{Op: OpReferences, Path: "pkg/util.py", Line: 1, Column: 5})
	if err != nil {
		t.Fatal(err)
	}
	// The definition, the import and two calls.
	if refs.Total != 4 {
		t.Fatalf("references: %+v", refs)
	}
	syms, err := m.Navigate(ctx, p, Request{Op: OpDocumentSymbols, Path: "pkg/util.py"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms.Symbols {
		found = found || (s.Name == "greet" && s.Kind == "function" && s.StartLine == 1)
	}
	if !found {
		t.Fatalf("document symbols: %+v", syms.Symbols)
	}
	hov, err := m.Navigate(ctx, p, Request{Op: OpHover, Path: "main.py", Line: 3, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hov.Hover, "greet(name)") {
		t.Errorf("hover %q", hov.Hover)
	}
}

// pylsp publishes unversioned diagnostics: each call still answers for
// the file's current content.
func TestPylspDiagnosticsFollowEdits(t *testing.T) {
	needPylsp(t)
	// pylsp reports syntax errors through its pyflakes plugin.
	if !pylspImports(t, "pyflakes") {
		if os.Getenv("WEBCODEX_REQUIRE_PYLSP") == "1" {
			t.Fatal("pyflakes is not installed and WEBCODEX_REQUIRE_PYLSP=1")
		}
		t.Skip("pyflakes is not installed (Debian: python3-pyflakes)")
	}
	p := writeFixture(t, map[string]string{"m.py": "x = 1\n"})
	m := newTestManager(t)
	diags := func() []Diagnostic {
		t.Helper()
		r, err := m.Navigate(context.Background(), p, Request{Op: OpDiagnostics, Path: "m.py"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Problems
	}
	if d := diags(); len(d) != 0 {
		t.Fatalf("before the edit: %+v", d)
	}
	file := filepath.Join(p.Root, "m.py")
	os.WriteFile(file, []byte("x = (\n"), 0o644)
	if d := diags(); len(d) == 0 || d[0].Severity != "error" {
		t.Fatalf("after breaking the syntax: %+v", d)
	}
	os.WriteFile(file, []byte("x = 1\n"), 0o644)
	if d := diags(); len(d) != 0 {
		t.Fatalf("after the fix: %+v", d)
	}
}

// pylspImports reports whether module imports in the interpreter pylsp
// runs on (its #! line), which need not be the python3 first on PATH.
func pylspImports(t *testing.T, module string) bool {
	t.Helper()
	path, err := exec.LookPath("pylsp")
	if err != nil {
		return false
	}
	head, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(head), "\n")
	interp := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(interp) == 0 {
		interp = []string{"python3"}
	}
	return exec.Command(interp[0], append(interp[1:], "-c", "import "+module)...).Run() == nil
}
