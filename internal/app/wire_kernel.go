package app

import (
	"context"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpop"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/tools/board"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/edit"
	"github.com/webcodex/webcodex/internal/tools/files"
	"github.com/webcodex/webcodex/internal/tools/git"
	"github.com/webcodex/webcodex/internal/tools/goals"
	"github.com/webcodex/webcodex/internal/tools/intents"
	"github.com/webcodex/webcodex/internal/tools/jobctl"
	"github.com/webcodex/webcodex/internal/tools/mcptool"
	"github.com/webcodex/webcodex/internal/tools/memory"
	"github.com/webcodex/webcodex/internal/tools/navigate"
	"github.com/webcodex/webcodex/internal/tools/peers"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/tools/runners"
	"github.com/webcodex/webcodex/internal/tools/search"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/tools/sessionshell"
	"github.com/webcodex/webcodex/internal/tools/skills"
	"github.com/webcodex/webcodex/internal/tools/tasks"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/transport/mcpserver"
)

// evidenceCheckpointTimeout bounds the checkpoint signed at session close.
const evidenceCheckpointTimeout = 10 * time.Second

// NewRegistry returns the registry of every tool, wired to the app's
// services.
func NewRegistry(a *App) *kernel.Registry {
	reg := kernel.NewRegistry()
	goalSvc := newGoals(a)
	// The journal behind interfaces: nil stays a nil interface.
	var counter sessions.EvidenceCounter
	var journal closeout.Journal
	if a.Evidence != nil {
		counter, journal = a.Evidence, a.Evidence
	}
	sessions.Register(reg, &sessions.Tools{Sessions: a.Sessions, Evidence: counter, Goals: goalNames(goalSvc),
		Worktrees: newWorktrees(a), Guidance: mcpserver.WorkflowGuide, Resources: sessionResources(a), Skills: skill.Finder{Runners: a.Runners}, Plugins: mcpop.Finder{Runners: a.Runners}, OnClose: func(id string) {
			if a.Shells != nil {
				a.Shells.CloseSession(id)
			}
			if a.ReadSets != nil {
				a.ReadSets.Forget(id)
			}
			if a.Hub != nil {
				closeRunnerSession(a, id)
			}
			if a.Evidence != nil {
				// A closed session's records are covered by a signed head.
				ctx, cancel := context.WithTimeout(context.Background(), evidenceCheckpointTimeout)
				defer cancel()
				if _, err := a.Evidence.Checkpoint(ctx); err != nil {
					a.Log.Warn("evidence: checkpoint at session close", "session", id, "err", err)
				}
			}
		}})
	files.Register(reg, a.Runners)
	skills.Register(reg, a.Runners)
	navigate.Register(reg, a.Runners)
	mcptool.Register(reg, a.Runners)
	search.Register(reg, a.Runners)
	edit.Register(reg, a.Runners)
	git.Register(reg, &git.Tools{Runners: a.Runners})
	run.Register(reg, &run.Tools{Runners: a.Runners, Jobs: a.Jobs})
	vt := &validate.Tools{Runners: a.Runners, Sessions: a.Sessions, Jobs: a.Jobs, Evidence: a.validation}
	jobctl.Register(reg, &jobctl.Tools{Jobs: a.Jobs, Runners: a.Runners})
	sessionshell.Register(reg, a.Runners)
	validate.Register(reg, vt)
	closeout.Register(reg, &closeout.Tools{Sessions: a.Sessions, Jobs: a.Jobs, Evidence: journal, Runners: a.Runners, Snapshots: newSnapshots(a),
		Goals: goalNames(goalSvc), Intents: a.Intents})
	bt := &board.Tools{Board: newBoard(a)}
	if a.Windows != nil {
		bt.Activity = a.Windows
	}
	board.Register(reg, bt)
	peers.Register(reg, &peers.Tools{Windows: a.Windows})
	goals.Register(reg, &goals.Tools{Goals: goalSvc})
	tasks.Register(reg, &tasks.Tools{Tasks: a.Tasks})
	intents.Register(reg, &intents.Tools{Intents: a.Intents})
	memorytools.Register(reg, &memorytools.Tools{Memory: newMemory(a)})
	rt := &runners.Tools{}
	if a.Hub != nil {
		rt.Runners = a.Hub
	}
	runners.Register(reg, rt)
	return reg
}

