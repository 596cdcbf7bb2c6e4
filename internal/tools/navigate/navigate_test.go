package navigate_test

import (
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/navigate"
	"github.com/webcodex/webcodex/internal/workspace"
)

func TestRegisterDeclaresAReadOnlyTool(t *testing.T) {
	reg := kernel.NewRegistry()
	navigate.Register(reg, workspace.LocalOnly(nil))
	tools := reg.Tools()
	if len(tools) != 1 || tools[0].Name != "lsp" || tools[0].Category != navigate.Category ||
		!slices.Equal(tools[0].Scopes, []auth.Scope{auth.ScopeProjectRead}) ||
		tools[0].Annotations != (kernel.Annotations{ReadOnly: true, Idempotent: true}) || tools[0].Mutates || tools[0].Writes {
		t.Fatalf("%+v", tools)
	}
}

// Where no Manager is kept the call is unavailable; with one, a bad
// request is refused with its kind before any server starts.
func TestUnavailableAndBadInput(t *testing.T) {
	e := kerneltest.New(t, func(reg *kernel.Registry) { navigate.Register(reg, workspace.LocalOnly(nil)) })
	e.Write("a.go", "package a\n")
	kerneltest.Fails(t, e.Call("lsp", map[string]any{"op": "document_symbols", "path": "a.go"}), failure.Unavailable)

	m := lsp.NewManager(lsp.Options{Sandbox: &runner.Policy{}})
	defer m.Close()
	runners := workspace.Resolver{Local: workspace.Local{Navigator: m}}
	e = kerneltest.New(t, func(reg *kernel.Registry) { navigate.Register(reg, runners) })
	e.Write("a.go", "package a\n")
	kerneltest.Fails(t, e.Call("lsp", map[string]any{"op": "hover", "path": "a.go", "line": 3, "column": 1}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("lsp", map[string]any{"op": "hover", "path": "a.go", "line": 1, "column": 1, "extra": 1}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("lsp", map[string]any{"op": "document_symbols", "path": "../a.go"}), failure.InvalidArguments)
	if m.Running() != 0 || m.Started() != 0 {
		t.Fatalf("a bad request started a server")
	}
}
