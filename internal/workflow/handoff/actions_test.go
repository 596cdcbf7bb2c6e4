package handoff

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestActionTemplatesListsEveryAction parses this package's sources and
// checks that every Action* string constant is in ActionTemplates, the list
// the registry test in internal/app checks tool names against.
func TestActionTemplatesListsEveryAction(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, file := range names {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Action") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					text, _ := strconv.Unquote(lit.Value)
					found++
					if !slices.Contains(ActionTemplates, text) {
						t.Errorf("%s is not in ActionTemplates", name.Name)
					}
				}
			}
		}
	}
	if found != len(ActionTemplates) {
		t.Fatalf("found %d Action constants, ActionTemplates has %d", found, len(ActionTemplates))
	}
}
