package lsp

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// needTSServer skips the test when typescript-language-server is not
// installed, unless WEBCODEX_REQUIRE_TSSERVER=1 makes that a failure.
func needTSServer(t *testing.T) {
	t.Helper()
	l, _ := LanguageNamed(Languages, "typescript")
	if _, ok := lookServer(l, runner.ChildEnv(os.Getenv, nil)); ok {
		return
	}
	if os.Getenv("WEBCODEX_REQUIRE_TSSERVER") == "1" {
		t.Fatal("typescript-language-server is not installed and WEBCODEX_REQUIRE_TSSERVER=1")
	}
	t.Skip("typescript-language-server is not installed (npm install -g typescript-language-server typescript)")
}

// tsFixture is a TypeScript module imported by another, and a JavaScript
// file: one server navigates both (languageIds typescript, javascript).
var tsFixture = map[string]string{
	"tsconfig.json": `{"compilerOptions": {"strict": true, "allowJs": true, "noEmit": true, "module": "esnext", "moduleResolution": "bundler", "target": "es2022"}}` + "\n",
	"src/util.ts":   "export function greet(name: string): string {\n  return \"hello \" + name;\n}\n",
	"src/main.ts":   "import { greet } from \"./util\";\n\nconst w = \"é𝔸\"; const x = greet(w);\nconsole.log(greet(\"again\"), x);\n",
	"src/old.js":    "function shout(s) {\n  return s.toUpperCase();\n}\nshout(\"a\");\n",
}

func TestTypeScriptNavigation(t *testing.T) {
	needTSServer(t)
	p := writeFixture(t, tsFixture)
	m := newTestManager(t)
	ctx := context.Background()
	line := "const w = \"é𝔸\"; const x = greet(w);"
	col := column(t, line, "greet", 1)
	def, err := m.Navigate(ctx, p, Request{Op: OpDefinition, Path: "src/main.ts", Line: 3, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Locations) != 1 || def.Locations[0].Path != "src/util.ts" || def.Locations[0].StartLine != 1 || def.Server != "typescript-language-server" {
		t.Fatalf("definition: %+v", def)
	}
	refs, err := m.Navigate(ctx, p, Request{Op: OpReferences, Path: "src/util.ts", Line: 1, Column: column(t, "export function greet(", "greet", 1)})
	if err != nil {
		t.Fatal(err)
	}
	// The declaration, the import and two calls.
	if refs.Total != 4 {
		t.Fatalf("references: %+v", refs)
	}
	hov, err := m.Navigate(ctx, p, Request{Op: OpHover, Path: "src/main.ts", Line: 3, Column: col})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hov.Hover, "greet(name: string): string") {
		t.Errorf("hover %q", hov.Hover)
	}
	syms, err := m.Navigate(ctx, p, Request{Op: OpDocumentSymbols, Path: "src/old.js"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms.Symbols {
		found = found || (s.Name == "shout" && s.Kind == "function" && s.StartLine == 1)
	}
	if !found || m.Started() != 1 {
		t.Fatalf("document symbols of a .js file (%d servers started): %+v", m.Started(), syms.Symbols)
	}
}
