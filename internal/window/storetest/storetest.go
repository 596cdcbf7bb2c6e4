// Package storetest is the contract suite that every [window.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/window"
)

// Store is a window.Store that also reports a message's analysis facts and
// how many rows it holds, so that tests see what was written.
type Store interface {
	window.Store
	Facts(ctx context.Context, id string) (firstMS, lastMS, count, ackMS int64, err error)
	Counts(ctx context.Context) (activity, messages int64, err error)
}

const proj = "agent:local:a"

// Run runs the window.Store contract against stores returned by open (a
// new, empty store each call, cleaned up by open).
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Store)
	}{
		{"LastActivityNeverMovesBack", lastActivityNeverMovesBack}, {"Affinity", affinity},
		{"PeersAndResolve", peersAndResolve}, {"ActivityRetention", activityRetention},
		{"Messages", messages}, {"Awareness", awareness},
		{"ConcurrentPostsKeepTheBound", concurrentPostsKeepTheBound},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

func prune(now time.Time, rows, msgs int) window.Prune {
	return window.Prune{ActivityBefore: now.Add(-time.Hour), MessagesBefore: now.Add(-time.Hour), MaxRows: rows, MaxMessagesEach: msgs}
}

func touch(t *testing.T, st Store, tc window.Touch, p window.Prune) {
	t.Helper()
	ctx := context.Background()
	if err := st.Touch(ctx, tc, p, func(err error) {
		if err != nil {
			t.Errorf("touch %+v: %v", tc, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// lastActivityNeverMovesBack: an older call arriving late counts but
// leaves last activity at the newest call.
func lastActivityNeverMovesBack(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	for _, at := range []time.Time{now, now.Add(-time.Minute)} { // the second is older
		touch(t, st, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_x", Project: proj, At: at}, prune(now, 8, 8))
	}
	act, err := st.Activity(ctx, "p", "w")
	if err != nil || len(act) != 1 || act[0].Calls != 2 || act[0].LastAt.UnixMilli() != now.UnixMilli() ||
		act[0].FirstAt.UnixMilli() != now.UnixMilli() {
		t.Fatalf("activity %+v %v: last must stay at the newest call", act, err)
	}
	if act, err := st.Activity(ctx, "p", "nobody"); err != nil || act == nil || len(act) != 0 {
		t.Fatalf("activity of an unknown window: %#v %v, want an empty list", act, err)
	}
}

// affinity: the newest explicit affinity wins, a touch without one keeps
// it, and an older affinity never replaces a newer one.
func affinity(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	at := func(at time.Time, aff string) {
		t.Helper()
		touch(t, st, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_x", Project: proj, At: at, Affinity: aff}, prune(now, 8, 8))
	}
	get := func(since time.Time) string {
		t.Helper()
		id, ok, err := st.Affinity(ctx, "p", "w", proj, since)
		if err != nil || ok != (id != "") {
			t.Fatalf("affinity %q %v %v", id, ok, err)
		}
		return id
	}
	at(now.Add(-3*time.Second), "")
	if id := get(now.Add(-time.Hour)); id != "" {
		t.Fatalf("affinity without one: %q", id)
	}
	at(now.Add(-2*time.Second), "wc_sess_a")
	at(now, "wc_sess_b")
	at(now.Add(-time.Second), "wc_sess_old") // arrives late, older
	at(now.Add(time.Second), "")
	if id := get(now.Add(-time.Hour)); id != "wc_sess_b" {
		t.Fatalf("affinity %q, want wc_sess_b", id)
	}
	if id := get(now); id != "" {
		t.Fatalf("an affinity not after since was returned: %q", id)
	}
	if id, _, _ := st.Affinity(ctx, "p", "w", "agent:local:other", now.Add(-time.Hour)); id != "" {
		t.Fatalf("affinity leaked to another project: %q", id)
	}
}

// peersAndResolve: a window sees the other windows of its principal on the
// exact project, most recent first; peer ids resolve within the principal.
func peersAndResolve(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	pr := prune(now, 8, 8)
	touch(t, st, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_w", Project: proj, At: now}, pr)
	touch(t, st, window.Touch{Principal: "p", Window: "u", PeerID: "wc_peer_u", Project: proj, At: now.Add(-2 * time.Second)}, pr)
	touch(t, st, window.Touch{Principal: "p", Window: "v", PeerID: "wc_peer_v", Project: proj, At: now.Add(-time.Second)}, pr)
	touch(t, st, window.Touch{Principal: "p", Window: "x", PeerID: "wc_peer_x", Project: "agent:local:other", At: now}, pr)
	touch(t, st, window.Touch{Principal: "q", Window: "y", PeerID: "wc_peer_y", Project: proj, At: now}, pr)
	peers, err := st.Peers(ctx, "p", "w", proj, now.Add(-time.Minute), 8)
	if err != nil || fmt.Sprint(peers) != "[wc_peer_v wc_peer_u]" {
		t.Fatalf("peers %v %v", peers, err)
	}
	if peers, err := st.Peers(ctx, "p", "w", proj, now.Add(-time.Minute), 1); err != nil || fmt.Sprint(peers) != "[wc_peer_v]" {
		t.Fatalf("peers limited to one: %v %v", peers, err)
	}
	if peers, err := st.Peers(ctx, "p", "w", proj, now.Add(-1500*time.Millisecond), 8); err != nil || fmt.Sprint(peers) != "[wc_peer_v]" {
		t.Fatalf("peers since: %v %v", peers, err)
	}
	if win, ok, err := st.ResolvePeer(ctx, "p", "wc_peer_v", now.Add(-time.Minute)); err != nil || !ok || win != "v" {
		t.Fatalf("resolve: %q %v %v", win, ok, err)
	}
	if win, ok, err := st.ResolvePeer(ctx, "p", "wc_peer_y", now.Add(-time.Minute)); err != nil || ok || win != "" {
		t.Fatalf("another principal's peer resolved: %q %v %v", win, ok, err)
	}
	if last, ok, err := st.LastActive(ctx, "v"); err != nil || !ok || last.UnixMilli() != now.Add(-time.Second).UnixMilli() {
		t.Fatalf("last active: %v %v %v", last, ok, err)
	}
	if _, ok, err := st.LastActive(ctx, "nobody"); err != nil || ok {
		t.Fatalf("last active of an unknown window: %v %v", ok, err)
	}
}

// activityRetention: old activity goes, and a principal keeps only its
// newest MaxRows rows.
func activityRetention(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	touch(t, st, window.Touch{Principal: "q", Window: "old", PeerID: "wc_peer_o", Project: proj, At: now.Add(-2 * time.Hour)}, prune(now.Add(-2*time.Hour), 8, 8))
	for i := range 4 {
		touch(t, st, window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_w", Project: fmt.Sprintf("agent:local:%d", i),
			At: now.Add(time.Duration(i) * time.Second)}, prune(now, 2, 8))
	}
	act, err := st.Activity(ctx, "p", "w")
	if err != nil || len(act) != 2 || act[0].Project != "agent:local:3" || act[1].Project != "agent:local:2" {
		t.Fatalf("activity after retention: %+v %v", act, err)
	}
	if n, _, err := st.Counts(ctx); err != nil || n != 2 {
		t.Fatalf("%d activity rows %v, want 2 (the old one pruned)", n, err)
	}
}

func post(t *testing.T, st Store, id, to string, ack bool, at time.Time, max int) {
	t.Helper()
	m := window.Message{ID: id, Principal: "p", ToWindow: to, FromWindow: "v", ToPeer: "wc_peer_" + to, FromPeer: "wc_peer_v",
		Body: "body of " + id, RequiresAck: ack, Priority: window.PriorityNormal, CreatedAt: at}
	if err := st.PostMessage(context.Background(), m, prune(at, 8, max)); err != nil {
		t.Fatal(err)
	}
}

// messages: a window keeps its newest MaxMessagesEach messages, oldest
// first (ties in creation order); projection and ACK facts are recorded,
// an ACK only of a message that requires one.
func messages(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	post(t, st, "wc_msg_0", "w", false, now, 2)
	post(t, st, "wc_msg_2", "w", true, now.Add(time.Second), 2)
	post(t, st, "wc_msg_1", "w", false, now.Add(time.Second), 2) // same millisecond, later
	post(t, st, "wc_msg_x", "x", false, now, 2)
	got, err := st.Waiting(ctx, "p", "w", now.Add(-time.Minute), 8)
	if err != nil || len(got) != 2 || got[0].ID != "wc_msg_2" || got[1].ID != "wc_msg_1" {
		t.Fatalf("waiting %+v %v", got, err)
	}
	if m := got[0]; !m.RequiresAck || m.Body != "body of wc_msg_2" || m.FromPeer != "wc_peer_v" || m.ToPeer != "wc_peer_w" ||
		m.FromWindow != "v" || m.Priority != window.PriorityNormal || m.CreatedAt.UnixMilli() != now.Add(time.Second).UnixMilli() || m.Projected {
		t.Fatalf("message %+v", m)
	}
	if got, err := st.Waiting(ctx, "p", "w", now.Add(-time.Minute), 1); err != nil || len(got) != 1 || got[0].ID != "wc_msg_2" {
		t.Fatalf("waiting limited to one: %+v %v", got, err)
	}
	at := now.Add(2 * time.Second)
	for _, later := range []time.Duration{0, time.Second} {
		if err := st.Delivered(ctx, "p", "w", []string{"wc_msg_2", "wc_msg_1"}, []string{"wc_msg_2", "wc_msg_1"}, at.Add(later), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delivered(ctx, "p", "x", []string{"wc_msg_1"}, nil, at, nil); err != nil { // not x's message
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(at.UnixMilli(), at.Add(time.Second).UnixMilli(), 2, at.UnixMilli())
	if first, last, n, ack, err := st.Facts(ctx, "wc_msg_2"); err != nil || fmt.Sprint(first, last, n, ack) != want {
		t.Fatalf("facts %d %d %d %d %v, want %s", first, last, n, ack, err, want)
	}
	if _, _, n, ack, err := st.Facts(ctx, "wc_msg_1"); err != nil || n != 2 || ack != 0 {
		t.Fatalf("facts of a message without ACK: count %d ack %d %v", n, ack, err)
	}
	if got, err := st.Waiting(ctx, "p", "w", now.Add(-time.Minute), 8); err != nil || len(got) != 2 || !got[0].Projected {
		t.Fatalf("waiting after projection: %+v %v", got, err)
	}
	if got, err := st.Waiting(ctx, "p", "nobody", now.Add(-time.Minute), 8); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("waiting of an unknown window: %#v %v, want an empty list", got, err)
	}
}

// awareness: the digest is set behind the caller on a row the next touch
// completes, and replaced by the next digest.
func awareness(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	tc := window.Touch{Principal: "p", Window: "w", PeerID: "wc_peer_w", Project: proj, At: now}
	if d, err := st.Awareness(ctx, "p", "w", proj); err != nil || d != "" {
		t.Fatalf("awareness before any: %q %v", d, err)
	}
	for _, d := range []string{"d1", "d2"} {
		if err := st.SetAwareness(ctx, tc, d, nil); err != nil {
			t.Fatal(err)
		}
	}
	touch(t, st, tc, prune(now, 8, 8))
	if d, err := st.Awareness(ctx, "p", "w", proj); err != nil || d != "d2" {
		t.Fatalf("awareness %q %v, want d2", d, err)
	}
	if act, err := st.Activity(ctx, "p", "w"); err != nil || len(act) != 1 || act[0].Calls != 1 {
		t.Fatalf("activity after awareness and one touch: %+v %v", act, err)
	}
}

// concurrentPostsKeepTheBound: messages posted at once to one window never
// leave more than MaxMessagesEach of them.
func concurrentPostsKeepTheBound(t *testing.T, st Store) {
	ctx := context.Background()
	now := time.Now()
	const n, max = 12, 3
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- st.PostMessage(ctx, window.Message{ID: fmt.Sprintf("wc_msg_%d", i), Principal: "p", ToWindow: "w", FromWindow: "v",
				Body: "b", Priority: window.PriorityNormal, CreatedAt: now}, prune(now, 8, max))
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, m, err := st.Counts(ctx); err != nil || m != max {
		t.Fatalf("%d messages %v, want %d", m, err, max)
	}
}
