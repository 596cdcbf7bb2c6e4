package workflowdb

import (
	"context"
	"database/sql"
	"strings"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

const eventColumns = workflowrow.EventColumns

// eventRowArgs is the number of values of one events row (workflowrow.EventArgs), and
// maxEventRowsPerInsert the most rows one INSERT of insertEvents binds:
// SQLite binds at most 32,766 values per statement.
const (
	eventRowArgs          = workflowrow.EventArgCount
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
		args = append(args, workflowrow.EventArgs(id, e)...)
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// eventValues are the placeholders of one events row, in the order of
// session_id, eventColumns. A text column other than session_id and kind
// takes NULL for the empty string (see workflowrow.EventArgs).
const eventValues = `(?,?,?,?,COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),?,` +
	`COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''))`
