package workflow

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// RecoveryBatch bounds the open calls one recovery round reads.
const RecoveryBatch = 512

// Facts of a finish appended by recovery.
const (
	// FactRecovery names when the finish was appended ("server_start").
	FactRecovery = "recovery"
	// FactRecoveredAt is the RFC 3339 time the finish was appended.
	FactRecoveredAt = "recovered_at"
	// FactStartedSeq is the seq of the call's tool_call_started.
	FactStartedSeq = "started_seq"
	// RecoveryServerStart is the value of FactRecovery.
	RecoveryServerStart = "server_start"
)

// An OpenCall is a tool call whose tool_call_started was made durable in a
// session and whose tool_call_finished never was: the server stopped
// (crashed) while the call ran. The fields are those of the started event;
// the ledger knows nothing else about the call.
type OpenCall struct {
	SessionID string
	// Project is the project of the session.
	Project      string
	CallID       string
	InvocationID string
	Tool         string
	Role         Role
	StartedAt    time.Time
	StartedSeq   int64
}

// A Recovery reports what [Service.RecoverOpenCalls] appended.
type Recovery struct {
	// At is the time the finishes were appended.
	At time.Time
	// Calls are the calls given an outcome_unknown finish, in the order
	// they were read.
	Calls []OpenCall
	// Sessions counts the distinct sessions that received a finish.
	Sessions int
}

// RecoverOpenCalls gives every open call an explicit finish: a
// tool_call_finished with outcome outcome_unknown, error kind
// outcome_unknown and facts saying it was recovered at server start and
// when. Each session's finishes are appended in one commit, whatever its
// lifecycle (a closed session still records how its calls ended), and are
// counted like any unsuccessful finish (tool_failures; tool_calls was
// counted by the started event).
//
// The store returns only calls whose process is gone (never this
// process's, nor those of another process serving the same ledger); the
// app runs it at start, before calls are admitted. It reads only open
// calls (never the event tail), in rounds of RecoveryBatch, and is
// idempotent: a second run finds nothing.
//
// Before a round's finishes are appended, witness (when not nil) receives
// its calls, so that what the finishes attest can be recorded elsewhere
// first (a crash between the two leaves the calls open, and the next start
// witnesses them again).
func (s *Service) RecoverOpenCalls(ctx context.Context, witness func(context.Context, []OpenCall)) (Recovery, error) {
	rec := Recovery{At: s.now().UTC()}
	sessions := map[string]bool{}
	for {
		calls, err := s.store.OpenCalls(ctx, RecoveryBatch)
		if err != nil {
			return rec, err
		}
		if len(calls) == 0 {
			break
		}
		if witness != nil {
			witness(ctx, calls)
		}
		bySession := map[string][]OpenCall{}
		var order []string
		for _, c := range calls {
			if bySession[c.SessionID] == nil {
				order = append(order, c.SessionID)
			}
			bySession[c.SessionID] = append(bySession[c.SessionID], c)
		}
		for _, id := range order {
			open := bySession[id]
			if _, _, err := s.store.Update(ctx, id, func(*Session) ([]Event, error) {
				evs := make([]Event, len(open))
				for i, c := range open {
					evs[i] = recoveredFinish(c, rec.At)
				}
				return evs, nil
			}); failure.KindOf(err) == failure.UnknownSessionID {
				// Its header was malformed: the session was moved aside with
				// its open calls at this first use; nothing is left to finish.
				continue
			} else if err != nil {
				return rec, fmt.Errorf("recover open calls of %s: %w", id, err)
			}
			sessions[id] = true
		}
		for _, c := range calls {
			if sessions[c.SessionID] {
				rec.Calls = append(rec.Calls, c)
			}
		}
		if len(calls) < RecoveryBatch {
			break
		}
	}
	rec.Sessions = len(sessions)
	return rec, nil
}

// recoveredFinish is the explicit finish of an open call.
func recoveredFinish(c OpenCall, at time.Time) Event {
	return Event{
		Kind: EventToolCallFinished, At: at, Tool: c.Tool, CallID: c.CallID,
		InvocationID: c.InvocationID, Role: c.Role, Outcome: OutcomeUnknown,
		ErrorKind: string(failure.OutcomeUnknown),
		Facts: map[string]string{
			FactRecovery:    RecoveryServerStart,
			FactRecoveredAt: at.Format(time.RFC3339Nano),
			FactStartedSeq:  strconv.FormatInt(c.StartedSeq, 10),
		},
	}
}

// An UnknownCall is a finished call whose outcome is unknown, as the
// retained ledger shows it.
type UnknownCall struct {
	Tool    string  `json:"tool"`
	Outcome Outcome `json:"outcome"`
	// At is when the finish was recorded; StartedAt when the call started
	// (zero when its started event is no longer retained).
	At        time.Time `json:"at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Seq       int64     `json:"seq"`
	CallID    string    `json:"call_id"`
}

// UnknownCalls returns the finished calls among events (ascending seq)
// whose outcome is unknown ([Outcome.Unknown]), newest first. A call
// recorded in one session as both recorder and business is listed once
// (by invocation).
func UnknownCalls(events []Event) []UnknownCall {
	started := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == EventToolCallStarted {
			started[e.CallID] = e.At
		}
	}
	var out []UnknownCall
	seen := map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind != EventToolCallFinished || !e.Outcome.Unknown() {
			continue
		}
		if e.InvocationID != "" {
			if seen[e.InvocationID] {
				continue
			}
			seen[e.InvocationID] = true
		}
		out = append(out, UnknownCall{Tool: e.Tool, Outcome: e.Outcome, At: e.At, StartedAt: started[e.CallID], Seq: e.Seq, CallID: e.CallID})
	}
	return out
}
