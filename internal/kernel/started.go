package kernel

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// begin chooses the sessions the call is recorded in and, for a mutating
// tool, makes each one's tool_call_started durable before the tool runs.
func (k *Kernel) begin(ctx context.Context, tool *Tool, inv *Invocation, recorder *workflow.Session, rec *Record) ([]pair, error) {
	if recorder != nil {
		inv.recorder = recorder.ID
	}
	pairs := k.pairs(inv, recorder)
	claimedPair := false
	for _, p := range pairs {
		inv.recordIn = append(inv.recordIn, p.session)
		claimedPair = claimedPair || p.session == inv.claimedIn
	}
	if inv.claimed != "" && (!claimedPair || !tool.Mutates || tool.PreparesBeforeEffect) {
		// No started commit of that session would confirm the
		// remembered header the claims were judged on.
		return nil, errJudgeAgain
	}
	if tool.Mutates && len(pairs) > 0 {
		if tool.PreparesBeforeEffect {
			// The handler prepares while the started events commit, and
			// waits for them in BeforeEffect; startedWait waits after it.
			inv.started = make(chan struct{})
			go func() {
				if err := k.appendStarted(context.WithoutCancel(ctx), inv, pairs, rec.At); err != nil {
					inv.startErr = errStartedNotRecorded(err)
				}
				close(inv.started)
			}()
			return pairs, nil
		}
		if err := k.appendStarted(context.WithoutCancel(ctx), inv, pairs, rec.At); err != nil {
			if errors.Is(err, workflow.ErrClaimChanged) {
				return nil, errJudgeAgain
			}
			k.recordFailures.Add(1)
			return nil, errStartedNotRecorded(err)
		}
		for i := range pairs {
			pairs[i].started = true
		}
	}
	return pairs, nil
}

func errStartedNotRecorded(err error) error {
	return failure.Wrap(failure.Unavailable, err, "could not record tool_call_started; the tool did not run")
}

// startedWait waits, after the handler of a tool that prepares before its
// effect returned, for its started commit, and returns that commit's
// error (the handler, told the same by BeforeEffect, changed nothing).
func (k *Kernel) startedWait(inv *Invocation, pairs []pair) error {
	if inv.started == nil {
		return nil
	}
	<-inv.started
	if inv.startErr != nil {
		k.recordFailures.Add(1)
		return inv.startErr
	}
	for i := range pairs {
		pairs[i].started = true
	}
	return nil
}

type pair struct {
	session string
	role    workflow.Role
	callID  string
	// started is true once tool_call_started is durable for this pair.
	started bool
}

// pairs are the event pairs of a call: the verified recorder's and the
// authorized active business session's. When both name the same session
// the call is one invocation there, recorded once by its business pair.
func (k *Kernel) pairs(inv *Invocation, recorder *workflow.Session) []pair {
	var ps []pair
	business := inv.Session != nil && inv.Session.Mutable()
	if recorder != nil && !(business && recorder.ID == inv.Session.ID) {
		ps = append(ps, pair{session: recorder.ID, role: workflow.RoleRecorder, callID: newID("call_")})
	}
	if business {
		ps = append(ps, pair{session: inv.Session.ID, role: workflow.RoleBusiness, callID: newID("call_")})
	}
	return ps
}

func (k *Kernel) startedEvent(p pair, inv *Invocation, at time.Time) workflow.Event {
	return workflow.Event{
		Kind: workflow.EventToolCallStarted, At: at, Tool: inv.Tool, CallID: p.callID,
		InvocationID: inv.ID, Role: p.role,
	}
}

// appendStarted makes each session's tool_call_started durable before a
// mutating tool runs. The sessions are independent ledgers, so they are
// appended concurrently and share group commits.
func (k *Kernel) appendStarted(ctx context.Context, inv *Invocation, ps []pair, at time.Time) error {
	return forEachPair(ps, func(_ int, p pair) error {
		claimed := ""
		if p.session == inv.claimedIn {
			claimed = inv.claimed
		}
		return k.sessions.StartCall(ctx, p.session, claimed, k.startedEvent(p, inv, at))
	})
}

func forEachPair(ps []pair, fn func(int, pair) error) error {
	if len(ps) == 1 {
		return fn(0, ps[0])
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(i, p) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}
