package workflow

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// testBoard is a consistent exported board: a todo (seq 1) with two
// replies (seq 2, 3) and a note (seq 4), nothing removed.
func testBoard(t *testing.T) (LedgerBoard, []Message) {
	t.Helper()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	todo := Message{ID: NewMessageID(), Seq: 1, CreatedAt: at, Kind: MessageTodo, Status: MessageOpen, Priority: PriorityNormal,
		Body: "do it", Tags: []string{}, ObservationRevision: 1, RepliesPosted: 2, AssignmentRevision: 2, DeliveryFingerprint: strings.Repeat("a", 64)}
	r1 := Message{ID: NewMessageID(), Seq: 2, CreatedAt: at, Kind: MessageQuestion, Status: MessageOpen, Priority: PriorityNormal,
		Body: "how?", Tags: []string{}, ReplyTo: todo.ID, ObservationRevision: 2}
	r2 := Message{ID: NewMessageID(), Seq: 3, CreatedAt: at, Kind: MessageGuidance, Status: MessageOpen, Priority: PriorityNormal,
		Body: "carefully", Tags: []string{}, ReplyTo: todo.ID, ObservationRevision: 3}
	note := Message{ID: NewMessageID(), Seq: 4, CreatedAt: at, Kind: MessageNote, Status: MessageOpen, Priority: PriorityLow,
		Body: "fyi", Tags: []string{"x"}, ObservationRevision: 4}
	ms := []Message{todo, r1, r2, note}
	b := LedgerBoard{Posted: 4, Retained: 4, ObservationRevision: 4}
	for _, m := range ms {
		b.Messages = append(b.Messages, ledgerMessage(m))
	}
	return b, ms
}

func restore(t *testing.T, b LedgerBoard) (*RestoredBoard, error) {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return restoreBoard("wc_sess_"+strings.Repeat("1", 32), raw)
}

func TestRestoreBoardIntact(t *testing.T) {
	b, ms := testBoard(t)
	rb, err := restore(t, b)
	if err != nil || len(rb.Discarded) != 0 || len(rb.Messages) != 4 {
		t.Fatalf("%v %+v", err, rb)
	}
	for i, m := range rb.Messages {
		m.SessionID = ""
		if ledgerMessage(m).Digest != ledgerMessage(ms[i]).Digest {
			t.Fatalf("message %d changed:\n%+v\n%+v", i, m, ms[i])
		}
	}
	if st := rb.State; st.Posted != 4 || st.Retained != 4 || st.Removed != 0 || st.ObservationRevision != 4 ||
		st.ObservationLowWatermark != 0 || st.Generation == 0 {
		t.Fatalf("state: %+v", st)
	}
	other, _ := restore(t, b)
	if other.State.Generation == rb.State.Generation {
		t.Fatal("two restores share a generation")
	}
}

