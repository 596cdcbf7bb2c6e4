package kernel

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// finish records each session's tool_call_finished (and the session the
// call itself created, if any) and the call's evidence record: in the
// transaction of the first session's finish when an Outbox is set, else
// (or when that write fails) through the evidence sink. A mutating call's
// finish is durable when finish returns; a read-only call's is queued
// behind the response (workflow.CallWrite.Behind).
func (k *Kernel) finish(ctx context.Context, tool *Tool, inv *Invocation, pairs []pair, runErr error, interrupted, cancelled bool, rec *Record, res *Result) {
	observed, changed, facts, adopted := inv.effects()
	if adopted != nil {
		pairs = append(pairs, pair{session: adopted.ID, role: workflow.RoleBusiness, callID: newID("call_")})
	}
	// The event's duration is the record's, sealed once (seal runs first).
	finished := workflow.Event{
		Tool: tool.Name, InvocationID: inv.ID, Outcome: workflow.OutcomeOK,
		DurationMS: rec.Duration.Milliseconds(), Facts: facts, ChangedPaths: changed,
	}
	switch {
	case cancelled:
		finished.Outcome = workflow.OutcomeCancelled
		finished.ErrorKind = string(failure.Cancelled)
	case runErr == nil:
		finished.ObservedPaths = observed
		finished.Replayed, finished.ReplayOf = rec.ReplayOf != "", rec.ReplayOf
	default:
		finished.Outcome = workflow.OutcomeFailed
		if interrupted {
			finished.Outcome = workflow.OutcomeInterrupted
		}
		finished.ErrorKind = string(failure.KindOf(runErr))
	}
	if len(pairs) == 0 {
		k.writeEvidence(ctx, *rec, res)
		return
	}
	var outbox []byte
	if k.outbox != nil {
		b, err := k.outbox.Encode(*rec)
		if err != nil {
			k.log.Warn("evidence record not encoded for the outbox", "tool", tool.Name, "invocation", inv.ID, "err", err)
		} else {
			outbox = b
		}
	}
	// The record goes with the first pair's events; when that write fails
	// it goes to the evidence sink instead, so it is never lost nor
	// written twice.
	if !tool.Mutates {
		r := *rec
		k.appendBehind(ctx, inv, pairs, finished, rec.At, outbox, func(first bool, err error) {
			k.finishFailed(inv, err)
			if first && outbox != nil {
				// From the writer's goroutine, which must not wait on
				// another write.
				go k.writeEvidence(context.WithoutCancel(ctx), r, nil)
			}
		})
		if outbox == nil {
			k.writeEvidence(ctx, r, res)
		}
		return
	}
	errs := k.appendFinished(context.WithoutCancel(ctx), inv, pairs, finished, rec.At, outbox)
	for i, err := range errs {
		if err != nil {
			k.finishFailed(inv, err)
		}
		if i == 0 && outbox != nil && err != nil {
			k.writeEvidence(ctx, *rec, res)
		}
	}
	if outbox == nil {
		k.writeEvidence(ctx, *rec, res)
	} else if errs[0] == nil {
		k.outbox.Stored()
	}
}

// finishFailed counts and logs a tool_call_finished write that failed.
func (k *Kernel) finishFailed(inv *Invocation, err error) {
	k.recordFailures.Add(1)
	k.log.Warn("record tool_call_finished", "tool", inv.Tool, "invocation", inv.ID, "err", err)
}

// finishedEvents are the events session p records at the end of the
// call: its tool_call_finished, preceded by its tool_call_started when that
// was not written before the call (read-only tools, whose effect a crash
// cannot leave unexplained, and sessions the call itself created), and
// followed by the call's attachments for that session.
func (k *Kernel) finishedEvents(inv *Invocation, ps []pair, p pair, fin workflow.Event, at time.Time) []workflow.Event {
	e := fin
	e.Kind = workflow.EventToolCallFinished
	e.CallID = p.callID
	e.Role = p.role
	evs := []workflow.Event{e}
	if !p.started {
		evs = []workflow.Event{k.startedEvent(p, inv, at), e}
	}
	if firstFor(ps, p) {
		for _, a := range inv.attachedTo(p.session) {
			a.InvocationID = inv.ID
			evs = append(evs, a)
		}
	}
	return evs
}

// appendFinished durably records each session's finished events, the
// first one's with the outbox row (nil: none), and returns each pair's
// error.
func (k *Kernel) appendFinished(ctx context.Context, inv *Invocation, ps []pair, fin workflow.Event, at time.Time, outbox []byte) []error {
	errs := make([]error, len(ps))
	forEachPair(ps, func(i int, p pair) error {
		w := workflow.CallWrite{}
		if i == 0 {
			w.Outbox = outbox
		}
		errs[i] = k.sessions.FinishCall(ctx, p.session, at, w, k.finishedEvents(inv, ps, p, fin, at)...)
		return errs[i]
	})
	return errs
}

// appendBehind queues each session's finished events of a read-only call
// behind the response, in order, the first with the outbox row (the
// journal's pump is woken once it commits); failed is called (from the
// store's writer when the commit fails) for each write that fails, first
// true for the first pair's.
func (k *Kernel) appendBehind(ctx context.Context, inv *Invocation, ps []pair, fin workflow.Event, at time.Time, outbox []byte, failed func(first bool, err error)) {
	for i, p := range ps {
		w := workflow.CallWrite{Behind: true}
		if i == 0 {
			w.Outbox = outbox
		}
		w.Done = func(err error) {
			switch {
			case err != nil:
				failed(i == 0, err)
			case w.Outbox != nil:
				k.outbox.Stored() // committed: the journal's pump can take it
			}
		}
		if err := k.sessions.FinishCall(context.WithoutCancel(ctx), p.session, at, w, k.finishedEvents(inv, ps, p, fin, at)...); err != nil {
			failed(i == 0, err)
		}
	}
}

// firstFor reports whether p is the first pair recorded in its session
// (recorder and business may share one; attachments go in once).
func firstFor(ps []pair, p pair) bool {
	for _, q := range ps {
		if q.session == p.session {
			return q.callID == p.callID
		}
	}
	return false
}
