// Package mcptool provides the mcp_tool tool: list, describe and call the
// tools of a stdio MCP provider configured where the project's files are
// (package mcpprovider), describe before call. Each request is one kernel
// call whose finished event names the provider and the tool.
package mcptool

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpop"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Category is the telemetry category of mcp_tool.
const Category = "extensions"

// Input is the input of mcp_tool.
type Input struct {
	kernel.ProjectRef
	Op             string         `json:"op" jsonschema:"list|describe|call"`
	Provider       string         `json:"provider"`
	Tool           string         `json:"tool,omitempty" jsonschema:"describe, call"`
	Arguments      map[string]any `json:"arguments,omitempty" jsonschema:"call: the tool's arguments"`
	SchemaRevision string         `json:"schema_revision,omitempty" jsonschema:"call: from describe"`
}

// Register adds mcp_tool to reg; runners serves each call's project.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	f := mcpop.Finder{Runners: runners}
	kernel.Register(reg, kernel.Spec[Input, mcpprovider.Result]{
		Runners:     true,
		Name:        "mcp_tool",
		Description: "List, describe and call a configured MCP provider's tools; call needs describe's schema_revision.",
		Category:    Category, Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Mutates: true,
		Handler: func(ctx context.Context, inv *kernel.Invocation, in Input) (mcpprovider.Result, error) {
			inv.Fact("mcp_op", in.Op)
			inv.Fact("mcp_provider", in.Provider)
			if in.Tool != "" {
				inv.Fact("mcp_tool", in.Tool)
			}
			req := mcpprovider.Request{Op: in.Op, Provider: in.Provider, Tool: in.Tool, SchemaRevision: in.SchemaRevision}
			if in.Arguments != nil {
				b, err := json.Marshal(in.Arguments)
				if err != nil {
					return mcpprovider.Result{}, failure.Wrap(failure.InvalidArguments, err, "arguments do not encode")
				}
				req.Arguments = b
			}
			return f.Do(ctx, inv.Project, req)
		},
	})
}
