package window_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func open(t *testing.T) (*window.Service, *windowdb.Store, *clock) {
	t.Helper()
	st, err := windowdb.Open(context.Background(), filepath.Join(t.TempDir(), windowdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	return window.NewService(st, nil, c.now), st, c
}

var (
	alice  = auth.Principal{Kind: auth.KindAPIToken, ID: "tok_a", Owner: "alice"}
	alice2 = auth.Principal{Kind: auth.KindAPIToken, ID: "tok_a2", Owner: "alice"}
	bob    = auth.Principal{Kind: auth.KindAPIToken, ID: "tok_b", Owner: "bob"}
)

func observe(t *testing.T, svc *window.Service, st *windowdb.Store, p auth.Principal, w, tool, project string) {
	t.Helper()
	svc.Observe(context.Background(), p, w, tool, project, false, "")
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// alicePeers observes alice's windows a and b in agent:local:p through
// svc and returns their hashes and b's peer id.
func alicePeers(t *testing.T, svc *window.Service, st *windowdb.Store) (wa, wb, idB string) {
	t.Helper()
	wa, wb = window.Hash("a", alice), window.Hash("b", alice)
	observe(t, svc, st, alice, wa, "read_files", "agent:local:p")
	observe(t, svc, st, alice, wb, "read_files", "agent:local:p")
	idB = window.PeerID(window.PrincipalOf(alice), wb)
	return wa, wb, idB
}

func peerIDs(t *testing.T, svc *window.Service, p auth.Principal, w, project string) []string {
	t.Helper()
	ps, err := svc.Peers(context.Background(), p, w, project)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range ps {
		ids = append(ids, x.PeerID)
	}
	return ids
}

func TestHashIgnoresBadValues(t *testing.T) {
	for _, bad := range []string{"", "has space", "ctl\x01", "tab\t", "nl\n", strings.Repeat("x", window.MaxRawBytes+1), "\xff\xfe"} {
		if h := window.Hash(bad, alice); h != "" {
			t.Errorf("Hash(%q) = %q, want absent", bad, h)
		}
	}
	a, b := window.Hash("conv-1", alice), window.Hash("conv-1", bob)
	if a == "" || a == b || strings.Contains(a, "conv-1") || len(a) != 64 {
		t.Fatalf("hashes %q %q", a, b)
	}
	if window.Hash(strings.Repeat("x", window.MaxRawBytes), alice) == "" {
		t.Fatal("a value of exactly MaxRawBytes is valid")
	}
}

func TestPeerIDs(t *testing.T) {
	w := window.Hash("conv-1", alice)
	id := window.PeerID(window.PrincipalOf(alice), w)
	if !strings.HasPrefix(id, window.PeerPrefix) || strings.Contains(id, w[:16]) {
		t.Fatalf("peer id %q", id)
	}
	if id == window.PeerID(window.PrincipalOf(bob), w) {
		t.Fatal("a peer id must depend on the principal")
	}
	if window.PrincipalOf(alice) != window.PrincipalOf(alice2) {
		t.Fatal("credentials of one owner are one principal")
	}
}

func TestDiscovery(t *testing.T) {
	svc, st, c := open(t)
	wa, wb, wc := window.Hash("a", alice), window.Hash("b", alice2), window.Hash("c", alice)
	wx := window.Hash("x", bob)
	observe(t, svc, st, alice, wa, "read_files", "agent:local:p")
	observe(t, svc, st, alice2, wb, "read_files", "agent:local:p")
	observe(t, svc, st, alice, wc, "read_files", "agent:local:q") // another project
	observe(t, svc, st, bob, wx, "read_files", "agent:local:p")   // another principal
	idB := window.PeerID(window.PrincipalOf(alice), wb)
	idA := window.PeerID(window.PrincipalOf(alice), wa)
	if got := peerIDs(t, svc, alice, wa, "agent:local:p"); len(got) != 1 || got[0] != idB {
		t.Fatalf("a's peers %v, want [%s]", got, idB)
	}
	if got := peerIDs(t, svc, alice2, wb, "agent:local:p"); len(got) != 1 || got[0] != idA {
		t.Fatalf("b's peers %v, want [%s]", got, idA)
	}
	if got := peerIDs(t, svc, bob, wx, "agent:local:p"); len(got) != 0 {
		t.Fatalf("bob sees %v", got)
	}
	// Status and discovery calls are not activity: a window that only
	// lists peers on p is nobody's peer there.
	wd := window.Hash("d", alice)
	observe(t, svc, st, alice, wd, window.ToolListPeers, "agent:local:p")
	observe(t, svc, st, alice, wd, "list_sessions", "agent:local:p")
	svc.Observe(context.Background(), alice, wd, "read_files", "agent:local:p", true, "") // refused
	st.Flush(context.Background())
	if got := peerIDs(t, svc, alice, wa, "agent:local:p"); len(got) != 1 {
		t.Fatalf("status calls made a peer: %v", got)
	}
	// Recency: 10 minutes, then the peer is not discovered (but its route
	// is retained).
	c.t = c.t.Add(window.Recent)
	if got := peerIDs(t, svc, alice, wa, "agent:local:p"); len(got) != 0 {
		t.Fatalf("a peer last active %v ago is still listed: %v", window.Recent, got)
	}
	if _, err := svc.Peers(context.Background(), alice, "", "agent:local:p"); failure.KindOf(err) != failure.ClientWindowUnavailable {
		t.Fatalf("no window: %v", err)
	}
}

func TestPostPeerMessage(t *testing.T) {
	svc, st, c := open(t)
	ctx := context.Background()
	wa, wb := window.Hash("a", alice), window.Hash("b", alice)
	wx := window.Hash("x", bob)
	observe(t, svc, st, alice, wa, "read_files", "agent:local:p")
	observe(t, svc, st, alice, wb, "read_files", "agent:local:p")
	observe(t, svc, st, bob, wx, "read_files", "agent:local:p")
	idB := window.PeerID(window.PrincipalOf(alice), wb)

	m, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "rebased main; pull", RequiresAck: true, Priority: window.PriorityHigh})
	if err != nil {
		t.Fatal(err)
	}
	if m.FromPeer != window.PeerID(window.PrincipalOf(alice), wa) || m.Priority != window.PriorityHigh {
		t.Fatalf("message %+v", m)
	}
	got, _ := svc.Waiting(ctx, alice, wb)
	if len(got) != 1 || got[0].ID != m.ID || got[0].Body != "rebased main; pull" || !got[0].RequiresAck {
		t.Fatalf("waiting for b: %+v", got)
	}

	bad := []struct {
		name string
		p    auth.Principal
		w    string
		in   window.PostParams
		kind failure.Kind
	}{
		{"other principal", bob, wx, window.PostParams{PeerID: idB, Body: "hi"}, failure.UnknownRecipient},
		{"unknown", alice, wa, window.PostParams{PeerID: "wc_peer_00000000000000000000000000000000", Body: "hi"}, failure.UnknownRecipient},
		{"over bound", alice, wa, window.PostParams{PeerID: idB, Body: strings.Repeat("é", window.MaxMessageChars+1)}, failure.InvalidArguments},
		{"empty", alice, wa, window.PostParams{PeerID: idB, Body: ""}, failure.InvalidArguments},
		{"priority", alice, wa, window.PostParams{PeerID: idB, Body: "hi", Priority: "urgent"}, failure.InvalidArguments},
		{"no window", alice, "", window.PostParams{PeerID: idB, Body: "hi"}, failure.ClientWindowUnavailable},
		{"self", alice, wb, window.PostParams{PeerID: idB, Body: "hi"}, failure.InvalidArguments},
	}
	for _, b := range bad {
		if _, err := svc.Post(ctx, b.p, b.w, b.in); failure.KindOf(err) != b.kind {
			t.Errorf("%s: %v, want %s", b.name, err, b.kind)
		}
	}
	if got, _ := svc.Waiting(ctx, alice, wb); len(got) != 1 {
		t.Fatalf("a refused post stored something: %d waiting", len(got))
	}
	if got, _ := svc.Waiting(ctx, bob, wx); len(got) != 0 {
		t.Fatalf("bob received %d", len(got))
	}
	secret := "ghp_" + strings.Repeat("a", 24)
	if _, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "token " + secret}); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Waiting(ctx, alice, wb); len(got) != 2 || strings.Contains(got[1].Body, secret) {
		t.Fatalf("a credential reached the store: %+v", got)
	}
	if _, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: strings.Repeat("é", window.MaxMessageChars)}); err != nil {
		t.Fatalf("a message of exactly the bound: %v", err)
	}

	// Expired: after ActivityRetention without meaningful activity the
	// route resolves no more, and retained messages age out.
	c.t = c.t.Add(window.ActivityRetention + time.Minute)
	if _, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "late"}); failure.KindOf(err) != failure.UnknownRecipient {
		t.Fatalf("expired peer: %v", err)
	}
	if got, _ := svc.Waiting(ctx, alice, wb); len(got) != 0 {
		t.Fatalf("messages past retention are still waiting: %d", len(got))
	}
}

