package boardtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/workflow"
)

// attentionBounds: at most MaxAttentionMessages shown (ACK-required
// first, each oldest first), the rest counted; each body at most
// AttentionExcerptChars characters; the rejections at most
// MaxAckRejections, the rest counted.
func attentionBounds(t *testing.T, open Opener) {
	e := newEnv(t, open)
	var ordinary []string
	for i := range workflow.MaxAttentionMessages + 2 {
		ordinary = append(ordinary, e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprintf("note %d", i)}).ID)
	}
	long := strings.Repeat("é", workflow.AttentionExcerptChars+1)
	acked := e.post(t, workflow.PostParams{Kind: workflow.MessageRisk, Body: long, RequiresAck: true})
	a := e.attend(t, e.board)
	want := strings.Join(append([]string{acked.ID}, ordinary[:workflow.MaxAttentionMessages-1]...), ",")
	if shownIDs(a) != want || a.Omitted != 3 {
		t.Fatalf("shown %s omitted %d, want %s omitted 3", shownIDs(a), a.Omitted, want)
	}
	if m := a.Messages[0]; utf8.RuneCountInString(m.Message) != workflow.AttentionExcerptChars || !m.Truncated || !m.RequiresAck {
		t.Fatalf("long body: %d chars truncated=%v", utf8.RuneCountInString(m.Message), m.Truncated)
	}
	if a.Messages[1].Truncated {
		t.Fatal("a short body marked truncated")
	}
	e.flush(t)
	a = e.attend(t, e.board)
	if want := strings.Join(append([]string{acked.ID}, ordinary[workflow.MaxAttentionMessages-1:]...), ","); shownIDs(a) != want || a.Omitted != 0 {
		t.Fatalf("second block %s omitted %d, want %s", shownIDs(a), a.Omitted, want)
	}

	// 20 ids: 8 malformed (judged), 12 over the limit; 16 listed, 4 counted.
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("bad-%d", i))
	}
	a = e.attend(t, e.board, many...)
	if len(a.AckRejected) != workflow.MaxAckRejections || a.AckRejectedOmitted != 4 ||
		a.AckRejected[7] != (workflow.AckRejection{MessageID: "bad-7", Reason: workflow.AckMalformed}) ||
		a.AckRejected[8] != (workflow.AckRejection{MessageID: "bad-8", Reason: workflow.AckOverLimit}) {
		t.Fatalf("rejections %+v omitted %d", a.AckRejected, a.AckRejectedOmitted)
	}
	// An overlong id is echoed clipped.
	a = e.attend(t, e.board, strings.Repeat("x", 500))
	if got := a.AckRejected[0].MessageID; got != strings.Repeat("x", 64)+"..." {
		t.Fatalf("echoed %q", got)
	}
}

// attentionFirstAck: the first accepted ACK stores
// first_ack_observed_at, advances the observation revision once and wakes
// observers; a repeat changes nothing. An ordinary message shown by one
// block is not shown by the next, even before its facts commit.
func attentionFirstAck(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	n := workflow.NewLocalNotifier()
	b := workflow.NewBoard(e.st, nil).WithNotifier(n)
	msg := e.post(t, workflow.PostParams{Kind: workflow.MessageGuidance, Body: "vet first", RequiresAck: true})
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "fyi"})
	if got := shownIDs(e.attend(t, b)); got != msg.ID+","+note.ID {
		t.Fatalf("first block %s", got)
	}
	// Not flushed: the note's facts may still be queued.
	if got := shownIDs(e.attend(t, b)); got != msg.ID {
		t.Fatalf("second block %s", got)
	}
	e.flush(t)
	before, err := e.board.State(ctx, e.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	wake, stop := n.Subscribe(e.sess.ID)
	defer stop()
	a := e.attend(t, b, msg.ID)
	if len(a.Messages) != 0 || len(a.AckAccepted) != 1 || a.AckAccepted[0] != msg.ID {
		t.Fatalf("ACK block %+v", a)
	}
	e.flush(t)
	<-wake // closed by the first ACK's commit
	after, _ := e.board.State(ctx, e.sess.ID)
	m := e.message(t, msg.ID)
	if after.ObservationRevision != before.ObservationRevision+1 || m.FirstAckObservedAt == nil || m.ObservationRevision != after.ObservationRevision {
		t.Fatalf("revision %d -> %d, message %+v", before.ObservationRevision, after.ObservationRevision, m)
	}
	first := *m.FirstAckObservedAt
	e.attend(t, b, msg.ID)
	e.flush(t)
	again, _ := e.board.State(ctx, e.sess.ID)
	if again.ObservationRevision != after.ObservationRevision || !e.message(t, msg.ID).FirstAckObservedAt.Equal(first) {
		t.Fatal("a repeated ACK changed the board")
	}
	if n := e.message(t, note.ID); n.ProjectionCount != 1 || n.FirstProjectedAt == nil || !n.FirstProjectedAt.Equal(*n.LastProjectedAt) {
		t.Fatalf("note facts %+v", n)
	}
	if n := e.message(t, msg.ID); n.ProjectionCount != 2 { // the two blocks that showed it (not the ACKing ones)
		t.Fatalf("ACK-required facts %+v", n)
	}
}

