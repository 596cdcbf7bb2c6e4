// Package storetest is the contract suite that every [goal.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store.
package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal"
)

// Store is a goal.Store that can show a Goal's stored row as text, column
// by column, so that tests prove a row was not touched and that no secret
// reached it.
type Store interface {
	goal.Store
	Raw(ctx context.Context, id string) (string, error)
}

const (
	alice = "fp-alice"
	bob   = "fp-bob"
	proj  = "agent:local:p"
)

// Run runs the goal.Store contract against stores returned by open (a new,
// empty store each call, cleaned up by open).
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	withService := func(t *testing.T) (*goal.Service, Store) {
		st := open(t)
		return goal.NewService(st, nil), st
	}
	for _, c := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T) (*goal.Service, Store))
	}{
		{"CreateGetListUpdate", createGetListUpdate}, {"Bounds", bounds}, {"Associate", associate},
		{"OwnerBound", ownerBound}, {"ConcurrentUpdatesOneWins", concurrentUpdatesOneWins},
		{"ConcurrentCreatesKeepTheBound", concurrentCreatesKeepTheBound},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, withService) })
	}
}

func raw(t *testing.T, st Store, id string) string {
	t.Helper()
	r, err := st.Raw(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if !failure.Is(err, k) {
		t.Fatalf("error %v, want kind %s", err, k)
	}
}

func createGetListUpdate(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	svc, st := open(t)
	g, err := svc.Create(ctx, goal.CreateParams{Owner: alice, Project: proj, Title: "Ship goals", Objective: "token=hunter2hunter2 in the objective"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g.ID, goal.IDPrefix) || len(g.ID) != len(goal.IDPrefix)+32 || g.Status != goal.Active || g.Generation != 1 {
		t.Fatalf("created %+v", g)
	}
	if strings.Contains(raw(t, st, g.ID), "hunter2") {
		t.Fatalf("a planted secret reached goals.db: %s", raw(t, st, g.ID))
	}
	got, err := svc.Get(ctx, alice, g.ID)
	if err != nil || got.Revision != g.Revision || got.Title != "Ship goals" {
		t.Fatalf("get: %+v %v", got, err)
	}
	// Another authority group never sees it.
	_, err = svc.Get(ctx, bob, g.ID)
	wantKind(t, err, failure.UnknownGoalID)
	if gs, total, err := svc.List(ctx, goal.ListFilter{Owner: bob}); err != nil || total != 0 || len(gs) != 0 {
		t.Fatalf("bob lists %v %d %v", gs, total, err)
	}
	if gs, total, err := svc.List(ctx, goal.ListFilter{Owner: alice, Project: proj, Status: goal.Active}); err != nil || total != 1 || gs[0].ID != g.ID {
		t.Fatalf("alice lists %v %d %v", gs, total, err)
	}

	done := goal.Completed
	up, changed, err := svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: g.ID, ExpectedRevision: g.Revision, Status: &done})
	if err != nil || !changed || up.Status != goal.Completed || up.Generation != 2 || up.Revision == g.Revision {
		t.Fatalf("update: %+v %v %v", up, changed, err)
	}
	// Stale revision: revision_conflict with the current one, row unchanged.
	before := raw(t, st, g.ID)
	title := "Other"
	_, _, err = svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: g.ID, ExpectedRevision: g.Revision, Title: &title})
	wantKind(t, err, failure.RevisionConflict)
	if cur := failure.DetailOf(err)["current_revision"]; cur != up.Revision {
		t.Fatalf("conflict carries %v, want %s", cur, up.Revision)
	}
	if raw(t, st, g.ID) != before {
		t.Fatal("a stale update changed the goal")
	}
	// Malformed revisions: invalid_revision, unchanged.
	for _, rev := range []string{"", "1", "0-0123456789abcdef", "2-0123456789ABCDEF", "x-" + strings.Repeat("a", 16), strings.Repeat("9", 80)} {
		_, _, err = svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: g.ID, ExpectedRevision: rev, Title: &title})
		wantKind(t, err, failure.InvalidRevision)
	}
	if raw(t, st, g.ID) != before {
		t.Fatal("a malformed revision changed the goal")
	}
	// Another group's update: unknown, unchanged.
	_, _, err = svc.Update(ctx, goal.UpdateParams{Owner: bob, ID: g.ID, ExpectedRevision: up.Revision, Title: &title})
	wantKind(t, err, failure.UnknownGoalID)
	// An update that changes nothing keeps the revision.
	same, changed, err := svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: g.ID, ExpectedRevision: up.Revision, Status: &done})
	if err != nil || changed || same.Revision != up.Revision || raw(t, st, g.ID) != before {
		t.Fatalf("no-op update: %+v %v %v", same, changed, err)
	}
	// A revision of another goal never matches.
	h, _ := svc.Create(ctx, goal.CreateParams{Owner: alice, Title: "second"})
	_, _, err = svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: h.ID, ExpectedRevision: g.Revision, Title: &title})
	wantKind(t, err, failure.RevisionConflict)
}

