package workflowrow

// This file holds the ledger's events rows, the judgement of a malformed
// row (header or event) and the evidence outbox row, which the SQLite
// store and the PostgreSQL store share.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// EventColumns are an events row's columns after session_id, in the order
// of EventRow.Dest and EventArgs.
const EventColumns = `seq, at, kind, tool, call_id, invocation_id, role, outcome, error_kind, duration_ms, text, observed_json, changed_json, facts_json, validation_json, replay_of`

// EventArgCount is the number of values of one events row (EventArgs).
const EventArgCount = 17

// EventRow is one stored events row, column by column.
type EventRow struct {
	Seq, At, DurationMS                                              int64
	kind, tool, callID, invocationID, role, outcome, errorKind, text string
	observed, changed, facts, validation, replayOf                   string
}

// Dest are the scan destinations of EventColumns.
func (r *EventRow) Dest() []any {
	return []any{&r.Seq, &r.At, &r.kind, &r.tool, &r.callID, &r.invocationID, &r.role, &r.outcome,
		&r.errorKind, &r.DurationMS, &r.text, &r.observed, &r.changed, &r.facts, &r.validation, &r.replayOf}
}

// Event decodes and validates the row.
func (r *EventRow) Event() (workflow.Event, error) {
	e := workflow.Event{
		Seq: r.Seq, At: time.Unix(0, r.At).UTC(), Kind: workflow.EventKind(r.kind), Tool: r.tool,
		CallID: r.callID, InvocationID: r.invocationID, Role: workflow.Role(r.role),
		Outcome: workflow.Outcome(r.outcome), ErrorKind: r.errorKind, DurationMS: r.DurationMS, Text: r.text,
		Replayed: r.replayOf != "", ReplayOf: r.replayOf,
	}
	if r.observed != "" {
		if err := json.Unmarshal([]byte(r.observed), &e.ObservedPaths); err != nil {
			return e, fmt.Errorf("observed_paths: %v", err)
		}
	}
	if r.changed != "" {
		if err := json.Unmarshal([]byte(r.changed), &e.ChangedPaths); err != nil {
			return e, fmt.Errorf("changed_paths: %v", err)
		}
	}
	if r.facts != "" {
		if err := json.Unmarshal([]byte(r.facts), &e.Facts); err != nil {
			return e, fmt.Errorf("facts: %v", err)
		}
	}
	if r.validation != "" {
		e.Validation = new(workflow.Validation)
		if err := json.Unmarshal([]byte(r.validation), e.Validation); err != nil {
			return e, fmt.Errorf("validation: %v", err)
		}
	}
	if err := workflow.ValidateEvent(e); err != nil {
		return e, err
	}
	return e, nil
}

// Body is the row as JSON, column by column: what discarded_rows keeps of
// a malformed one.
func (r *EventRow) Body() string {
	b, _ := json.Marshal(map[string]any{
		"seq": r.Seq, "at": r.At, "kind": r.kind, "tool": r.tool, "call_id": r.callID,
		"invocation_id": r.invocationID, "role": r.role, "outcome": r.outcome, "error_kind": r.errorKind,
		"duration_ms": r.DurationMS, "text": r.text, "observed_json": r.observed,
		"changed_json": r.changed, "facts_json": r.facts, "validation_json": r.validation, "replay_of": r.replayOf,
	})
	return string(b)
}