// toolProfile resolves the configured tool profile against the names of
// the registered tools, before anything is opened: a tool_list naming no
// tool is a configuration error naming it, and the server does not start.
func toolProfile(cfg Config) (gateway.Profile, error) {
	p, err := gateway.Resolve(NewRegistry(&App{Config: cfg}), cfg.ToolProfile, cfg.ToolList)
	if err != nil {
		key := "tool_profile"
		if len(cfg.ToolList) > 0 {
			key = "tool_list"
		}
		return gateway.Profile{}, &ConfigError{Source: "config", Key: key, Err: err}
	}
	return p, nil
}

// CheckToolProfile judges a token's tool profile (auth.Token.Tools)
// against the registered tools: nil, or an error naming the tool that is
// not one (auth.Options.CheckTools).
func CheckToolProfile(tools []string) error {
	_, err := gateway.ResolveList(NewRegistry(&App{}), tools)
	return err
}

// checkTokenProfiles refuses to start when a live token's tool profile
// names a tool that is not one (after an upgrade that removed it): the
// error names the token and the tool.
func checkTokenProfiles(ctx context.Context, svc *auth.Service) error {
	toks, err := svc.ListTokens(ctx)
	if err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	var reg *kernel.Registry
	for _, t := range toks {
		if t.Revoked() || len(t.Tools) == 0 {
			continue
		}
		if reg == nil {
			reg = NewRegistry(&App{})
		}
		if _, err := gateway.ResolveList(reg, t.Tools); err != nil {
			return &ConfigError{Source: "auth.db", Key: "token " + t.ID + " tools", Err: err}
		}
	}
	return nil
}

func newKernel(a *App) *kernel.Kernel {
	return kernel.New(kernel.Options{
		Registry: NewRegistry(a),
		Projects: visibleProjects{a.Projects},
		Sessions: a.Sessions,
		Evidence: a.evSink.record,
		Outbox:   a.outbox,
		Logger:   a.Log,
		Tracing:  a.Tracing,
		// Peer delivery judges its ack ids before the board does.
		Ambient: []kernel.Ambient{kernel.PeerDelivery{Windows: a.Windows}, kernel.BoardAttention{Board: newBoard(a)},
			kernel.RecorderGap{Suggest: a.suggestRecorder}, intentOverlap{a}, readSetNotices{a}},
		Observe: func(ctx context.Context, c kernel.Call, res kernel.Result) {
			a.Windows.Observe(ctx, c.Principal, c.ClientWindow, res.Tool, res.Project, res.Refused, sessionAffinity(res))
			if a.metrics != nil {
				a.observeCall(res)
			}
		},
	})
}

// sessionResources is what update_session_context checks a resource name
// against: the hub's runners (nil, no resources, without one).
func sessionResources(a *App) sessions.Resources {
	if a.Hub == nil {
		return nil
	}
	return a.Hub
}

// closeRunnerSession closes the persistent shell and then the SSH masters
// the runner serving a closed session's project holds for it: the shell
// first, so that a shell on an SSH resource ends closed (session_closed)
// rather than lost with its master (connection_lost).
func closeRunnerSession(a *App, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), evidenceCheckpointTimeout)
	defer cancel()
	sess, err := a.Sessions.Get(ctx, id)
	if err != nil {
		return
	}
	if p, err := a.Projects.Get(ctx, sess.Project); err == nil && p.Runner != "" {
		if _, err := sessionshell.CloseSession(ctx, a.Runners.For(p), p, id); err != nil && !failure.Is(err, failure.RunnerUnavailable) {
			a.Log.Warn("runner: close the session's shell", "session", id, "runner", p.Runner, "err", err)
		}
		a.Hub.CloseSession(ctx, p, id)
	}
}