func bounds(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	svc, st := open(t)
	for _, p := range []goal.CreateParams{
		{Owner: alice, Title: ""},
		{Owner: alice, Title: "   "},
		{Owner: alice, Title: strings.Repeat("t", goal.TitleMaxChars+1)},
		{Owner: alice, Title: "ok", Objective: strings.Repeat("o", goal.ObjectiveMaxChars+1)},
	} {
		_, err := svc.Create(ctx, p)
		wantKind(t, err, failure.InvalidArguments)
	}
	if _, total, _ := svc.List(ctx, goal.ListFilter{Owner: alice}); total != 0 {
		t.Fatalf("a refused create stored %d goals", total)
	}
	g, err := svc.Create(ctx, goal.CreateParams{Owner: alice, Title: strings.Repeat("t", goal.TitleMaxChars)})
	if err != nil {
		t.Fatal(err)
	}
	before := raw(t, st, g.ID)
	steps := func(n int) []goal.Step {
		out := make([]goal.Step, n)
		for i := range out {
			out[i] = goal.Step{Title: "s", Status: goal.StepPending}
		}
		return out
	}
	for _, p := range []goal.CheckpointParams{
		{Steps: steps(goal.MaxSteps + 1), RecoverySummary: "r"},
		{Steps: []goal.Step{{Title: strings.Repeat("s", goal.StepTitleMaxChars+1), Status: goal.StepDone}}, RecoverySummary: "r"},
		{Steps: []goal.Step{{Title: "s", Status: "finished"}}, RecoverySummary: "r"},
		{Steps: steps(1), RecoverySummary: ""},
		{Steps: steps(1), RecoverySummary: strings.Repeat("r", goal.RecoverySummaryMaxChars+1)},
	} {
		p.Owner, p.ID = alice, g.ID
		_, err := svc.Checkpoint(ctx, p)
		wantKind(t, err, failure.InvalidArguments)
	}
	_, err = svc.Checkpoint(ctx, goal.CheckpointParams{Owner: alice, ID: g.ID, Steps: steps(1), RecoverySummary: "r", ExpectedRevision: "nope"})
	wantKind(t, err, failure.InvalidRevision)
	if raw(t, st, g.ID) != before {
		t.Fatal("a refused checkpoint changed the goal")
	}
	full := steps(goal.MaxSteps)
	full[0].Status, full[1].Status = goal.StepDone, goal.StepSkipped
	c, err := svc.Checkpoint(ctx, goal.CheckpointParams{Owner: alice, ID: g.ID, Steps: full,
		RecoverySummary: strings.Repeat("r", goal.RecoverySummaryMaxChars), Recorder: "wc_sess_0123456789abcdef0123456789abcdef"})
	if err != nil || c.Progress() != (goal.Progress{Done: 2, Total: goal.MaxSteps}) || c.Checkpoints != 1 || c.CheckpointedAt == nil ||
		c.Status != goal.Active || c.Revision == g.Revision {
		t.Fatalf("checkpoint: %+v %v", c, err)
	}
	// A stale checkpoint CAS is a conflict and changes nothing.
	before = raw(t, st, g.ID)
	_, err = svc.Checkpoint(ctx, goal.CheckpointParams{Owner: alice, ID: g.ID, ExpectedRevision: g.Revision, Steps: steps(1), RecoverySummary: "r"})
	wantKind(t, err, failure.RevisionConflict)
	if raw(t, st, g.ID) != before {
		t.Fatal("a stale checkpoint changed the goal")
	}
	for _, bad := range []string{"", "wc_goal_", "wc_goal_0123456789ABCDEF0123456789abcdef", "wc_sess_0123456789abcdef0123456789abcdef"} {
		_, err := svc.Get(ctx, alice, bad)
		wantKind(t, err, failure.InvalidArguments)
	}
	_, err = svc.Get(ctx, alice, "wc_goal_0123456789abcdef0123456789abcdef")
	wantKind(t, err, failure.UnknownGoalID)
	for _, f := range []goal.ListFilter{{Owner: alice, Limit: goal.ListMax + 1}, {Owner: alice, Offset: -1}, {Owner: alice, Status: "done"}} {
		_, _, err := svc.List(ctx, f)
		wantKind(t, err, failure.InvalidArguments)
	}
}

