package app

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/tools/board"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/edit"
	"github.com/webcodex/webcodex/internal/tools/files"
	"github.com/webcodex/webcodex/internal/tools/git"
	"github.com/webcodex/webcodex/internal/tools/jobctl"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/tools/search"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/tools/sessionshell"
	"github.com/webcodex/webcodex/internal/tools/validate"
)

// evidenceCheckpointTimeout bounds the checkpoint signed at session close.
const evidenceCheckpointTimeout = 10 * time.Second

// NewRegistry returns the registry of every tool, wired to the app's
// services.
func NewRegistry(a *App) *kernel.Registry {
	reg := kernel.NewRegistry()
	// The journal behind interfaces: nil stays a nil interface.
	var counter sessions.EvidenceCounter
	var journal closeout.Journal
	if a.Evidence != nil {
		counter, journal = a.Evidence, a.Evidence
	}
	sessions.Register(reg, &sessions.Tools{Sessions: a.Sessions, Evidence: counter, OnClose: func(id string) {
		if a.Shells != nil {
			a.Shells.CloseSession(id)
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
	files.Register(reg)
	search.Register(reg)
	edit.Register(reg)
	git.Register(reg, &git.Tools{Host: a.Runner})
	run.Register(reg, &run.Tools{Host: a.Runner, Jobs: a.Jobs})
	vt := &validate.Tools{Host: a.Runner, Sessions: a.Sessions, Jobs: a.Jobs, Evidence: a.validation}
	jobctl.Register(reg, &jobctl.Tools{Jobs: a.Jobs, Host: a.Runner})
	sessionshell.Register(reg, a.Shells)
	validate.Register(reg, vt)
	closeout.Register(reg, &closeout.Tools{Sessions: a.Sessions, Jobs: a.Jobs, Evidence: journal, Host: a.Runner})
	board.Register(reg, &board.Tools{Board: newBoard(a)})
	return reg
}

func newKernel(a *App) *kernel.Kernel {
	return kernel.New(kernel.Options{
		Registry: NewRegistry(a),
		Projects: a.Projects,
		Sessions: a.Sessions,
		Evidence: a.evSink.record,
		Logger:   a.Log,
	})
}
