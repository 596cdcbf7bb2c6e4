package window_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
)

// heldStore is a real store whose delivery facts are held, not written,
// until released (a slow or lost behind write).
type heldStore struct {
	*windowdb.Store
	held []func(error)
}

func (h *heldStore) Delivered(_ context.Context, _, _ string, _, _ []string, _ time.Time, then func(error)) error {
	h.held = append(h.held, then)
	return nil
}

func (h *heldStore) lose() {
	for _, f := range h.held {
		f(errors.New("lost"))
	}
	h.held = nil
}

func ids(d *window.Delivery) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, m := range d.Messages {
		out = append(out, m.ID)
	}
	return out
}

// TestDeliveryWhileFactsArePending: until its facts commit, an ordinary
// message is not shown by a second call; a lost write shows it once more
// (the documented cost); an ACK-required message is shown by every call
// that does not acknowledge it, and an expired one is no longer
// projected.
func TestDeliveryWhileFactsArePending(t *testing.T) {
	_, st, c := open(t)
	h := &heldStore{Store: st}
	svc := window.NewService(h, nil, c.now)
	ctx := context.Background()
	wa, wb, idB := alicePeers(t, svc, st)
	ord, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "fyi"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "pull first", RequiresAck: true})
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Second)
	deliver := func(acks ...string) *window.Delivery {
		d, _ := svc.Deliver(ctx, window.DeliverParams{Principal: alice, Window: wb, Acks: acks, Before: c.t})
		return d
	}
	if got := ids(deliver()); len(got) != 2 || got[0] != ack.ID || got[1] != ord.ID {
		t.Fatalf("first %v", got)
	}
	if got := ids(deliver()); len(got) != 1 || got[0] != ack.ID {
		t.Fatalf("second (facts pending) %v", got)
	}
	if d := deliver(ack.ID); d == nil || len(d.AckAccepted) != 1 || len(d.Messages) != 0 {
		t.Fatalf("ack %+v", d)
	}
	if got := ids(deliver()); len(got) != 1 || got[0] != ack.ID {
		t.Fatalf("after its ACK (fact pending) %v, want the ACK-required message again", got)
	}
	// The sender's window judges nothing of b's messages.
	if d, claimed := svc.Deliver(ctx, window.DeliverParams{Principal: alice, Window: wa, Acks: []string{ack.ID}, Before: c.t}); d != nil || len(claimed) != 0 {
		t.Fatalf("window a judged b's message: %+v %v", d, claimed)
	}
	h.lose()
	if got := ids(deliver()); len(got) != 2 {
		t.Fatalf("after lost facts %v, want both again", got)
	}

	h.lose()
	c.t = c.t.Add(window.MessageRetention + time.Second)
	if d := deliver(); d != nil {
		t.Fatalf("an expired message was projected: %+v", d)
	}
}

// TestAckedPeerMessageReprojects reproduces the finding of issue 24: an
// ACKed ACK-required peer message was hidden for good once its ACK fact
// committed. An ACK suppresses the body only in the response of the
// request that lists it; every later request that omits the id shows it
// again while it is retained (pruned by count or expired, it is gone).
func TestAckedPeerMessageReprojects(t *testing.T) {
	svc, st, c := open(t)
	ctx := context.Background()
	wa, wb, idB := alicePeers(t, svc, st)
	ack, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "pull first", RequiresAck: true})
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Second)
	deliver := func(acks ...string) *window.Delivery {
		t.Helper()
		d, _ := svc.Deliver(ctx, window.DeliverParams{Principal: alice, Window: wb, Acks: acks, Before: c.t})
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := ids(deliver()); len(got) != 1 || got[0] != ack.ID {
		t.Fatalf("first %v", got)
	}
	if d := deliver(ack.ID); d == nil || len(d.AckAccepted) != 1 || d.AckAccepted[0] != ack.ID || len(d.Messages) != 0 {
		t.Fatalf("the ACKing request: %+v", d)
	}
	if _, _, _, acked, err := st.Facts(ctx, ack.ID); err != nil || acked == 0 {
		t.Fatalf("the ACK fact did not commit: %d %v", acked, err)
	}
	for i := 0; i < 3; i++ {
		if got := ids(deliver()); len(got) != 1 || got[0] != ack.ID {
			t.Fatalf("request %d omitting the id after its ACK: %v, want %s re-projected", i, got, ack.ID)
		}
	}
	if d := deliver(ack.ID); d == nil || len(d.Messages) != 0 {
		t.Fatalf("a second ACK showed the body: %+v", d)
	}
	_, _, count, _, err := st.Facts(ctx, ack.ID)
	if err != nil || count != 4 {
		t.Fatalf("projection_count %d (%v), want 4", count, err)
	}
	// Pruned by the per-window bound, it is no longer projected.
	for i := 0; i < window.MaxMessagesPerWindow; i++ {
		c.t = c.t.Add(time.Millisecond)
		if _, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "fyi"}); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(time.Second)
	for i := 0; i < 10; i++ {
		for _, id := range ids(deliver()) {
			if id == ack.ID {
				t.Fatalf("call %d projected the pruned message", i)
			}
		}
	}
}