// Rows that carry a valid digest but contradict the board's invariants
// are discarded too; losing a reply moves its todo's counters, and
// discarding cascades to a parent that then holds too many replies.
func TestRestoreBoardInvariants(t *testing.T) {
	resign := func(b *LedgerBoard, i int, edit func(*LedgerMessage)) {
		edit(&b.Messages[i])
		b.Messages[i].Digest = messageDigest(b.Messages[i])
	}
	t.Run("a lost reply", func(t *testing.T) {
		b, ms := testBoard(t)
		resign(&b, 1, func(m *LedgerMessage) { m.Seq = 9 }) // beyond posted
		rb, err := restore(t, b)
		if err != nil || len(rb.Discarded) != 1 || rb.Discarded[0].ID != ms[1].ID || rb.Discarded[0].Index != 2 ||
			!strings.Contains(rb.Discarded[0].Reason, "seq 9") {
			t.Fatalf("%v %+v", err, rb)
		}
		todo := rb.Messages[0]
		if todo.RepliesRemoved != 1 || todo.AssignmentRevision != 3 || rb.State.Removed != 1 || rb.State.Retained != 3 ||
			rb.State.ObservationLowWatermark != 2 {
			t.Fatalf("todo %+v state %+v", todo, rb.State)
		}
	})
	t.Run("more replies than counted", func(t *testing.T) {
		b, ms := testBoard(t)
		resign(&b, 0, func(m *LedgerMessage) { m.RepliesPosted = 1 })
		rb, err := restore(t, b)
		if err != nil || len(rb.Discarded) != 1 || rb.Discarded[0].ID != ms[0].ID || !strings.Contains(rb.Discarded[0].Reason, "replies") {
			t.Fatalf("%v %+v", err, rb)
		}
	})
	t.Run("a parent's counters cascade", func(t *testing.T) {
		// A reply to the note (which counts none) is discarded with the
		// note; the note's own reply count is then kept.
		b, ms := testBoard(t)
		resign(&b, 2, func(m *LedgerMessage) { m.ReplyTo = ms[3].ID }) // r2 now replies to the note
		rb, err := restore(t, b)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, d := range rb.Discarded {
			ids[d.ID] = true
		}
		if !ids[ms[3].ID] || len(rb.Messages)+len(rb.Discarded) != 4 {
			t.Fatalf("discarded %+v kept %d", rb.Discarded, len(rb.Messages))
		}
	})
	for name, edit := range map[string]func(*LedgerMessage){
		"completion without a todo": func(m *LedgerMessage) { m.CompletionID = "wc_cmp_" + strings.Repeat("0", 32) },
		"key without completion":    func(m *LedgerMessage) { m.CompletionKey = "k" },
		"resolved without a time":   func(m *LedgerMessage) { m.Status = MessageResolved },
		"bad fingerprint":           func(m *LedgerMessage) { m.DeliveryFingerprint = "xyz" },
		"blank body":                func(m *LedgerMessage) { m.Body = "  " },
		"bad author":                func(m *LedgerMessage) { m.AuthorSessionID = "someone" },
		"revision beyond the board": func(m *LedgerMessage) { m.ObservationRevision = 5 },
	} {
		t.Run(name, func(t *testing.T) {
			b, ms := testBoard(t)
			resign(&b, 3, edit)
			rb, err := restore(t, b)
			if err != nil || len(rb.Discarded) != 1 || rb.Discarded[0].ID != ms[3].ID || len(rb.Messages) != 3 {
				t.Fatalf("%v %+v", err, rb)
			}
		})
	}
	t.Run("repeated ids", func(t *testing.T) {
		b, _ := testBoard(t)
		resign(&b, 3, func(m *LedgerMessage) { m.ID = b.Messages[1].ID })
		rb, err := restore(t, b)
		if err != nil || len(rb.Discarded) != 1 || rb.Discarded[0].Index != 4 || !strings.Contains(rb.Discarded[0].Reason, "repeated") {
			t.Fatalf("%v %+v", err, rb)
		}
	})
}

func TestRestoreBoardCountersRefuse(t *testing.T) {
	for name, edit := range map[string]func(*LedgerBoard){
		"retained":      func(b *LedgerBoard) { b.Retained = 3 },
		"posted":        func(b *LedgerBoard) { b.Posted = 5 },
		"low-watermark": func(b *LedgerBoard) { b.ObservationLowWatermark = 5 },
		"negative":      func(b *LedgerBoard) { b.Removed, b.Posted = -1, 3 },
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := testBoard(t)
			edit(&b)
			if _, err := restore(t, b); err == nil {
				t.Fatal("contradicting counters accepted")
			}
		})
	}
	if _, err := restoreBoard("wc_sess_"+strings.Repeat("1", 32), json.RawMessage(`{"posted":0,"retained":0,"removed":0,"observation_revision":0,"observation_low_watermark":0,"messages":[],"extra":1}`)); err == nil {
		t.Fatal("unknown board member accepted")
	}
}
