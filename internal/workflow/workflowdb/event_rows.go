package workflowdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

const eventColumns = `seq, at, kind, tool, call_id, invocation_id, role, outcome, error_kind, duration_ms, text, observed_json, changed_json, facts_json, validation_json, replay_of`

type eventRow struct {
	seq, at, durationMS                                              int64
	kind, tool, callID, invocationID, role, outcome, errorKind, text string
	observed, changed, facts, validation, replayOf                   string
}

func (r *eventRow) dest() []any {
	return []any{&r.seq, &r.at, &r.kind, &r.tool, &r.callID, &r.invocationID, &r.role, &r.outcome,
		&r.errorKind, &r.durationMS, &r.text, &r.observed, &r.changed, &r.facts, &r.validation, &r.replayOf}
}

func (r *eventRow) event() (workflow.Event, error) {
	e := workflow.Event{
		Seq: r.seq, At: time.Unix(0, r.at).UTC(), Kind: workflow.EventKind(r.kind), Tool: r.tool,
		CallID: r.callID, InvocationID: r.invocationID, Role: workflow.Role(r.role),
		Outcome: workflow.Outcome(r.outcome), ErrorKind: r.errorKind, DurationMS: r.durationMS, Text: r.text,
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

func jsonOrEmpty(v any, empty bool) string {
	if empty {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// eventRowArgs is the number of values of one events row (eventArgs), and
// maxEventRowsPerInsert the most rows one INSERT of insertEvents binds:
// SQLite binds at most 32,766 values per statement.
const (
	eventRowArgs          = 17
	maxEventRowsPerInsert = 32766 / eventRowArgs
)

// insertEvents inserts evs for session id with multi-row INSERTs of at
// most maxEventRowsPerInsert rows each.
func insertEvents(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	for len(evs) > maxEventRowsPerInsert {
		if err := insertEventRows(ctx, tx, id, evs[:maxEventRowsPerInsert]); err != nil {
			return err
		}
		evs = evs[maxEventRowsPerInsert:]
	}
	return insertEventRows(ctx, tx, id, evs)
}

// insertEventRows inserts evs for session id with one INSERT.
func insertEventRows(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO events (session_id, ` + eventColumns + `) VALUES `)
	args := make([]any, 0, len(evs)*eventRowArgs)
	for i, e := range evs {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(eventValues)
		args = append(args, eventArgs(id, e)...)
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// eventValues are the placeholders of one events row, in the order of
// session_id, eventColumns. A text column other than session_id and kind
// takes NULL for the empty string (see eventArgs): most of them are empty
// in most events, and a NULL is bound without the copy of its text the
// driver makes for every string.
const eventValues = `(?,?,?,?,COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),?,` +
	`COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''))`

// eventArgs are the values of one events row for eventValues.
func eventArgs(id string, e workflow.Event) []any {
	return []any{id, e.Seq, e.At.UnixNano(), string(e.Kind), orNull(e.Tool), orNull(e.CallID), orNull(e.InvocationID),
		orNull(string(e.Role)), orNull(string(e.Outcome)), orNull(e.ErrorKind), e.DurationMS, orNull(e.Text),
		pathsOrNull(e.ObservedPaths), pathsOrNull(e.ChangedPaths),
		orNull(jsonOrEmpty(e.Facts, len(e.Facts) == 0)),
		orNull(jsonOrEmpty(e.Validation, e.Validation == nil)), orNull(e.ReplayOf)}
}

// pathsOrNull is a path list's JSON (as json.Marshal writes it), or nil
// (NULL, stored as the empty string) for an empty one.
func pathsOrNull(paths []string) any {
	if len(paths) == 0 {
		return nil
	}
	return string(workflow.AppendJSONStrings(make([]byte, 0, 64), paths))
}

// orNull is s, or nil (NULL) for "", which eventValues stores as the
// empty string.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
