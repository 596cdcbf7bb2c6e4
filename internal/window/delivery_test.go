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
// message is not shown by a second call and an acknowledged one is not
// shown again; a lost write shows them once more (the documented cost);
// an expired ACK-required message is no longer projected.
func TestDeliveryWhileFactsArePending(t *testing.T) {
	_, st, c := open(t)
	h := &heldStore{Store: st}
	svc := window.NewService(h, nil, c.now)
	ctx := context.Background()
	wa, wb := window.Hash("a", alice), window.Hash("b", alice)
	observe(t, svc, st, alice, wa, "read_files", "agent:local:p")
	observe(t, svc, st, alice, wb, "read_files", "agent:local:p")
	idB := window.PeerID(window.PrincipalOf(alice), wb)
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
	if d := deliver(); d != nil {
		t.Fatalf("shown again while the ACK fact is pending: %+v", d)
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