// failingBehind fails every behind board write without running it.
type failingBehind struct{ Store }

// attentionFactsLost: when the facts' write fails the block already
// built is the same (it never claims anything was stored), the failure is
// counted, and nothing changed: the note is shown again, the ACK was not
// observed, the revision did not move.
func attentionFactsLost(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	msg := e.post(t, workflow.PostParams{Kind: workflow.MessageGuidance, Body: "vet first", RequiresAck: true})
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "fyi"})
	lossy := workflow.NewBoard(failingBehind{e.st}, nil)
	before, _ := e.board.State(ctx, e.sess.ID)
	a := e.attend(t, lossy, msg.ID)
	if shownIDs(a) != note.ID || len(a.AckAccepted) != 1 || lossy.AttentionStats().FactWriteFailures != 1 {
		t.Fatalf("block %+v failures %d", a, lossy.AttentionStats().FactWriteFailures)
	}
	if got := shownIDs(e.attend(t, lossy)); got != msg.ID+","+note.ID {
		t.Fatalf("after a lost write %s", got)
	}
	after, _ := e.board.State(ctx, e.sess.ID)
	if m := e.message(t, msg.ID); after != before || m.FirstAckObservedAt != nil || m.ProjectionCount != 0 || e.message(t, note.ID).ProjectionCount != 0 {
		t.Fatalf("a lost write changed the board: %+v %+v", after, m)
	}
}

func (f failingBehind) UpdateBoardBehind(ctx context.Context, id string, fn func(workflow.BoardWriter) error, done func(error)) error {
	done(errors.New("disk I/O error"))
	return nil
}

// attentionPossibleAgreesWithTheBlock: the probe a call without ACK
// ids takes instead of the board snapshot says false exactly when the full
// block would show nothing, through every state a message passes: no
// board, a fresh note, the note projected, an ACK-required risk (shown on
// every call), the risk resolved, and a message posted after the call
// began.
func attentionPossibleAgreesWithTheBlock(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ctx := context.Background()
	// full is the block the snapshot path builds (an ACK id forces it;
	// a malformed one is only rejected, never shown).
	full := func(before time.Time) []string {
		a := e.board.Attend(ctx, workflow.AttendParams{SessionID: e.sess.ID, Acks: []string{"x"}, Before: before})
		e.flush(t)
		var ids []string
		for _, m := range a.Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	check := func(state string, before time.Time, want bool) {
		t.Helper()
		got, err := e.st.AttentionPossible(ctx, e.sess.ID, before)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: possible %v, want %v", state, got, want)
		}
		// The fast path of Attend (no ACK ids) shows what the probe says.
		if fast := e.attend(t, e.board); want != (fast != nil) {
			t.Fatalf("%s: block %+v with possible %v", state, fast, want)
		}
		e.flush(t)
	}
	later := func() time.Time { return time.Now().Add(time.Second) }

	check("no board", later(), false)
	if ids := full(later()); len(ids) != 0 {
		t.Fatalf("no board: the snapshot shows %v", ids)
	}
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote})
	if got, _ := e.st.AttentionPossible(ctx, e.sess.ID, note.CreatedAt); got {
		t.Fatal("a note posted at the call's start counted as posted before it")
	}
	check("a fresh note", later(), true) // shown here, so projected after
	check("the note projected", later(), false)
	if ids := full(later()); len(ids) != 0 {
		t.Fatalf("projected note: the snapshot shows %v", ids)
	}
	risk := e.post(t, workflow.PostParams{Kind: workflow.MessageRisk, RequiresAck: true})
	check("an ACK-required risk", later(), true)
	check("the risk shown once", later(), true)
	if ids := full(later()); len(ids) != 1 || ids[0] != risk.ID {
		t.Fatalf("risk: the snapshot shows %v", ids)
	}
	if _, _, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: risk.ID, Resolution: "done"}); err != nil {
		t.Fatal(err)
	}
	check("the risk resolved", later(), false)
	if ids := full(later()); len(ids) != 0 {
		t.Fatalf("resolved: the snapshot shows %v", ids)
	}
}
