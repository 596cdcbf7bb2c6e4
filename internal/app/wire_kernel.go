package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/tools/edit"
	"github.com/webcodex/webcodex/internal/tools/files"
	finishtools "github.com/webcodex/webcodex/internal/tools/finish"
	"github.com/webcodex/webcodex/internal/tools/git"
	handofftools "github.com/webcodex/webcodex/internal/tools/handoff"
	jobtools "github.com/webcodex/webcodex/internal/tools/jobs"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/tools/search"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	shelltools "github.com/webcodex/webcodex/internal/tools/shell"
	"github.com/webcodex/webcodex/internal/tools/validate"
)

// NewRegistry returns the registry of every tool, wired to the app's
// services.
func NewRegistry(a *App) *kernel.Registry {
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: a.Sessions, OnClose: func(id string) {
		if a.Shells != nil {
			a.Shells.CloseSession(id)
		}
	}})
	files.Register(reg)
	search.Register(reg)
	edit.Register(reg)
	git.Register(reg)
	run.Register(reg, &run.Tools{Host: a.Runner, Jobs: a.Jobs})
	vt := &validate.Tools{Host: a.Runner, Sessions: a.Sessions, Jobs: a.Jobs}
	jt := &jobtools.Tools{Jobs: a.Jobs}
	if a.Jobs != nil {
		jt.Evidence = vt
	}
	jobtools.Register(reg, jt)
	shelltools.Register(reg, a.Shells)
	validate.Register(reg, vt)
	handofftools.Register(reg, &handofftools.Tools{Sessions: a.Sessions, Jobs: a.Jobs})
	finishtools.Register(reg, &finishtools.Tools{Sessions: a.Sessions, Jobs: a.Jobs})
	return reg
}

func newKernel(a *App) *kernel.Kernel {
	return kernel.New(kernel.Options{
		Registry: NewRegistry(a),
		Projects: a.Projects,
		Sessions: a.Sessions,
		Evidence: evidenceLog(a),
		Logger:   a.Log,
	})
}

// evidenceLog is the evidence sink until the evidence journal exists: every
// invalid recorder claim is logged as negative evidence (and counted by the
// kernel); nothing about a claim is dropped or re-targeted.
func evidenceLog(a *App) kernel.EvidenceSink {
	return func(ctx context.Context, r kernel.Record) {
		if r.Binding.State == kernel.InvalidClaim {
			a.Log.Warn("evidence: invalid session claim",
				"invocation", r.InvocationID, "tool", r.Tool, "source", r.Source,
				"claimed_session_id", r.Binding.ClaimedSessionID, "reasons", r.Binding.Reasons)
		}
	}
}
