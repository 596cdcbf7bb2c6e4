package app_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestArchitecture keeps DESIGN.md's layering true: arrows only point down.
func TestArchitecture(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps,Imports", "github.com/webcodex/webcodex/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/webcodex/webcodex/"
	dec := json.NewDecoder(strings.NewReader(string(out)))
	type pkg struct {
		ImportPath string
		Deps       []string
		// Imports are the direct (non-test) imports; Deps is transitive.
		Imports []string
	}
	rules := []struct {
		from      []string // package prefixes (relative to the module)
		forbidden []string
		why       string
	}{
		{[]string{"internal/workflow", "internal/auth", "internal/project", "internal/failure", "internal/redact",
			"internal/sqlitedb", "internal/runner", "internal/shell", "internal/jobs", "internal/testreport", "internal/audit", "internal/evidence",
			"internal/gitrepo", "internal/admission", "internal/window", "internal/goal", "internal/memory", "internal/oauth/accesstoken", "internal/intent", "internal/sqlrow"},
			[]string{"internal/kernel", "internal/tools", "internal/transport", "internal/httpserver", "internal/app"},
			"domains and infrastructure import no kernel, tool or transport"},
		{[]string{"internal/sshresource"},
			[]string{"internal/kernel", "internal/tools", "internal/transport", "internal/httpserver", "internal/app", "internal/workflow"},
			"the SSH layer is infrastructure: it knows a session only by its id"},
		{[]string{"internal/kernel"}, []string{"internal/transport", "internal/httpserver", "internal/app", "internal/tools"},
			"the kernel imports no transport and no tool"},
		{[]string{"internal/tools"}, []string{"internal/transport", "internal/httpserver", "internal/app"},
			"tools import no transport"},
		{[]string{"internal/gateway"}, []string{"internal/transport", "internal/httpserver", "internal/app", "internal/tools"},
			"the gateway reads the kernel's registry and imports no transport and no tool"},
		{[]string{"internal/console"}, []string{"internal/tools", "internal/transport", "internal/app"},
			"the console is a transport: it reads domains and dispatches through the kernel, never a tool package"},
		{[]string{"internal/failure"}, []string{"internal/"}, "failure is a leaf"},
		{[]string{"internal/audit"}, []string{"internal/workflow"}, "Action Audit Sessions never read or write Workflow Sessions"},
		{[]string{"internal/workflow"}, []string{"internal/audit"}, "Workflow Sessions never read or write Action Audit Sessions"},
		{[]string{"internal/evidence"}, []string{"internal/workflow", "internal/audit"}, "the evidence journal is its own system: it reads no session store"},
		{[]string{"internal/window"}, []string{"internal/workflow", "internal/audit"}, "the window plane is not a session type: it reads no session store"},
		{[]string{"internal/goal"}, []string{"internal/workflow", "internal/audit"}, "Goals are correlation only: the Goal domain reads no session store"},
		{[]string{"internal/workflow"}, []string{"internal/goal"}, "no session lifecycle changes a Goal: Workflow Sessions never import the Goal domain"},
		{[]string{"internal/memory"}, []string{"internal/workflow", "internal/audit"}, "Project Memory is its own plane: no session event writes it"},
		{[]string{"internal/intent"}, []string{"internal/workflow", "internal/audit"}, "intents are advisory: the intent domain reads no session store"},
		{[]string{"internal/pgnotify"}, []string{"internal/workflow", "internal/audit", "internal/evidence", "internal/jobs", "internal/window",
			"internal/goal", "internal/memory", "internal/auth", "internal/project", "internal/runner", "internal/kernel", "internal/tools",
			"internal/transport", "internal/httpserver", "internal/app"},
			"the LISTEN/NOTIFY wakes are infrastructure: a channel is a name and a key an opaque id, no domain"},
	}
	// Tool packages (internal/tools/<tool>) import no other tool package:
	// what two tools share lives in a domain or infrastructure package.
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	// The concrete stores are the packages built directly on
	// internal/sqlitedb (the workflowdb, auditdb, ... packages).
	stores := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for _, d := range p.Imports {
			// A concrete store is built on SQLite or PostgreSQL.
			if (d == mod+"internal/sqlitedb" || d == mod+"internal/pgdb") && !hasPrefix(rel, []string{"internal/app"}) {
				stores[p.ImportPath] = true
			}
		}
	}
	if len(stores) < 6 {
		t.Fatalf("found %d concrete stores (packages importing internal/sqlitedb or internal/pgdb), want at least the 6 domain databases", len(stores))
	}
	seen, cmds := 0, 0
	for _, p := range pkgs {
		seen++
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for _, r := range rules {
			if !hasPrefix(rel, r.from) {
				continue
			}
			for _, d := range p.Deps {
				if !strings.HasPrefix(d, mod) {
					continue
				}
				drel := strings.TrimPrefix(d, mod)
				if hasPrefix(drel, r.forbidden) {
					t.Errorf("%s imports %s: %s", rel, drel, r.why)
				}
			}
		}
		// Tool packages (internal/tools/<tool>) import no other tool
		// package: what two tools share lives in a domain or
		// infrastructure package.
		if tool := toolOf(rel); tool != "" {
			for _, d := range p.Imports {
				drel := strings.TrimPrefix(d, mod)
				if other := toolOf(drel); other != "" && other != tool && strings.HasPrefix(d, mod) {
					t.Errorf("%s imports %s: tools import no other tools package", rel, drel)
				}
			}
		}
		// Only the composition root opens concrete stores. The commands
		// (cmd/) are held to it too: they reach the stores only through
		// internal/app, so their direct imports name no store and no
		// database driver (their tests may read databases to check results;
		// go list's Imports and Deps leave test files out).
		if !hasPrefix(rel, []string{"internal/app"}) && !stores[p.ImportPath] {
			deps := p.Deps
			if hasPrefix(rel, []string{"cmd"}) {
				cmds++
				deps = p.Imports
				for _, d := range p.Imports {
					if d == "database/sql" || hasPrefix(d, []string{"modernc.org/sqlite", "github.com/jackc/pgx", mod + "internal/sqlitedb", mod + "internal/pgdb"}) {
						t.Errorf("%s imports %s: commands open databases only through internal/app", rel, strings.TrimPrefix(d, mod))
					}
				}
			}
			for _, d := range deps {
				if stores[d] {
					t.Errorf("%s imports %s: only internal/app wires stores", rel, strings.TrimPrefix(d, mod))
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list returned only %d packages", seen)
	}
	if cmds == 0 {
		t.Fatal("go list returned no cmd/ package: the store rule for commands checked nothing")
	}
}

// toolOf returns the tool directory of a module-relative package under
// internal/tools ("internal/tools/git" for internal/tools/git/...), or "".
func toolOf(rel string) string {
	rest, ok := strings.CutPrefix(rel, "internal/tools/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return "internal/tools/" + name
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// TestNoImportAliases: package names are chosen so that no file of the
// module needs an alias to import another of its packages.
func TestNoImportAliases(t *testing.T) {
	const mod = "github.com/webcodex/webcodex/"
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if im.Name != nil && im.Name.Name != "_" && strings.HasPrefix(p, mod) {
				t.Errorf("%s imports %s as %s: the package name should need no alias", path, p, im.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d Go files", files)
	}
}
