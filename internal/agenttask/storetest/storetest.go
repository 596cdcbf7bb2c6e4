// Package storetest is the contract suite that every [agenttask.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store and a second handle on the same database (another pool, as
// another replica or process would hold).
package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/failure"
)

// Store is an agenttask.Store that can show a task's stored rows as text,
// so that tests prove a refusal changed nothing.
type Store interface {
	agenttask.Store
	Raw(ctx context.Context, id string) (string, error)
	// SetLowWatermark sets the low watermark of owner's project feed.
	SetLowWatermark(ctx context.Context, owner, project string, low int64) error
}

// Open returns a fresh, empty store and a second handle on the same
// database (cleaned up by the constructor).
type Open func(t *testing.T) (Store, Store)

const (
	alice = "fp-alice"
	bob   = "fp-bob"
	proj  = "agent:local:p"
	other = "agent:local:q"
	sess1 = "wc_sess_1"
	sess2 = "wc_sess_2"
)

// t0 is the suite's clock origin: every call takes its time from the
// test, so lease expiry is tested by moving the clock, never by waiting.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// Run runs the agenttask.Store contract against stores returned by open.
func Run(t *testing.T, open Open) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Open)
	}{
		{"CreateGetListUpdate", createGetListUpdate}, {"Bounds", bounds}, {"IdempotentCreate", idempotentCreate},
		{"Dependencies", dependencies}, {"OwnerBound", ownerBound}, {"StartClaimedTask", startClaimedTask},
		{"Heartbeat", heartbeat}, {"LeaseExpiryReopens", leaseExpiryReopens}, {"Complete", complete},
		{"CompleteAfterExpiry", completeAfterExpiry}, {"Cancel", cancel}, {"StartNext", startNext},
		{"Expire", expire}, {"BatchBounds", batchBounds}, {"RacingStartsOneWins", racingStartsOneWins},
		{"FeedStampsChanges", feedStampsChanges}, {"EventsDeltaAndPaging", eventsDeltaAndPaging},
		{"EventsHistoryLost", eventsHistoryLost}, {"EventsRefuseForeignTokens", eventsRefuseForeignTokens},
		{"EventsTokenOnAnotherHandle", eventsTokenOnAnotherHandle}, {"EventsWaitWokenAndTimeout", eventsWaitWokenAndTimeout},
		{"ChangesNotify", changesNotify}, {"FinishedIsFinal", finishedIsFinal},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

func service(t *testing.T, open Open) (*agenttask.Service, Store) {
	st, _ := open(t)
	return agenttask.NewService(st), st
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

// wantRefused checks a refusal's kind and reason and that the task's rows
// are as they were.
func wantRefused(t *testing.T, st Store, id, before string, err error, k failure.Kind, reason string) {
	t.Helper()
	wantKind(t, err, k)
	if reason != "" && failure.DetailOf(err)["reason"] != reason {
		t.Fatalf("refusal %v: reason %v, want %s", err, failure.DetailOf(err)["reason"], reason)
	}
	if after := raw(t, st, id); after != before {
		t.Fatalf("a refusal (%v) changed the task:\nbefore %s\nafter  %s", err, before, after)
	}
}

func create(t *testing.T, svc *agenttask.Service, owner, title string, deps ...string) agenttask.Task {
	t.Helper()
	tk, _, err := svc.Create(context.Background(), agenttask.CreateParams{Owner: owner, Project: proj, Title: title, DependsOn: deps}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func start(t *testing.T, svc *agenttask.Service, id, session string, now time.Time) agenttask.Attempt {
	t.Helper()
	a, tk, err := svc.StartAttempt(context.Background(), agenttask.StartParams{Owner: alice, TaskID: id, SessionID: session}, now)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != agenttask.Claimed || a.State != agenttask.Live || a.Fence != tk.Fence {
		t.Fatalf("started %+v on %+v", a, tk)
	}
	return a
}

func createGetListUpdate(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk, replayed, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: proj, Title: "Build it",
		Body: "token=hunter2hunter2 in the body", Labels: []string{"backend", "p1"}, Priority: 5}, t0)
	if err != nil || replayed {
		t.Fatal(err, replayed)
	}
	if !strings.HasPrefix(tk.ID, agenttask.TaskIDPrefix) || len(tk.ID) != len(agenttask.TaskIDPrefix)+32 ||
		tk.State != agenttask.Open || tk.Generation != 1 || tk.Fence != 0 {
		t.Fatalf("created %+v", tk)
	}
	if strings.Contains(raw(t, st, tk.ID), "hunter2") {
		t.Fatalf("a planted secret reached the store: %s", raw(t, st, tk.ID))
	}
	got, err := svc.Get(ctx, alice, tk.ID)
	if err != nil || got.Revision != tk.Revision || got.Title != "Build it" || len(got.Labels) != 2 || !got.CreatedAt.Equal(t0) {
		t.Fatalf("got %+v, %v", got, err)
	}
	low := create(t, svc, alice, "later")
	if _, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: other, Title: "elsewhere"}, t0); err != nil {
		t.Fatal(err)
	}
	page, total, err := svc.List(ctx, agenttask.ListFilter{Owner: alice, Project: proj})
	if err != nil || total != 2 || len(page) != 2 || page[0].ID != tk.ID || page[1].ID != low.ID {
		t.Fatalf("list %d %v %v", total, page, err)
	}
	if page, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice, Label: "backend"}); total != 1 || page[0].ID != tk.ID {
		t.Fatalf("label filter: %d %v", total, page)
	}
	if page, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice, Limit: 1, Offset: 1}); total != 3 || len(page) != 1 {
		t.Fatalf("page 2 of 3 by 1: %d %v", total, page)
	}
	if _, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: bob}); total != 0 {
		t.Fatalf("bob sees %d of alice's tasks", total)
	}
	title, labels, prio := "Build it well", []string{"backend"}, 7
	up, err := svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: tk.Revision, Title: &title,
		Labels: &labels, Priority: &prio}, at(time.Second))
	if err != nil || up.Title != title || up.Priority != 7 || up.Generation != 2 || up.Revision == tk.Revision {
		t.Fatalf("update %+v %v", up, err)
	}
	if _, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice, Label: "p1"}); total != 0 {
		t.Fatalf("a removed label still filters: %d", total)
	}
	before := raw(t, st, tk.ID)
	_, err = svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: tk.Revision, Title: &title}, at(2*time.Second))
	wantRefused(t, st, tk.ID, before, err, failure.RevisionConflict, "")
	if failure.DetailOf(err)["current_revision"] != up.Revision {
		t.Fatalf("conflict detail %v", failure.DetailOf(err))
	}
	_, err = svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: "garbage", Title: &title}, t0)
	wantRefused(t, st, tk.ID, before, err, failure.InvalidRevision, "")
}

