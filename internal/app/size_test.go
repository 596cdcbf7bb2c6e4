package app_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Size bounds of the module's non-test Go source: a file holds at most
// MaxFileLines lines, and a function at most MaxFuncLines, counted from
// its func keyword to its closing brace (its doc comment is not counted).
// A file past the bound is split into files named for what they hold, a
// function into functions named for what they do.
const (
	MaxFileLines = 1000
	MaxFuncLines = 150
)

// sizeAllowlist names the functions allowed past MaxFuncLines, each with
// the reason it was not split, keyed as TestNoHugeFilesOrFunctions reports
// them ("internal/pkg/file.go:Recv.Name"). Keep it empty: an entry that no
// longer exceeds the bound fails the test too, so the list never goes
// stale.
var sizeAllowlist = map[string]string{}

// TestNoHugeFilesOrFunctions keeps every non-test Go file of the module
// within MaxFileLines and every function (and package-level function
// literal) within MaxFuncLines, except the functions sizeAllowlist names.
func TestNoHugeFilesOrFunctions(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	allowed := map[string]bool{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		rel, err := filepath.Rel("../..", path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if n := fset.File(f.Pos()).LineCount(); n > MaxFileLines {
			t.Errorf("%s has %d lines (max %d): split it into files named for what they hold", rel, n, MaxFileLines)
		}
		for name, n := range longFuncs(fset, f) {
			key := rel + ":" + name
			if _, ok := sizeAllowlist[key]; ok {
				allowed[key] = true
				continue
			}
			t.Errorf("%s has %d lines (max %d): split it by responsibility", key, n, MaxFuncLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d Go files", files)
	}
	for key := range sizeAllowlist {
		if !allowed[key] {
			t.Errorf("sizeAllowlist names %s, which is not a function over %d lines: remove the entry", key, MaxFuncLines)
		}
	}
}

// longFuncs returns the functions of f longer than MaxFuncLines, by name
// (Recv.Name for a method), with their line counts. A function literal
// outside any function is named by its line; one inside a function is
// counted in that function.
func longFuncs(fset *token.FileSet, f *ast.File) map[string]int {
	out := map[string]int{}
	lines := func(n ast.Node) int {
		return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if n := lines(d); n > MaxFuncLines {
				out[funcName(d)] = n
			}
		case *ast.GenDecl:
			ast.Inspect(d, func(node ast.Node) bool {
				lit, ok := node.(*ast.FuncLit)
				if !ok {
					return true
				}
				if n := lines(lit); n > MaxFuncLines {
					out[fmt.Sprintf("func literal at line %d", fset.Position(lit.Pos()).Line)] = n
				}
				return false
			})
		}
	}
	return out
}

// funcName is d's name, Recv.Name for a method.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}
