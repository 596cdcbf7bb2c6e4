// Package lspop runs code navigation (package lsp) where a project's
// files are: the lsp.navigate workspace operation, served by the process
// that holds the project (the server for its own projects, a runner for
// its), whose language-server Manager keeps the servers warm there.
package lspop

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// navigateOp answers one navigation request with the serving machine's
// Manager; a machine that keeps none fails unavailable.
var navigateOp = workspace.NewOp("lsp.navigate", func(ctx context.Context, env workspace.Env, p project.Project, in lsp.Request) (lsp.Result, error) {
	if env.Navigator == nil {
		return lsp.Result{}, failure.New(failure.Unavailable, "code navigation is not served where this project's files are")
	}
	return env.Navigator.Navigate(ctx, p, in)
})

// Ops are the operations a runner serves for code navigation.
func Ops() []workspace.Served { return []workspace.Served{navigateOp} }

// Finder navigates through the runner serving each project.
type Finder struct {
	Runners workspace.Runners
}

// Navigate is [lsp.Manager.Navigate] run where p's files are.
func (f Finder) Navigate(ctx context.Context, p project.Project, req lsp.Request) (lsp.Result, error) {
	return workspace.Do(ctx, f.Runners.For(p), p, navigateOp, req)
}
