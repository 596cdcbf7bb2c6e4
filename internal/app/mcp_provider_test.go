package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpprovidertest"
)

// withTestProvider configures the test provider as [mcp.providers.test].
func withTestProvider(t testing.TB, c *app.Config) {
	c.MCP.Providers = map[string]mcpprovider.Provider{"test": {Command: mcpprovidertest.Provider(t)}}
}

// TestPluginsCatalogListsReadyProviders: over MCP, work_on_project's
// extension catalog and the plugins.catalog material list a configured
// provider unavailable (not_listed) until it answered mcp_tool list, then
// ready; a describe-before-call refusal runs nothing; no schema, command
// or path is projected.
func TestPluginsCatalogListsReadyProviders(t *testing.T) {
	dir, bin := rawProjectDir(t), mcpprovidertest.Provider(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) {
		c.ToolProfile = gateway.Full
		c.MCP.Providers = map[string]mcpprovider.Provider{"test": {Command: bin}}
	}, "p="+dir)
	defer s.stop(t)
	plugins := func(raw json.RawMessage) mcpprovider.Catalog {
		t.Helper()
		var c mcpprovider.Catalog
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		if strings.Contains(string(raw), bin) || strings.Contains(string(raw), "schema") {
			t.Fatalf("the catalog projects a command or a schema: %s", raw)
		}
		return c
	}
	ext := func() mcpprovider.Catalog {
		mr := rawCall(t, s, s.token, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "use the provider"})
		if !mr.StructuredContent.Success {
			t.Fatalf("work_on_project: %+v", mr.StructuredContent.Error)
		}
		var e struct{ Plugins json.RawMessage }
		json.Unmarshal(mr.StructuredContent.Output["extensions"], &e)
		return plugins(e.Plugins)
	}
	if c := ext(); len(c.Plugins) != 1 || c.Plugins[0].Name != "test" || c.Plugins[0].Status != "unavailable" || c.Plugins[0].Reason != mcpprovider.ReasonNotListed {
		t.Fatalf("before list: %+v", c)
	}
	mr := rawCall(t, s, s.token, "mcp_tool", map[string]any{"project": rawProjectID, "op": "call", "provider": "test", "tool": "echo", "arguments": map[string]any{"text": "x"}})
	rawWantToolError(t, mr, "describe_required")
	mr = rawCall(t, s, s.token, "mcp_tool", map[string]any{"project": rawProjectID, "op": "list", "provider": "test"})
	if !mr.StructuredContent.Success {
		t.Fatalf("list: %+v", mr.StructuredContent.Error)
	}
	if c := ext(); c.Plugins[0].Status != "ready" || c.Plugins[0].Tools != 5 {
		t.Fatalf("after list: %+v", c)
	}
	mr = rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "context_request", []any{"plugins.catalog"}))
	m := mr.StructuredContent.Context["plugins.catalog"]
	if c := plugins(m.Content); m.Status != "available" || c.Plugins[0].Status != "ready" {
		t.Fatalf("plugins.catalog: %+v", m)
	}
}
