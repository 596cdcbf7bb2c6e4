package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunnerServesMCPProvider: mcp_tool on a runner's project runs the
// official filesystem MCP server (npm @modelcontextprotocol/server-filesystem)
// on the runner, list, describe and call end to end, and a call without
// the described revision runs nothing.
func TestRunnerServesMCPProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	bin, err := exec.LookPath("mcp-server-filesystem")
	if err != nil {
		if os.Getenv("WEBCODEX_REQUIRE_MCP_FILESYSTEM") == "1" {
			t.Fatal("mcp-server-filesystem is not installed (npm install -g @modelcontextprotocol/server-filesystem)")
		}
		t.Skip("mcp-server-filesystem is not installed")
	}
	f := newRunnerFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("hello from the runner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(f.toml)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, fmt.Sprintf("\n[mcp.providers.fs]\ncommand = %q\nargs = [%q]\nenv = [\"HOME\"]\n", bin, f.dir)...)
	if err := os.WriteFile(f.toml, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	startRunner(t, f.srv.base, f.toml, f.token)
	ctx := context.Background()
	call := func(args map[string]any) toolResult {
		t.Helper()
		args["project"], args["provider"] = remoteProject, "fs"
		r, err := callTool(ctx, f.srv.base, "mcp_tool", args, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := call(map[string]any{"op": "list"})
	if !r.Success || !strings.Contains(string(r.Output), `"read_text_file"`) {
		t.Fatalf("list: %+v %s", r.Error, r.Output)
	}
	r = call(map[string]any{"op": "call", "tool": "read_text_file", "arguments": map[string]any{"path": filepath.Join(f.dir, "notes.txt")}})
	if r.Success || r.Error.Kind != "describe_required" {
		t.Fatalf("a call before describe: %+v %s", r.Error, r.Output)
	}
	r = call(map[string]any{"op": "describe", "tool": "read_text_file"})
	var d struct {
		Described struct {
			Revision string `json:"schema_revision"`
		} `json:"described"`
	}
	json.Unmarshal(r.Output, &d)
	if !r.Success || d.Described.Revision == "" {
		t.Fatalf("describe: %+v %s", r.Error, r.Output)
	}
	r = call(map[string]any{"op": "call", "tool": "read_text_file", "schema_revision": d.Described.Revision,
		"arguments": map[string]any{"path": filepath.Join(f.dir, "notes.txt")}})
	if !r.Success || !strings.Contains(string(r.Output), "hello from the runner") {
		t.Fatalf("call: %+v %s", r.Error, r.Output)
	}
	r = call(map[string]any{"op": "describe", "tool": "no_such_tool"})
	if r.Success || r.Error.Kind != "unknown_provider_tool" {
		t.Fatalf("an unknown tool: %+v", r.Error)
	}
}