func bounds(t *testing.T, open Open) {
	ctx := context.Background()
	svc, _ := service(t, open)
	long := func(n int) string { return strings.Repeat("x", n) }
	labels := func(n int) []string {
		out := []string{}
		for i := range n {
			out = append(out, "l"+strings.Repeat("x", i))
		}
		return out
	}
	deps := make([]string, agenttask.MaxDependsOn+1)
	for i := range deps {
		deps[i] = agenttask.NewTaskID()
	}
	for name, p := range map[string]agenttask.CreateParams{
		"empty title":     {Title: " "},
		"long title":      {Title: long(agenttask.TitleMaxChars + 1)},
		"long body":       {Title: "t", Body: long(agenttask.BodyMaxChars + 1)},
		"too many labels": {Title: "t", Labels: labels(agenttask.MaxLabels + 1)},
		"long label":      {Title: "t", Labels: []string{long(agenttask.LabelMaxChars + 1)}},
		"repeated label":  {Title: "t", Labels: []string{"a", "a"}},
		"priority high":   {Title: "t", Priority: agenttask.MaxPriority + 1},
		"priority low":    {Title: "t", Priority: agenttask.MinPriority - 1},
		"too many deps":   {Title: "t", DependsOn: deps},
		"malformed dep":   {Title: "t", DependsOn: []string{"wc_task_nothex"}},
		"long key":        {Title: "t", IdempotencyKey: long(agenttask.IdempotencyKeyMaxChars + 1)},
	} {
		p.Owner, p.Project = alice, proj
		if _, _, err := svc.Create(ctx, p, t0); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The bounds themselves are accepted.
	if _, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: proj, Title: long(agenttask.TitleMaxChars),
		Body: long(agenttask.BodyMaxChars), Labels: labels(agenttask.MaxLabels), Priority: agenttask.MaxPriority}, t0); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice}); total != 1 {
		t.Fatalf("refused creates stored tasks: %d", total)
	}
	if _, _, err := svc.List(ctx, agenttask.ListFilter{Owner: alice, Limit: agenttask.ListMax + 1}); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("a page over ListMax: %v", err)
	}
	tk := create(t, svc, alice, "lease bounds")
	for _, d := range []time.Duration{agenttask.MinLease - time.Millisecond, agenttask.MaxLease + time.Millisecond} {
		if _, _, err := svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess1, Lease: d}, t0); !failure.Is(err, failure.InvalidArguments) {
			t.Fatalf("lease %s: %v", d, err)
		}
	}
	a := start(t, svc, tk.ID, sess1, t0)
	if !a.LeaseUntil.Equal(t0.Add(agenttask.DefaultLease)) || agenttask.DefaultLease != 5*time.Minute {
		t.Fatalf("default lease: %s", a.LeaseUntil)
	}
}

