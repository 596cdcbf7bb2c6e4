package workflowpg

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
)

// TestImportBoard: a board stored by importBoard reads back exactly as the
// board it was read from (counters, messages, every tracking column), in
// another session of another database.
func TestImportBoard(t *testing.T) {
	ctx := context.Background()
	from, fromDB := openBoard(t, pgtest.URL(t))
	sess := createSession(t, fromDB)
	board := workflow.NewBoard(from, nil)
	todo := boardtest.Post(t, board, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageTodo, Body: "fix", Tags: []string{"a"}, RequiresAck: true})
	boardtest.Post(t, board, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageQuestion, Body: "which?", ReplyTo: todo.ID, DeliveryKey: "k"})
	var restored workflow.RestoredBoard
	if err := from.ViewBoard(ctx, sess.ID, func(r workflow.BoardReader) error {
		var err error
		if restored.State, err = r.State(); err != nil {
			return err
		}
		restored.Messages, _, err = r.List(workflow.MessageFilter{Limit: 10})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	to, toDB := openBoard(t, pgtest.URL(t))
	// The session's row, as the import writes it before its board.
	var hdr string
	var retained int64
	if err := fromDB.Pool.QueryRow(ctx, `SELECT header_json, retained FROM workflow.sessions WHERE session_id = $1`, sess.ID).Scan(&hdr, &retained); err != nil {
		t.Fatal(err)
	}
	if _, err := toDB.Pool.Exec(ctx, `INSERT INTO workflow.sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, sess.ID, sess.Project, sess.OwnerFingerprint, string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, hdr); err != nil {
		t.Fatal(err)
	}
	if err := toDB.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error { return importBoard(ctx, tx, sess.ID, &restored) }); err != nil {
		t.Fatal(err)
	}
	if got, want := boardtest.Snap(t, to, sess.ID), boardtest.Snap(t, from, sess.ID); got != want {
		t.Fatalf("imported board:\n%s\nwant:\n%s", got, want)
	}
}
