package kernel

import (
	"context"
	"errors"

	"github.com/webcodex/webcodex/internal/failure"
)

// dispatch runs the pipeline's steps: admission, lookup and decoding,
// scopes, claims (project, business session and recorder, each session read
// and judged once), durable started events, execution, finished events and
// the outcome.
// It reports whether the call's evidence record was sealed and handed on
// with its finished events (the outbox); otherwise Dispatch writes it.
func (k *Kernel) dispatch(ctx context.Context, c Call, rec *Record) (Result, bool) {
	tool, _ := k.reg.Lookup(c.Tool)
	if tool != nil {
		rec.Mutates = tool.Mutates
	}
	res, recorded := k.steps(ctx, c, tool, rec)
	return res, recorded
}

// steps runs the pipeline for tool (nil when c.Tool is not registered).
func (k *Kernel) steps(ctx context.Context, c Call, tool *Tool, rec *Record) (Result, bool) {
	res, recorded := k.stepsOf(ctx, c, tool, rec)
	if tool != nil {
		res.Tool = tool.Name
	}
	return res, recorded
}

func (k *Kernel) stepsOf(ctx context.Context, c Call, tool *Tool, rec *Record) (Result, bool) {
	if !k.admit() {
		return k.refuse(rec, failure.New(failure.Unavailable, "server is shutting down")), false
	}
	defer k.wg.Done()
	k.inflight.Add(1)
	defer k.inflight.Add(-1)

	if c.Refusal != nil {
		return k.refuse(rec, c.Refusal), false
	}
	in, err := k.admitCall(c, tool)
	if err != nil {
		return k.refuse(rec, err), false
	}
	inv, recorder, pairs, err := k.judgeAndBegin(ctx, c, tool, in, rec, true)
	if errors.Is(err, errJudgeAgain) {
		// What the claims were judged on, the remembered header, is not
		// the stored one (nothing was decided or written): judge them on
		// a read.
		inv, recorder, pairs, err = k.judgeAndBegin(ctx, c, tool, in, rec, false)
	}
	if err != nil {
		return k.refuse(rec, err), false
	}
	out, runErr, interrupted := k.execute(ctx, tool, inv, in)
	if err := k.startedWait(inv, pairs); err != nil {
		if _, changed, _, _ := inv.effects(); len(changed) > 0 {
			// A handler that changed files without durable started events
			// broke BeforeEffect's contract: say so, never hide it.
			k.log.Error("tool changed files although its tool_call_started was not recorded", "tool", tool.Name, "invocation", inv.ID, "changed", changed)
		}
		return k.refuse(rec, err), false
	}
	// A call whose caller went away (client disconnect, cancellation) is
	// never recorded as a success: its outcome as the caller sees it is
	// unknown, whatever the tool managed to do (changed paths are kept).
	cancelled := !interrupted && ctx.Err() != nil
	res := k.outcome(tool, inv, out, runErr, interrupted, cancelled, rec)
	res.Tool = tool.Name
	res.Recorder = inv.recorder
	if inv.Session != nil {
		res.BusinessSession = inv.Session.ID
	}
	if _, _, _, adopted := inv.effects(); adopted != nil {
		res.BusinessSession = adopted.ID
	}
	k.seal(&res, rec)
	k.finish(ctx, tool, inv, pairs, runErr, interrupted, cancelled, rec, &res)
	k.project(ctx, c, inv, recorder, rec.At, &res)
	return res, true
}

// execute runs the handler, cancelled if the kernel is force-stopped; an
// error of a call cut off that way is Interrupted.
func (k *Kernel) execute(ctx context.Context, tool *Tool, inv *Invocation, in any) (out any, runErr error, interrupted bool) {
	runCtx, cancel := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(k.stop, cancel)
	out, runErr = k.run(runCtx, tool, inv, in)
	stopWatch()
	cancel()
	if runErr != nil && k.stop.Err() != nil {
		k.interrupted.Add(1)
		return out, failure.Wrap(failure.Interrupted, runErr, "server shut down while the call was running; its outcome is unknown"), true
	}
	return out, runErr, false
}

func (k *Kernel) run(ctx context.Context, t *Tool, inv *Invocation, in any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			k.log.Error("tool panicked", "tool", t.Name, "panic", p)
			err = errors.New("tool panicked")
		}
	}()
	out, err = t.run(ctx, inv, in)
	if r, ok := out.(Replayer); ok && err == nil {
		// A replay the ledger could not store as it is fails the call (a
		// replay changed nothing) rather than being recorded as a new
		// effect or with a cut pointer.
		if cerr := r.Replay().Check(); cerr != nil {
			err = failure.Wrap(failure.Internal, cerr, "the call's replay could not be recorded")
		}
	}
	return out, err
}