func TestRetention(t *testing.T) {
	svc, st, c := open(t)
	ctx := context.Background()
	wa, wb, idB := alicePeers(t, svc, st)
	var first string
	for i := 0; i < window.MaxMessagesPerWindow+5; i++ {
		c.t = c.t.Add(time.Millisecond)
		m, err := svc.Post(ctx, alice, wa, window.PostParams{PeerID: idB, Body: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = m.ID
		}
	}
	got, _ := svc.Waiting(ctx, alice, wb)
	if len(got) != window.MaxMessagesPerWindow {
		t.Fatalf("%d retained, want %d", len(got), window.MaxMessagesPerWindow)
	}
	for _, m := range got {
		if m.ID == first {
			t.Fatal("the oldest message survived retention")
		}
	}
	// Activity rows are pruned past ActivityRetention by the next write.
	c.t = c.t.Add(window.ActivityRetention + time.Second)
	observe(t, svc, st, alice, wa, "read_files", "agent:local:q")
	cur, err := svc.CurrentActivity(ctx, alice, wa)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Activity) != 1 || cur.Activity[0].Project != "agent:local:q" {
		t.Fatalf("activity after retention: %+v", cur.Activity)
	}
	// Per principal, at most MaxActivityRowsPerPrincipal rows.
	for i := 0; i < window.MaxActivityRowsPerPrincipal+3; i++ {
		c.t = c.t.Add(time.Millisecond)
		svc.Observe(ctx, alice, window.Hash("w"+string(rune('a'+i%26))+strings.Repeat("z", i/26), alice), "read_files", "agent:local:p", false, "")
	}
	st.Flush(ctx)
	if cur, _ := svc.CurrentActivity(ctx, alice, wa); len(cur.Activity) != 0 {
		t.Fatalf("the least recently active row survived the per-principal bound: %+v", cur.Activity)
	}
}