// JSONOrEmpty is v's JSON, or "" when empty.
func JSONOrEmpty(v any, empty bool) string {
	if empty {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// EventArgs are the values of one events row of session id, in the order
// of session_id, EventColumns. A text column other than session_id and
// kind takes nil (NULL) for the empty string: the stores' INSERTs wrap
// those placeholders in COALESCE(…, ”), so the row holds the empty
// string, and a NULL is bound without the copy of its text a driver
// makes for every string.
func EventArgs(id string, e workflow.Event) []any {
	return []any{id, e.Seq, e.At.UnixNano(), string(e.Kind), orNull(e.Tool), orNull(e.CallID), orNull(e.InvocationID),
		orNull(string(e.Role)), orNull(string(e.Outcome)), orNull(e.ErrorKind), e.DurationMS, orNull(e.Text),
		pathsOrNull(e.ObservedPaths), pathsOrNull(e.ChangedPaths),
		orNull(JSONOrEmpty(e.Facts, len(e.Facts) == 0)),
		orNull(JSONOrEmpty(e.Validation, e.Validation == nil)), orNull(e.ReplayOf)}
}

// EventArgNullable reports whether EventArgs may give NULL for the value
// at index i (its placeholder must be wrapped in COALESCE(…, ”)).
func EventArgNullable(i int) bool { return i >= 4 && i != 10 }

// pathsOrNull is a path list's JSON (as json.Marshal writes it), or nil
// for an empty one.
func pathsOrNull(paths []string) any {
	if len(paths) == 0 {
		return nil
	}
	return string(workflow.AppendJSONStrings(make([]byte, 0, 64), paths))
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CheckHeader validates the stored header of session id.
func CheckHeader(id, hdr string) error {
	sess, err := DecodeHeader([]byte(hdr))
	if err == nil && sess.ID != id {
		err = fmt.Errorf("session_id: header names %s", sess.ID)
	}
	return err
}

// A Discard is a malformed row to move to discarded_rows: its table, key,
// reason and body as discarded_rows keeps them, and the session (and, for
// an event, seq) that locate it.
type Discard struct {
	Table, Key, Reason, Body string
	Session                  string
	Seq                      int64
}

// HeaderDiscard is the Discard of session id's malformed header hdr.
func HeaderDiscard(id, hdr string, err error) Discard {
	return Discard{Table: "sessions", Key: id, Reason: err.Error(), Body: hdr, Session: id}
}

// CheckEvent validates one stored event row of session id; every event of
// a session whose header is malformed goes with it.
func CheckEvent(id string, r *EventRow, headerBad bool) (Discard, bool) {
	key := fmt.Sprintf("%s/%d", id, r.Seq)
	if headerBad {
		return Discard{Table: "events", Key: key, Reason: "session row discarded", Body: r.Body(), Session: id, Seq: r.Seq}, false
	}
	if _, err := r.Event(); err != nil {
		return Discard{Table: "events", Key: key, Reason: err.Error(), Body: r.Body(), Session: id, Seq: r.Seq}, false
	}
	return Discard{}, true
}

// PairedCalls returns whether a call id has both a started and a finished
// event in evs (such a call was never open in a durable state). The
// common appends (a call's started event, its finished event, or both)
// are judged by a scan; long ones (an import) by a map.
func PairedCalls(evs []workflow.Event) func(callID string) bool {
	if len(evs) <= 8 {
		return func(callID string) bool {
			var started, finished bool
			for _, e := range evs {
				if e.CallID == callID {
					started = started || e.Kind == workflow.EventToolCallStarted
					finished = finished || e.Kind == workflow.EventToolCallFinished
				}
			}
			return started && finished
		}
	}
	const started, finished = 1, 2
	seen := map[string]int{}
	for _, e := range evs {
		switch {
		case e.CallID == "":
		case e.Kind == workflow.EventToolCallStarted:
			seen[e.CallID] |= started
		case e.Kind == workflow.EventToolCallFinished:
			seen[e.CallID] |= finished
		}
	}
	return func(callID string) bool { return seen[callID] == started|finished }
}

// OutboxRow is one evidence outbox row: its sequence and the bytes the
// caller stored (workflow.CallWrite.Outbox).
type OutboxRow struct {
	Seq  int64
	Body []byte
}

// RestoreReport counts rows validated and moved aside: by a store's
// first-use checks so far or by one full pass. Duration is the time spent
// validating.
type RestoreReport struct {
	Sessions  int64
	Events    int64
	Discarded int64
	Duration  time.Duration
}
