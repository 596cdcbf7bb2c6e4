package workflowdb_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

func (e *boardEnv) attend(t *testing.T, b *workflow.Board, acks ...string) *workflow.Attention {
	t.Helper()
	return b.Attend(context.Background(), workflow.AttendParams{SessionID: e.sess.ID, Acks: acks, Before: time.Now().Add(time.Second)})
}

func (e *boardEnv) flush(t *testing.T) {
	t.Helper()
	if err := e.st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (e *boardEnv) message(t *testing.T, id string) workflow.Message {
	t.Helper()
	ms, _, err := e.board.List(context.Background(), e.sess.ID, workflow.MessageFilter{MessageID: id})
	if err != nil || len(ms) != 1 {
		t.Fatalf("message %s: %v %v", id, ms, err)
	}
	return ms[0]
}

func shownIDs(a *workflow.Attention) string {
	if a == nil {
		return "<none>"
	}
	var s []string
	for _, m := range a.Messages {
		s = append(s, m.ID)
	}
	return strings.Join(s, ",")
}

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
