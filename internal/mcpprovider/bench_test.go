package mcpprovider_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/mcptool"
	"github.com/webcodex/webcodex/internal/workspace"
)

// BenchmarkCall compares an mcp_tool call through the kernel (validation,
// the revision check, the call, redaction, recording) with the same tool
// called straight through a go-sdk client session on its own warm
// instance of the same provider, alternated (benchpair).
func BenchmarkCall(b *testing.B) {
	bin := testProvider(b)
	m := mcpprovider.NewManager(mcpprovider.Options{Providers: map[string]mcpprovider.Provider{"test": {Command: bin}}, Sandbox: &runner.Policy{}})
	defer m.Close()
	runners := workspace.Resolver{Local: workspace.Local{Providers: m}}
	e := kerneltest.New(b, func(reg *kernel.Registry) { mcptool.Register(reg, runners) })
	d := e.Call("mcp_tool", map[string]any{"op": "describe", "provider": "test", "tool": "echo"})
	if !d.Success {
		b.Fatalf("describe: %+v", d.Error)
	}
	rev := d.Output.(mcpprovider.Result).Described.Revision
	args := map[string]any{"op": "call", "provider": "test", "tool": "echo", "schema_revision": rev, "arguments": map[string]any{"text": "hello"}}
	kernelSide := func() {
		if r := e.Call("mcp_tool", args); !r.Success {
			b.Fatalf("mcp_tool: %+v", r.Error)
		}
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	direct := func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
		if err != nil || r.IsError {
			b.Fatal(err)
		}
	}
	benchpair.Run(b, "direct", direct, "kernel", kernelSide)
}