func associate(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	svc, st := open(t)
	g, _ := svc.Create(ctx, goal.CreateParams{Owner: alice, Project: proj, Title: "bound"})
	free, _ := svc.Create(ctx, goal.CreateParams{Owner: alice, Title: "free"})
	const s1, s2 = "wc_sess_00000000000000000000000000000001", "wc_sess_00000000000000000000000000000002"
	before := raw(t, st, g.ID)

	_, _, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: s1, SessionOwner: bob, SessionProject: proj})
	wantKind(t, err, failure.SessionAuthorityDenied)
	_, _, err = svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: s1, SessionOwner: alice, SessionProject: "agent:local:other"})
	wantKind(t, err, failure.SessionProjectMismatch)
	_, _, err = svc.Associate(ctx, goal.AssociateParams{Owner: bob, ID: g.ID, SessionID: s1, SessionOwner: bob, SessionProject: proj})
	wantKind(t, err, failure.UnknownGoalID)
	if as, _ := svc.Sessions(ctx, alice, g.ID); len(as) != 0 {
		t.Fatalf("a refused association was recorded: %v", as)
	}

	a, changed, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: s1, SessionOwner: alice, SessionProject: proj})
	if err != nil || !changed || a.SessionID != s1 {
		t.Fatalf("associate: %+v %v %v", a, changed, err)
	}
	again, changed, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: s1, SessionOwner: alice, SessionProject: proj})
	if err != nil || changed || again != a {
		t.Fatalf("re-associate: %+v %v %v", again, changed, err)
	}
	// A goal without a project correlates sessions of any project.
	if _, _, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: free.ID, SessionID: s1, SessionOwner: alice, SessionProject: proj}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: free.ID, SessionID: s2, SessionOwner: alice, SessionProject: "agent:local:other"}); err != nil {
		t.Fatal(err)
	}
	// The association changes nothing of the goal.
	if raw(t, st, g.ID) != before {
		t.Fatal("associating changed the goal row")
	}
	refs, total, err := svc.OfSession(ctx, s1, 1)
	if err != nil || total != 2 || len(refs) != 1 || refs[0] != (goal.Ref{ID: g.ID, Title: "bound"}) {
		t.Fatalf("goals of s1: %v %d %v", refs, total, err)
	}
	// The per-goal bound.
	for i := 2; i < goal.MaxSessionsPerGoal+1; i++ {
		sid := "wc_sess_" + strings.Repeat("0", 30) + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16])
		if _, _, err := svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: sid, SessionOwner: alice, SessionProject: proj}); err != nil {
			t.Fatalf("association %d: %v", i, err)
		}
	}
	_, _, err = svc.Associate(ctx, goal.AssociateParams{Owner: alice, ID: g.ID, SessionID: "wc_sess_ffffffffffffffffffffffffffffffff", SessionOwner: alice, SessionProject: proj})
	wantKind(t, err, failure.GoalLimitReached)
	if as, _ := svc.Sessions(ctx, alice, g.ID); len(as) != goal.MaxSessionsPerGoal {
		t.Fatalf("%d associations, want %d", len(as), goal.MaxSessionsPerGoal)
	}
}