func idempotentCreate(t *testing.T, open Open) {
	ctx := context.Background()
	svc, _ := service(t, open)
	p := agenttask.CreateParams{Owner: alice, Project: proj, Title: "once", IdempotencyKey: "k1"}
	first, replayed, err := svc.Create(ctx, p, t0)
	if err != nil || replayed {
		t.Fatal(err)
	}
	again, replayed, err := svc.Create(ctx, p, at(time.Minute))
	if err != nil || !replayed || again.ID != first.ID || again.Revision != first.Revision {
		t.Fatalf("replay %+v %v %v", again, replayed, err)
	}
	p.Title = "twice"
	_, _, err = svc.Create(ctx, p, t0)
	wantKind(t, err, failure.IdempotencyConflict)
	// The key is scoped by owner and project.
	for _, q := range []agenttask.CreateParams{{Owner: bob, Project: proj}, {Owner: alice, Project: other}} {
		q.Title, q.IdempotencyKey = "once", "k1"
		if tk, replayed, err := svc.Create(ctx, q, t0); err != nil || replayed || tk.ID == first.ID {
			t.Fatalf("another scope: %+v %v %v", tk, replayed, err)
		}
	}
	if _, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice, Project: proj}); total != 1 {
		t.Fatalf("%d tasks stored under one key", total)
	}
}

func dependencies(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	dep := create(t, svc, alice, "first")
	bobs := create(t, svc, bob, "bob's")
	elsewhere, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: other, Title: "other project"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{agenttask.NewTaskID(), bobs.ID, elsewhere.ID} {
		_, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: proj, Title: "t", DependsOn: []string{dep.ID, d}}, t0)
		wantKind(t, err, failure.NotFound)
		if !strings.Contains(err.Error(), d) || strings.Contains(err.Error(), dep.ID) {
			t.Fatalf("the refusal names the wrong dependency: %v", err)
		}
	}
	_, _, err = svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: proj, Title: "t", DependsOn: []string{dep.ID, dep.ID}}, t0)
	wantKind(t, err, failure.InvalidArguments)
	// A self-reference: the store refuses a task naming its own id, which
	// does not exist before it is stored (so no cycle can ever form).
	self := agenttask.Task{ID: agenttask.NewTaskID(), Owner: alice, Project: proj, Title: "self", Labels: []string{},
		State: agenttask.Open, Generation: 1, Revision: "1-0000000000000000", CreatedAt: t0, UpdatedAt: t0}
	self.DependsOn = []string{self.ID}
	_, _, err = st.Create(ctx, self)
	wantKind(t, err, failure.NotFound)
	if _, total, _ := svc.List(ctx, agenttask.ListFilter{Owner: alice, Project: proj}); total != 1 {
		t.Fatalf("refused creates stored tasks: %d", total)
	}
	next := create(t, svc, alice, "second", dep.ID)
	if len(next.DependsOn) != 1 || next.DependsOn[0] != dep.ID {
		t.Fatalf("depends_on %v", next.DependsOn)
	}
	before := raw(t, st, next.ID)
	_, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: next.ID, SessionID: sess1}, t0)
	wantRefused(t, st, next.ID, before, err, failure.Conflict, "")
	if u, _ := failure.DetailOf(err)["unfinished_dependencies"].([]string); len(u) != 1 || u[0] != dep.ID {
		t.Fatalf("not-ready detail %v", failure.DetailOf(err))
	}
	a := start(t, svc, dep.ID, sess1, t0)
	if _, _, _, err := svc.Complete(ctx, agenttask.CompleteParams{AttemptParams: agenttask.AttemptParams{Owner: alice,
		AttemptID: a.ID, SessionID: sess1, Fence: a.Fence}, Outcome: agenttask.OutcomeDone, CompletionKey: "c"}, t0); err != nil {
		t.Fatal(err)
	}
	start(t, svc, next.ID, sess1, t0)
}

