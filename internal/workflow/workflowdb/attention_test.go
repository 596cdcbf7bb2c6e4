package workflowdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// BenchmarkAttend is the cost an attention projection adds to a recorded
// call: on a board without messages, and with one ACK-required message
// shown (its facts queued behind).
func BenchmarkAttend(b *testing.B) {
	st := open(b, filepath.Join(b.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	board := workflow.NewBoard(st, nil)
	for _, name := range []string{"empty", "one_ack_required"} {
		sess := start(b, svc)
		if name != "empty" {
			if _, _, err := board.Post(context.Background(), workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageRisk, Body: "x", RequiresAck: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			p := workflow.AttendParams{SessionID: sess.ID, Before: time.Now().Add(time.Hour)}
			for b.Loop() {
				board.Attend(context.Background(), p)
			}
			st.Flush(context.Background())
		})
	}
}
