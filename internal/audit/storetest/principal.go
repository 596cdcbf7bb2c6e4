package storetest

import (
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
)

// idleReuseIsPerPrincipal reproduces issue 24: two owners' requests
// without an explicit id shared one audit session. Each principal now
// reuses only its own idle session, also when the other one's is the more
// recently active.
func idleReuseIsPerPrincipal(t *testing.T, open func(*testing.T) Backend) {
	svc, st, c := newService(t, open)
	a, _, err := svc.Affinity(ctx, owner, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(1)
	b, _, err := svc.Affinity(ctx, intruder, "")
	if err != nil || b == a {
		t.Fatalf("the second principal's idle session: %q %v (the first's is %q)", b, err, a)
	}
	// Activity in b (newer) changes nothing for the first principal.
	if err := svc.Record(ctx, b, audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{}); err != nil {
		t.Fatal(err)
	}
	c.Add(audit.AffinityCacheTTL) // past every cached answer: the store decides
	for _, p := range []struct{ principal, want string }{{owner, a}, {intruder, b}, {owner, a}} {
		if got, _, err := svc.Affinity(ctx, p.principal, ""); err != nil || got != p.want {
			t.Fatalf("%s: idle reuse gave %q %v, want %q", p.principal, got, err, p.want)
		}
	}
	rows := sessionRows(t, st)
	if len(rows) != 2 || rows[a][0] != owner || rows[b][0] != intruder {
		t.Fatalf("sessions in audit.db: %v", rows)
	}
}

// explicitIDOfAnotherPrincipal: an explicit id that names another
// principal's session is not joined. The caller gets a session of its
// own for that id, created once and reused for the same id; the owner's
// session keeps its id, its events and its counters; the owner still
// joins its own id.
func explicitIDOfAnotherPrincipal(t *testing.T, open func(*testing.T) Backend) {
	svc, st, c := newService(t, open)
	const shared = "claude-code"
	id, given, err := svc.Affinity(ctx, owner, shared)
	if err != nil || !given || id != shared {
		t.Fatalf("owner's explicit id: %q %v %v", id, given, err)
	}
	if err := svc.Record(ctx, id, audit.Event{EventView: audit.EventView{Status: audit.EventSuccess, ActionName: "owners"}}, audit.Attribution{}); err != nil {
		t.Fatal(err)
	}
	before, evs, err := svc.SessionWithEvents(ctx, shared, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("owner's session: %v %d events", err, len(evs))
	}

	other, given, err := svc.Affinity(ctx, intruder, shared)
	if err != nil || !given || other == shared || len(other) != 36 {
		t.Fatalf("another principal's explicit %q: got %q %v %v, want a fresh UUID session", shared, other, given, err)
	}
	if err := svc.Record(ctx, other, audit.Event{EventView: audit.EventView{Status: audit.EventFailed, ActionName: "intruders"}}, audit.Attribution{}); err != nil {
		t.Fatal(err)
	}
	c.Add(audit.AffinityCacheTTL) // past every cached answer: the store decides
	if again, _, err := svc.Affinity(ctx, intruder, shared); err != nil || again != other {
		t.Fatalf("the same principal and id again: %q %v, want %q", again, err, other)
	}
	if mine, _, err := svc.Affinity(ctx, owner, shared); err != nil || mine != shared {
		t.Fatalf("the owner's own id: %q %v", mine, err)
	}
	// The intruder's session id, given back by the owner, is not joined
	// either.
	if cross, _, err := svc.Affinity(ctx, owner, other); err != nil || cross == other || cross == shared {
		t.Fatalf("the owner naming the other principal's session: %q %v", cross, err)
	}
	after, evs, err := svc.SessionWithEvents(ctx, shared, 0)
	if err != nil || len(evs) != 1 || evs[0].ActionName != "owners" || after.TotalActions != before.TotalActions || after.FailedCount != 0 {
		t.Fatalf("the owner's session changed: %+v, %d events", after, len(evs))
	}
	rows := sessionRows(t, st)
	if rows[shared] != [2]string{owner, ""} || rows[other] != [2]string{intruder, shared} || len(rows) != 3 {
		t.Fatalf("sessions in audit.db: %v", rows)
	}
}

// legacySessionsHaveNoPrincipal: a session without a principal (made
// before the principal column) is joined by no authenticated caller.
func legacySessionsHaveNoPrincipal(t *testing.T, open func(*testing.T) Backend) {
	svc, st, _ := newService(t, open)
	if err := st.Raw.InsertLegacySession(ctx, "legacy", 1_800_000_000); err != nil {
		t.Fatal(err)
	}
	if id, _, err := svc.Affinity(ctx, owner, ""); err != nil || id == "legacy" {
		t.Fatalf("idle reuse: %q %v", id, err)
	}
	if id, _, err := svc.Affinity(ctx, owner, "legacy"); err != nil || id == "legacy" {
		t.Fatalf("explicit legacy id: %q %v", id, err)
	}
}

// racingPrincipalsOnOneExplicitID: two principals' requests racing
// on one new explicit id make exactly two sessions, one per principal,
// and every request of a principal gets that principal's.
func racingPrincipalsOnOneExplicitID(t *testing.T, open func(*testing.T) Backend) {
	svc, st, _ := newService(t, open)
	const perPrincipal = 16
	principals := []string{owner, intruder}
	got := make([][]string, len(principals))
	var wg sync.WaitGroup
	for i, p := range principals {
		got[i] = make([]string, perPrincipal)
		for j := range perPrincipal {
			wg.Go(func() {
				id, _, err := svc.Affinity(ctx, p, "race")
				if err != nil {
					t.Error(err)
				}
				got[i][j] = id
			})
		}
	}
	wg.Wait()
	rows := sessionRows(t, st)
	if len(rows) != 2 {
		t.Fatalf("%d sessions for one explicit id and two principals: %v", len(rows), rows)
	}
	for i, p := range principals {
		for _, id := range got[i] {
			if id != got[i][0] || rows[id][0] != p {
				t.Fatalf("%s got %v; sessions %v", p, got[i], rows)
			}
		}
	}
	if got[0][0] == got[1][0] {
		t.Fatalf("both principals got session %q", got[0][0])
	}
}
