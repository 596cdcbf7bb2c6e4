// Package mcpop runs MCP-provider requests (package mcpprovider) where a
// project's files are: the mcp.tool and mcp.catalog workspace operations,
// served by the process that holds the project (the server for its own
// projects, a runner for its), whose Manager runs the providers there.
package mcpop

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// CatalogArgs are the arguments of mcp.catalog (none).
type CatalogArgs struct{}

var (
	// toolOp answers one mcp_tool request with the serving machine's
	// Manager; a machine that keeps none fails unavailable.
	toolOp = workspace.NewOp("mcp.tool", func(ctx context.Context, env workspace.Env, p project.Project, in mcpprovider.Request) (mcpprovider.Result, error) {
		if env.Providers == nil {
			return mcpprovider.Result{}, failure.New(failure.Unavailable, "no MCP providers are served where this project's files are")
		}
		return env.Providers.Do(ctx, p, in)
	})
	// catalogOp lists the providers for the extension catalog; it starts
	// nothing.
	catalogOp = workspace.NewOp("mcp.catalog", func(ctx context.Context, env workspace.Env, p project.Project, _ CatalogArgs) (mcpprovider.Catalog, error) {
		if env.Providers == nil {
			return mcpprovider.Catalog{Status: mcpprovider.StatusAvailable, Plugins: []mcpprovider.Plugin{}}, nil
		}
		return env.Providers.Catalog(p), nil
	})
)

// Ops are the operations a runner serves for MCP providers.
func Ops() []workspace.Served { return []workspace.Served{toolOp, catalogOp} }

// Finder reaches the providers through the runner serving each project.
type Finder struct {
	Runners workspace.Runners
}

// Do is [mcpprovider.Manager.Do] run where p's files are.
func (f Finder) Do(ctx context.Context, p project.Project, req mcpprovider.Request) (mcpprovider.Result, error) {
	return workspace.Do(ctx, f.Runners.For(p), p, toolOp, req)
}

// Catalog is [mcpprovider.Manager.Catalog] run where p's files are.
func (f Finder) Catalog(ctx context.Context, p project.Project) (mcpprovider.Catalog, error) {
	return workspace.Do(ctx, f.Runners.For(p), p, catalogOp, CatalogArgs{})
}