func ownerBound(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "alice's")
	a := start(t, svc, tk.ID, sess1, t0)
	before := raw(t, st, tk.ID)
	unknown := agenttask.NewTaskID()
	sameMessage := func(err error, id string, unknownErr error) {
		t.Helper()
		wantRefused(t, st, tk.ID, before, err, failure.NotFound, "")
		if strings.ReplaceAll(err.Error(), id, "ID") != strings.ReplaceAll(unknownErr.Error(), unknown, "ID") {
			t.Fatalf("another owner's %s is distinguishable: %v vs %v", id, err, unknownErr)
		}
	}
	_, errUnknown := svc.Get(ctx, alice, unknown)
	_, err := svc.Get(ctx, bob, tk.ID)
	sameMessage(err, tk.ID, errUnknown)
	_, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: bob, TaskID: tk.ID, SessionID: sess2}, t0)
	sameMessage(err, tk.ID, errUnknown)
	_, err = svc.Cancel(ctx, bob, tk.ID, t0)
	sameMessage(err, tk.ID, errUnknown)
	_, err = svc.Update(ctx, agenttask.UpdateParams{Owner: bob, ID: tk.ID, ExpectedRevision: tk.Revision}, t0)
	sameMessage(err, tk.ID, errUnknown)
	unknownAttempt := agenttask.NewAttemptID()
	_, errUnknownAttempt := svc.Heartbeat(ctx, agenttask.AttemptParams{Owner: alice, AttemptID: unknownAttempt, SessionID: sess1, Fence: 1}, 0, t0)
	wantKind(t, errUnknownAttempt, failure.NotFound)
	_, err = svc.Heartbeat(ctx, agenttask.AttemptParams{Owner: bob, AttemptID: a.ID, SessionID: sess1, Fence: a.Fence}, 0, t0)
	wantRefused(t, st, tk.ID, before, err, failure.NotFound, "")
	if strings.ReplaceAll(err.Error(), a.ID, "ID") != strings.ReplaceAll(errUnknownAttempt.Error(), unknownAttempt, "ID") {
		t.Fatalf("another owner's attempt is distinguishable: %v vs %v", err, errUnknownAttempt)
	}
}

func startClaimedTask(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "claimed")
	a := start(t, svc, tk.ID, sess1, t0)
	before := raw(t, st, tk.ID)
	for _, s := range []string{sess1, sess2} {
		_, _, err := svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: s}, at(time.Minute))
		wantRefused(t, st, tk.ID, before, err, failure.Conflict, "")
		if failure.DetailOf(err)["attempt_id"] != a.ID {
			t.Fatalf("conflict detail %v", failure.DetailOf(err))
		}
	}
}

// finishedIsFinal: a done, failed or cancelled task refuses an update
// with conflict (detail state) and nothing changes.
func finishedIsFinal(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	title := "rewritten history"
	for _, outcome := range []agenttask.Outcome{agenttask.OutcomeDone, agenttask.OutcomeFailed, ""} {
		tk := create(t, svc, alice, "finished "+string(outcome))
		if outcome == "" {
			if _, err := svc.Cancel(ctx, alice, tk.ID, t0); err != nil {
				t.Fatal(err)
			}
		} else {
			a := start(t, svc, tk.ID, sess1, t0)
			if _, _, _, err := svc.Complete(ctx, agenttask.CompleteParams{AttemptParams: agenttask.AttemptParams{Owner: alice,
				AttemptID: a.ID, SessionID: sess1, Fence: a.Fence}, Outcome: outcome, CompletionKey: "c"}, t0); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := svc.Get(ctx, alice, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		before := raw(t, st, tk.ID)
		_, err = svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: cur.Revision, Title: &title}, t0)
		wantRefused(t, st, tk.ID, before, err, failure.Conflict, "")
		if failure.DetailOf(err)["state"] != string(cur.State) {
			t.Fatalf("update of a %s task: detail %v", cur.State, failure.DetailOf(err))
		}
	}
}