// TestBoundPrincipalPostsOnItsProject: a principal bound to one project
// (a project credential) reaches only peers active on that project; a
// peer of its group working elsewhere is an unknown recipient.
func TestBoundPrincipalPostsOnItsProject(t *testing.T) {
	svc, st, _ := open(t)
	ctx := context.Background()
	bound := auth.Principal{Kind: auth.KindProjectCredential, ID: "tok_c", Owner: "alice", Project: "agent:local:p"}
	wc, wp, wq := window.Hash("c", bound), window.Hash("p", alice), window.Hash("q", alice2)
	observe(t, svc, st, bound, wc, "read_files", "agent:local:p")
	observe(t, svc, st, alice, wp, "read_files", "agent:local:p")
	observe(t, svc, st, alice2, wq, "read_files", "agent:local:q")
	pr := window.PrincipalOf(alice)
	if _, err := svc.Post(ctx, bound, wc, window.PostParams{PeerID: window.PeerID(pr, wq), Body: "hi"}); failure.KindOf(err) != failure.UnknownRecipient {
		t.Fatalf("to a peer on another project: %v, want %s", err, failure.UnknownRecipient)
	}
	if got, _ := svc.Waiting(ctx, alice2, wq); len(got) != 0 {
		t.Fatalf("the refused post reached q's window: %d", len(got))
	}
	if _, err := svc.Post(ctx, bound, wc, window.PostParams{PeerID: window.PeerID(pr, wp), Body: "hi"}); err != nil {
		t.Fatalf("to a peer on its project: %v", err)
	}
	// Unbound, the same group reaches the peer working elsewhere.
	if _, err := svc.Post(ctx, alice, wp, window.PostParams{PeerID: window.PeerID(pr, wq), Body: "hi"}); err != nil {
		t.Fatalf("an API token to a peer on another project: %v", err)
	}
}
