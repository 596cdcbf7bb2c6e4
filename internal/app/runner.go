package app

import (
	"log/slog"
	"slices"

	"github.com/webcodex/webcodex/internal/lsp/lspop"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpop"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runneragent"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/edit"
	"github.com/webcodex/webcodex/internal/tools/files"
	"github.com/webcodex/webcodex/internal/tools/git"
	"github.com/webcodex/webcodex/internal/tools/search"
	"github.com/webcodex/webcodex/internal/tools/sessionshell"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/workspace"
	"github.com/webcodex/webcodex/internal/worktree"
)

// RunnerOps are the operations a `webcodex runner` serves: the effect halves
// of the tools that run through runners.
func RunnerOps() []workspace.Served {
	return slices.Concat(files.Ops(), search.Ops(), git.Ops(), edit.Ops(), closeout.Ops(), sessionshell.Ops(), validate.Ops(), worktree.Ops(), skill.Ops(), lspop.Ops(), mcpop.Ops())
}

// NewRunnerAgent is `webcodex runner`'s composition root: the agent for
// cfg connecting to each of servers (one server, or every replica of one)
// with token, serving RunnerOps, its processes
// contained and confined by cfg's sandbox. runner.toml holds no secret (the
// token comes from the command line or the environment). As on a server,
// the user's cache directory stays writable under workspace-write (go's
// build cache, for a validation run there).
func NewRunnerAgent(cfg runneragent.Config, servers []string, token string, transport runnerlink.Transport, log *slog.Logger) *runneragent.Agent {
	pol := &runner.Policy{Mode: runner.Mode(cfg.Policy.Sandbox), ExtraWrite: defaultExtraWrite()}
	return runneragent.New(runneragent.Options{Config: cfg, Servers: servers, Token: token, Ops: RunnerOps(),
		Version: Version, Logger: log, Policy: pol, Contain: runner.Setup(), Transport: transport})
}
