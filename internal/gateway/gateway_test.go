package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
)

type none struct{}

func registry(names ...string) *kernel.Registry {
	reg := kernel.NewRegistry()
	for _, n := range names {
		kernel.Register(reg, kernel.Spec[none, none]{
			Name: n, Description: "Do " + n + ". More detail.", Scopes: []auth.Scope{auth.ScopeJobRun},
			Handler: func(context.Context, *kernel.Invocation, none) (none, error) { return none{}, nil },
		})
	}
	return reg
}

func TestResolve(t *testing.T) {
	reg := registry(append([]string{"extra"}, CoreTools...)...)
	core, err := Resolve(reg, "", nil)
	if err != nil || core.Name() != Core || !core.Listed("read_files") || core.Listed("extra") {
		t.Fatalf("core: %+v %v", core, err)
	}
	full, err := Resolve(reg, Full, nil)
	if err != nil || full.Name() != Full || !full.Listed("extra") {
		t.Fatalf("full: %+v %v", full, err)
	}
	custom, err := Resolve(reg, Core, []string{"extra", CallTool})
	if err != nil || custom.Name() != Custom || !custom.Listed("extra") || custom.Listed("read_files") {
		t.Fatalf("custom: %+v %v", custom, err)
	}
	var unknown *UnknownToolError
	if _, err := Resolve(reg, "", []string{"extra", "nope", "nada"}); !errors.As(err, &unknown) || unknown.Tool != "nope" ||
		err.Error() != `unknown tool "nope"` {
		t.Fatalf("unknown tool: %v", err)
	}
	// The core list names only registered tools: a registry without one
	// of them cannot resolve core.
	if _, err := Resolve(registry("extra"), Core, nil); !errors.As(err, &unknown) {
		t.Fatalf("core over a registry without its tools: %v", err)
	}
	if _, err := Resolve(registry(ListTools), Full, nil); err == nil {
		t.Fatal("a registered tool named list_tools was accepted")
	}
	if _, err := Resolve(reg, "most", nil); err == nil {
		t.Fatal("profile most accepted")
	}
}

func TestCatalogAndSummary(t *testing.T) {
	reg := registry("a_tool", "b_tool")
	p, _ := Resolve(reg, Core, []string{"a_tool"})
	got := Catalog(reg, p, auth.Principal{Scopes: []auth.Scope{auth.ScopeJobRun}})
	if len(got) != 2 || got[0] != (Entry{Name: "a_tool", Summary: "Do a_tool.", Listed: true}) || got[1].Listed {
		t.Fatalf("catalog: %+v", got)
	}
	if got := Catalog(reg, p, auth.Principal{Scopes: []auth.Scope{auth.ScopeProjectRead}}); len(got) != 0 {
		t.Fatalf("catalog without job:run: %+v", got)
	}
	long := strings.Repeat("é", 200)
	if s := Summary(long); len(s) > maxSummaryBytes || !strings.HasSuffix(s, "...") || !strings.HasPrefix(long, strings.TrimSuffix(s, "...")) {
		t.Fatalf("summary of a long sentence: %q", s)
	}
}
