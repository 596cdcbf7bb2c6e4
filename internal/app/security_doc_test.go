package app_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
)

// TestSecurityDocScopes keeps docs/security.md's scope table equal to the
// registry: each scope's row lists exactly the tools that require it.
func TestSecurityDocScopes(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && strings.HasPrefix(cells[0], "| `") {
			rows[strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")] = cells[1]
		}
	}
	by := map[auth.Scope][]string{}
	for _, tl := range app.NewRegistry(&app.App{}).Tools() {
		for _, s := range tl.Scopes {
			by[s] = append(by[s], tl.Name)
		}
	}
	for _, s := range []auth.Scope{auth.ScopeRuntimeRead, auth.ScopeProjectRead, auth.ScopeProjectWrite, auth.ScopeJobRun, auth.ScopeAccountManage} {
		row, ok := rows[string(s)]
		if !ok {
			t.Errorf("docs/security.md has no row for scope %s", s)
			continue
		}
		var documented []string
		for _, cell := range strings.Split(row, ", ") {
			if name := strings.Trim(cell, "` "); name != "—" && name != "" {
				documented = append(documented, name)
			}
		}
		want := by[s]
		slices.Sort(want)
		slices.Sort(documented)
		if !slices.Equal(documented, want) {
			t.Errorf("scope %s: docs/security.md lists %v, the registry requires it of %v", s, documented, want)
		}
	}
	if len(by) == 0 {
		t.Fatal("no tool declares a scope")
	}
}
