package edit

import (
	"context"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// effects is what an edit reports to its call while it runs: before is
// called just before the first write (the call's started event must be
// durable first), dryRun when nothing will be written, changed with the
// paths written and their diff facts. In this process they go to the
// Invocation; on a runner they are collected and sent back.
type effects struct {
	before  func() error
	dryRun  func()
	changed func(written []string, diffs map[string]string)
}

func invocationEffects(ctx context.Context, inv *kernel.Invocation) effects {
	return effects{
		before: func() error { return inv.BeforeEffect(ctx) },
		dryRun: inv.MarkDryRun,
		changed: func(written []string, diffs map[string]string) {
			inv.Change(written...)
			recordDiffs(inv, written, diffs)
		},
	}
}

// remoteResult is what an edit operation sends back from a runner: the
// tool's output and the effects it reported.
type remoteResult[Out any] struct {
	Output  Out               `json:"output"`
	DryRun  bool              `json:"dry_run,omitempty"`
	Written []string          `json:"written,omitempty"`
	Diffs   map[string]string `json:"diffs,omitempty"`
}

// writtenDetail is the failure detail that carries the paths an edit wrote
// before it failed, from a runner.
const writtenDetail = "written_paths"

// editOp declares the operation name running effect on a runner: the
// started event was made durable before the request was sent, so before
// has nothing to wait for. A failure after some writes names them in its
// detail, so that the call still records them.
func editOp[In, Out any](name string, effect func(context.Context, project.Project, In, effects) (Out, error)) *workspace.Op[In, remoteResult[Out]] {
	return workspace.NewOp(name, func(ctx context.Context, _ workspace.Env, p project.Project, in In) (remoteResult[Out], error) {
		var res remoteResult[Out]
		fx := effects{
			before: func() error { return nil },
			dryRun: func() { res.DryRun = true },
			changed: func(written []string, diffs map[string]string) {
				res.Written, res.Diffs = written, diffs
			},
		}
		out, err := effect(ctx, p, in, fx)
		if err != nil && len(res.Written) > 0 {
			fe := failure.New(failure.KindOf(err), "%s", failure.MessageOf(err))
			for k, v := range failure.DetailOf(err) {
				fe.WithDetail(k, v)
			}
			err = fe.WithDetail(writtenDetail, res.Written)
		}
		res.Output = out
		return res, err
	})
}

var (
	applyOp = editOp("edit.apply", applyEdits)
	writeOp = editOp("edit.write", writeFile)
)

// Ops returns the edit operations, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{applyOp, writeOp} }

// handler is an edit tool's handler: the effect in this process for a
// local project, the operation on the runner for another. dryRun says
// whether the input asks for a preview only.
func handler[In, Out any](runners workspace.Runners, op *workspace.Op[In, remoteResult[Out]],
	effect func(context.Context, project.Project, In, effects) (Out, error), dryRun func(In) bool) func(context.Context, *kernel.Invocation, In) (Out, error) {
	return func(ctx context.Context, inv *kernel.Invocation, in In) (Out, error) {
		r := runners.For(inv.Project)
		if _, remote := r.(workspace.Remote); !remote {
			out, err := effect(ctx, inv.Project, in, invocationEffects(ctx, inv))
			if err == nil {
				sawDigests(inv, out)
			}
			return out, err
		}
		var zero Out
		if !dryRun(in) {
			if err := inv.BeforeEffect(ctx); err != nil {
				return zero, err
			}
		}
		res, err := workspace.Do(ctx, r, inv.Project, op, in)
		if err != nil {
			if ws, ok := failure.DetailOf(err)[writtenDetail].([]any); ok {
				for _, w := range ws {
					if s, ok := w.(string); ok {
						inv.Change(s)
					}
				}
			}
			return zero, err
		}
		if res.DryRun {
			inv.MarkDryRun()
		}
		if len(res.Written) > 0 {
			inv.Change(res.Written...)
			recordDiffs(inv, res.Written, res.Diffs)
		}
		sawDigests(inv, res.Output)
		return res.Output, nil
	}
}

// sawDigests reports the whole-file digests an edit's output names to
// the call (kernel.Invocation.Saw): the digest each change left (a
// write; "" for a delete), and the digest of a file the edit found
// already as asked (a read). A dry run reports none.
func sawDigests(inv *kernel.Invocation, out any) {
	switch o := out.(type) {
	case ApplyOutput:
		if o.DryRun {
			return
		}
		ds := make([]kernel.Digest, 0, len(o.Files))
		for _, f := range o.Files {
			ds = append(ds, kernel.Digest{Path: f.Path, SHA256: f.SHA256, Wrote: f.Changed})
		}
		inv.Saw(ds...)
	case WriteOutput:
		inv.Saw(kernel.Digest{Path: o.Path, SHA256: o.SHA256, Wrote: o.Changed})
	}
}
