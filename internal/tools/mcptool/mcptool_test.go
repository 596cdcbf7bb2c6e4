package mcptool_test

import (
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpprovidertest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/mcptool"
	"github.com/webcodex/webcodex/internal/workspace"
)

func TestRegisterDeclaresAMutatingTool(t *testing.T) {
	reg := kernel.NewRegistry()
	mcptool.Register(reg, workspace.LocalOnly(nil))
	tools := reg.Tools()
	if len(tools) != 1 || tools[0].Name != "mcp_tool" || tools[0].Category != mcptool.Category ||
		!slices.Equal(tools[0].Scopes, []auth.Scope{auth.ScopeProjectWrite}) || !tools[0].Mutates || !tools[0].Runners {
		t.Fatalf("%+v", tools)
	}
}

// Where no Manager is kept the call is unavailable; with one, bad
// requests are refused with their kinds before any provider starts, and
// list, describe and call succeed through the kernel.
func TestThroughTheKernel(t *testing.T) {
	e := kerneltest.New(t, func(reg *kernel.Registry) { mcptool.Register(reg, workspace.LocalOnly(nil)) })
	kerneltest.Fails(t, e.Call("mcp_tool", map[string]any{"op": "list", "provider": "test"}), failure.Unavailable)

	m := mcpprovider.NewManager(mcpprovider.Options{Providers: map[string]mcpprovider.Provider{"test": {Command: mcpprovidertest.Provider(t)}}, Sandbox: &runner.Policy{}})
	defer m.Close()
	runners := workspace.Resolver{Local: workspace.Local{Providers: m}}
	e = kerneltest.New(t, func(reg *kernel.Registry) { mcptool.Register(reg, runners) })
	kerneltest.Fails(t, e.Call("mcp_tool", map[string]any{"op": "list", "provider": "nope"}), failure.UnknownMCPProvider)
	kerneltest.Fails(t, e.Call("mcp_tool", map[string]any{"op": "call", "provider": "test", "tool": "echo", "arguments": map[string]any{"text": "x"}}), failure.DescribeRequired)
	kerneltest.Fails(t, e.Call("mcp_tool", map[string]any{"op": "list", "provider": "test", "extra": 1}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("mcp_tool", map[string]any{"op": "call", "provider": "test", "tool": "echo", "arguments": "text"}), failure.InvalidArguments)
	if m.Started() != 0 {
		t.Fatal("a bad request started a provider")
	}
	d := kerneltest.OK[mcpprovider.Result](t, e.Call("mcp_tool", map[string]any{"op": "describe", "provider": "test", "tool": "echo"}))
	c := kerneltest.OK[mcpprovider.Result](t, e.Call("mcp_tool", map[string]any{"op": "call", "provider": "test", "tool": "echo",
		"schema_revision": d.Described.Revision, "arguments": map[string]any{"text": "hi"}}))
	if c.Call == nil || string(c.Call.Content) != `[{"type":"text","text":"hi"}]` {
		t.Fatalf("call: %+v", c.Call)
	}
}