// ownerBound: the store refuses a goal beyond max for its owner, and
// other owners are not counted.
func ownerBound(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	_, st := open(t)
	mk := func(owner string) goal.Goal {
		return goal.Goal{ID: goal.NewID(), Owner: owner, Title: "t", Status: goal.Active, Generation: 1, Revision: "1-0000000000000000", Steps: []goal.Step{}}
	}
	for range 2 {
		if err := st.Create(ctx, mk(alice), 2); err != nil {
			t.Fatal(err)
		}
	}
	g := mk(alice)
	wantKind(t, st.Create(ctx, g, 2), failure.GoalLimitReached)
	if _, err := st.Get(ctx, g.ID); !failure.Is(err, failure.UnknownGoalID) {
		t.Fatalf("a refused goal was stored: %v", err)
	}
	if err := st.Create(ctx, mk(bob), 2); err != nil {
		t.Fatalf("another owner's goal: %v", err)
	}
}

// concurrentUpdatesOneWins: writers racing on one expected revision:
// exactly one wins, every other gets revision_conflict naming the winner's
// revision.
func concurrentUpdatesOneWins(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	svc, _ := open(t)
	g, err := svc.Create(ctx, goal.CreateParams{Owner: alice, Title: "race"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	type res struct {
		g   goal.Goal
		err error
	}
	out := make(chan res, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			title := strings.Repeat("w", i+1)
			up, _, err := svc.Update(ctx, goal.UpdateParams{Owner: alice, ID: g.ID, ExpectedRevision: g.Revision, Title: &title})
			out <- res{up, err}
		}()
	}
	close(start)
	var wins []goal.Goal
	var conflicts []error
	for range n {
		r := <-out
		if r.err == nil {
			wins = append(wins, r.g)
		} else {
			wantKind(t, r.err, failure.RevisionConflict)
			conflicts = append(conflicts, r.err)
		}
	}
	if len(wins) != 1 || len(conflicts) != n-1 {
		t.Fatalf("%d wins, %d conflicts", len(wins), len(conflicts))
	}
	for _, err := range conflicts {
		if failure.DetailOf(err)["current_revision"] != wins[0].Revision {
			t.Fatalf("conflict names %v, the winner is %s", failure.DetailOf(err)["current_revision"], wins[0].Revision)
		}
	}
	cur, _ := svc.Get(ctx, alice, g.ID)
	if cur.Revision != wins[0].Revision || cur.Title != wins[0].Title {
		t.Fatalf("stored %+v, winner %+v", cur, wins[0])
	}
}

// concurrentCreatesKeepTheBound: creates racing for an owner's last slots
// never pass the bound together (on PostgreSQL they may come from several
// replicas).
func concurrentCreatesKeepTheBound(t *testing.T, open func(t *testing.T) (*goal.Service, Store)) {
	ctx := context.Background()
	_, st := open(t)
	const n, max = 8, 3
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- st.Create(ctx, goal.Goal{ID: goal.NewID(), Owner: alice, Title: "t", Status: goal.Active, Generation: 1,
				Revision: "1-0000000000000000", Steps: []goal.Step{}}, max)
		}()
	}
	ok := 0
	for range n {
		if err := <-errs; err == nil {
			ok++
		} else {
			wantKind(t, err, failure.GoalLimitReached)
		}
	}
	if _, total, err := st.List(ctx, goal.ListFilter{Owner: alice, Limit: goal.ListMax}); ok != max || total != max || err != nil {
		t.Fatalf("%d creates succeeded, %d stored (%v); want %d", ok, total, err, max)
	}
}
