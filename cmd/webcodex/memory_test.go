package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
)

func TestMemoryCommands(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	mustRun(t, "--data-dir", data, "project", "add", "demo="+dir)
	if out := mustRun(t, "--data-dir", data, "memory", "list", "--project", "demo"); !strings.Contains(out, "No memory entries") {
		t.Fatalf("empty list: %s", out)
	}
	// Entries are written through the service, as the tools write them.
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	p := app.NewMemory(st)
	scope := memory.ScopeFor("agent:local:demo", mustRoot(t, data))
	r, err := p.Set(ctx, memory.SetParams{Scope: scope, Key: "conventions/tests", Body: "Use real SQLite files.", Tags: []string{"pinned"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Set(ctx, memory.SetParams{Scope: scope, Key: "pitfalls", Body: "Never hold the writer across a wait."}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := mustRun(t, "--data-dir", data, "memory", "list", "--project", "agent:local:demo")
	if !strings.Contains(out, "KEY") || strings.Index(out, "conventions/tests") > strings.Index(out, "pitfalls") {
		t.Fatalf("table (pinned first): %s", out)
	}
	var list struct {
		Entries []memory.Entry `json:"entries"`
		Total   int            `json:"total"`
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "memory", "list", "--project", "demo", "--json")), &list)
	if list.Total != 2 || len(list.Entries) != 2 || list.Entries[0].Revision != r.Entry.Revision {
		t.Fatalf("json list: %+v", list)
	}
	if out := mustRun(t, "--data-dir", data, "memory", "show", "--project", "demo", "conventions/tests", "--history"); !strings.Contains(out, "Use real SQLite files.") || !strings.Contains(out, r.Entry.Revision) {
		t.Fatalf("show: %s", out)
	}
	if out := mustRun(t, "--data-dir", data, "memory", "search", "--project", "demo", "writer"); !strings.Contains(out, "pitfalls") || !strings.Contains(out, "[writer]") {
		t.Fatalf("search: %s", out)
	}
	if _, err := run(t, "--data-dir", data, "memory", "search", "--project", "demo", `"open`); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("invalid query: %v", err)
	}
	if _, err := run(t, "--data-dir", data, "memory", "delete", "--project", "demo", "conventions/tests", "--revision", "mrev_7_000000000000000000000000"); failure.KindOf(err) != failure.RevisionConflict {
		t.Fatalf("stale delete: %v", err)
	}
	if _, err := run(t, "--data-dir", data, "memory", "delete", "--project", "demo", "absent", "--revision", r.Entry.Revision); failure.KindOf(err) != failure.UnknownMemory {
		t.Fatalf("absent delete: %v", err)
	}
	mustRun(t, "--data-dir", data, "memory", "delete", "--project", "demo", "conventions/tests", "--revision", r.Entry.Revision)
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "memory", "list", "--project", "demo", "--json")), &list)
	if list.Total != 1 || list.Entries[0].MemoryKey != "pitfalls" {
		t.Fatalf("after delete: %+v", list)
	}
	if _, err := run(t, "--data-dir", data, "memory", "list"); err == nil {
		t.Fatal("list without --project succeeded")
	}
}

// mustRoot is the canonical root of project demo.
func mustRoot(t *testing.T, data string) string {
	t.Helper()
	var list struct {
		Projects []struct{ ID, Root string }
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "project", "list", "--json")), &list)
	if len(list.Projects) != 1 {
		t.Fatalf("projects: %+v", list)
	}
	return list.Projects[0].Root
}

// TestTokensGainMemoryScopesOnlyWhenAsked: a token created with the
// default scopes holds no memory scope; one created with them does.
func TestTokensGainMemoryScopesOnlyWhenAsked(t *testing.T) {
	data := t.TempDir()
	var def, mem struct{ Record auth.Token }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "create", "--name", "d", "--json")), &def)
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "create", "--name", "m", "--scopes", "project:read,memory:read", "--json")), &mem)
	if len(def.Record.Scopes) == 0 || slices.Contains(def.Record.Scopes, auth.ScopeMemoryRead) || slices.Contains(def.Record.Scopes, auth.ScopeMemoryManage) {
		t.Fatalf("default token scopes: %v", def.Record.Scopes)
	}
	if !slices.Equal(mem.Record.Scopes, []auth.Scope{auth.ScopeProjectRead, auth.ScopeMemoryRead}) {
		t.Fatalf("memory token scopes: %v", mem.Record.Scopes)
	}
}
