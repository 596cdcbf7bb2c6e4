// Package storetest is the contract suite every intent.Store passes: the
// SQLite store (intentdb) and the PostgreSQL store (intentpg) run the same
// tests.
package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/intent"
)

// Store is what the suite needs of a store: the contract and a raw view
// of an owner's rows on a project, to prove a refusal changed nothing.
type Store interface {
	intent.Store
	Raw(ctx context.Context, owner, project string) (string, error)
}

// Open returns two handles on one new, empty store (as two processes or
// replicas would hold it).
type Open func(t *testing.T) (Store, Store)

const (
	owner   = "fp-owner"
	project = "agent:local:p"
	sessA   = "wc_sess_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	sessB   = "wc_sess_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	sessC   = "wc_sess_cccccccccccccccccccccccccccccccc"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Run runs every contract test.
func Run(t *testing.T, open Open) {
	t.Run("DeclareReplaceList", func(t *testing.T) { declareReplaceList(t, open) })
	t.Run("ExpireByTTL", func(t *testing.T) { expireByTTL(t, open) })
	t.Run("OverlapNotifiesBoth", func(t *testing.T) { overlapNotifiesBoth(t, open) })
	t.Run("OwnersAndClosedSessionsApart", func(t *testing.T) { ownersApart(t, open) })
	t.Run("BadInputsStoreNothing", func(t *testing.T) { badInputs(t, open) })
	t.Run("ListBounded", func(t *testing.T) { listBounded(t, open) })
	t.Run("RacingDeclaresSeeEachOther", func(t *testing.T) { racing(t, open) })
	t.Run("WriteNotice", func(t *testing.T) { writeNotice(t, open) })
	t.Run("DeliverRemembersSessionsWithoutNotices", func(t *testing.T) { deliverRemembers(t, open) })
}

// deliverRemembers: a Service whose Deliver found a session without
// notices reads nothing for it until a notice may exist: at once after
// its own Declare made one; after another process's (the second handle)
// only once that process's signal arrives (WatchChanges).
func deliverRemembers(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := open(t)
	counted := &countingStore{Store: a}
	here, there := intent.NewService(counted, nil), intent.NewService(b, nil)
	defer here.Close()
	signal := make(chan struct{})
	here.WatchChanges(func() (<-chan struct{}, func()) { return signal, func() {} })
	deliver := func(wantOverlaps, wantPending int) {
		t.Helper()
		n, err := here.Deliver(ctx, sessA)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if n != nil {
			got = len(n.Overlaps)
		}
		if got != wantOverlaps || counted.pending != wantPending {
			t.Fatalf("delivered %d overlaps after %d reads, want %d after %d", got, counted.pending, wantOverlaps, wantPending)
		}
	}
	declare(t, here, sessA, []string{"internal/a/**"}, t0)
	deliver(0, 1)
	deliver(0, 1) // remembered: no read

	// Its own Declare made a notice: read at once.
	declare(t, here, sessB, []string{"internal/a/x.go"}, t0.Add(time.Second))
	deliver(1, 2)
	deliver(0, 3)

	// Another process's notice: seen once its signal arrives.
	declare(t, there, sessC, []string{"internal/a/y.go"}, t0.Add(2*time.Second))
	deliver(0, 3)
	close(signal)
	signal = make(chan struct{})
	deliver(1, 4)
}

// countingStore counts Pending reads.
type countingStore struct {
	intent.Store
	pending int
}

func (c *countingStore) Pending(ctx context.Context, recipient string) (bool, error) {
	c.pending++
	return c.Store.Pending(ctx, recipient)
}

func declare(t *testing.T, svc *intent.Service, sess string, globs []string, now time.Time) (intent.Intent, []intent.Overlap) {
	t.Helper()
	in, ov, err := svc.Declare(context.Background(), intent.DeclareParams{Owner: owner, Project: project, SessionID: sess,
		Globs: globs, Note: "plan"}, now)
	if err != nil {
		t.Fatalf("declare %s %v: %v", sess, globs, err)
	}
	return in, ov
}

func declareReplaceList(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	in, ov := declare(t, svc, sessA, []string{"./internal/a/**", "internal/a/**", "cmd/x.go"}, t0)
	if strings.Join(in.Globs, ",") != "internal/a/**,cmd/x.go" || len(ov) != 0 || !in.ExpiresAt.Equal(t0.Add(intent.DefaultTTL)) {
		t.Fatalf("declared %+v overlaps %v", in, ov)
	}
	got, ok, err := svc.Get(ctx, sessA)
	if err != nil || !ok || strings.Join(got.Globs, ",") != "internal/a/**,cmd/x.go" || got.Note != "plan" || !got.DeclaredAt.Equal(t0) {
		t.Fatalf("get: %+v %v %v", got, ok, err)
	}
	// Declaring again replaces the session's intent.
	declare(t, svc, sessA, []string{"docs/**"}, t0.Add(time.Second))
	ls, err := svc.List(ctx, owner, project, t0.Add(2*time.Second))
	if err != nil || len(ls) != 1 || strings.Join(ls[0].Globs, ",") != "docs/**" || len(ls[0].Overlaps) != 0 {
		t.Fatalf("list after replace: %+v %v", ls, err)
	}
	if _, ok, _ := svc.Get(ctx, sessB); ok {
		t.Fatal("a session without an intent has one")
	}
}

func expireByTTL(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	if _, _, err := svc.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: sessA,
		Globs: []string{"a/**"}, TTL: intent.MinTTL}, t0); err != nil {
		t.Fatal(err)
	}
	if ls, _ := svc.List(ctx, owner, project, t0.Add(intent.MinTTL-time.Millisecond)); len(ls) != 1 {
		t.Fatalf("live intent not listed: %+v", ls)
	}
	// At exactly expires_at the intent is gone, and it overlaps nothing.
	if ls, _ := svc.List(ctx, owner, project, t0.Add(intent.MinTTL)); len(ls) != 0 {
		t.Fatalf("expired intent listed: %+v", ls)
	}
	if _, ov := declare(t, svc, sessB, []string{"a/x.go"}, t0.Add(intent.MinTTL)); len(ov) != 0 {
		t.Fatalf("an expired intent overlapped: %+v", ov)
	}
	if n, _ := svc.Deliver(ctx, sessA); n != nil {
		t.Fatalf("the expired session got a notice: %+v", n)
	}
}

func overlapNotifiesBoth(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	declare(t, svc, sessA, []string{"internal/a/**"}, t0)
	_, ov := declare(t, svc, sessB, []string{"internal/a/x.go", "docs/y.md"}, t0.Add(time.Second))
	if len(ov) != 1 || ov[0].SessionID != sessA || ov[0].Kind != intent.KindIntent ||
		strings.Join(ov[0].Globs, ",") != "internal/a/**" || strings.Join(ov[0].Paths, ",") != "internal/a/x.go" {
		t.Fatalf("B's overlaps: %+v", ov)
	}
	for _, c := range []struct{ to, other, globs string }{{sessA, sessB, "internal/a/x.go"}, {sessB, sessA, "internal/a/**"}} {
		n, err := svc.Deliver(ctx, c.to)
		if err != nil || n.Empty() || n.Overlaps[0].SessionID != c.other || strings.Join(n.Overlaps[0].Globs, ",") != c.globs {
			t.Fatalf("notice to %s: %+v %v", c.to, n, err)
		}
		if strings.Contains(strings.Join(n.Overlaps[0].Globs, ","), "plan") {
			t.Fatal("the notice carries the note")
		}
		// Delivered once.
		if again, err := svc.Deliver(ctx, c.to); again != nil || err != nil {
			t.Fatalf("second delivery to %s: %+v %v", c.to, again, err)
		}
	}
	ls, _ := svc.List(ctx, owner, project, t0.Add(2*time.Second))
	if len(ls) != 2 || len(ls[0].Overlaps) != 1 || ls[0].Overlaps[0] != sessB || ls[1].Overlaps[0] != sessA {
		t.Fatalf("list overlaps: %+v", ls)
	}
	// B re-declaring replaces its pending notice to A (one per pair).
	declare(t, svc, sessB, []string{"internal/a/y.go"}, t0.Add(3*time.Second))
	declare(t, svc, sessB, []string{"internal/a/z.go"}, t0.Add(4*time.Second))
	n, _ := svc.Deliver(ctx, sessA)
	if n.Empty() || len(n.Overlaps) != 1 || n.Overlaps[0].Globs[0] != "internal/a/z.go" {
		t.Fatalf("replaced notice: %+v", n)
	}
	// A re-declaration that no longer overlaps withdraws the pending
	// notices it had left, to both sides.
	declare(t, svc, sessB, []string{"internal/a/q.go"}, t0.Add(5*time.Second))
	declare(t, svc, sessB, []string{"docs/**"}, t0.Add(6*time.Second))
	for _, s := range []string{sessA, sessB} {
		if n, err := svc.Deliver(ctx, s); n != nil || err != nil {
			t.Fatalf("%s got a withdrawn notice: %+v %v", s, n, err)
		}
	}
}

func ownersApart(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	closed := map[string]bool{sessC: true}
	svc := intent.NewService(st, func(_ context.Context, id string) bool { return !closed[id] })
	declare(t, svc, sessC, []string{"x/**"}, t0)
	if _, _, err := svc.Declare(ctx, intent.DeclareParams{Owner: "fp-other", Project: project, SessionID: sessA, Globs: []string{"x/**"}}, t0); err != nil {
		t.Fatal(err)
	}
	_, ov := declare(t, svc, sessB, []string{"x/y"}, t0)
	if len(ov) != 0 {
		t.Fatalf("another owner's or a closed session's intent overlapped: %+v", ov)
	}
	if ls, _ := svc.List(ctx, owner, project, t0); len(ls) != 1 || ls[0].SessionID != sessB {
		t.Fatalf("list shows a closed session's or another owner's intent: %+v", ls)
	}
	if n, _ := svc.WriteNotice(ctx, owner, project, nil, []string{"x/y"}, t0); n == nil || len(n.Overlaps) != 1 || n.Overlaps[0].SessionID != sessB {
		t.Fatalf("write notice: %+v", n)
	}
}

func badInputs(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	declare(t, svc, sessA, []string{"a/**"}, t0)
	before, err := st.Raw(ctx, owner, project)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = "a/x.go"
	}
	for _, c := range []struct {
		name  string
		globs []string
		note  string
		ttl   time.Duration
		says  string
	}{
		{"10000 globs", many, "", 0, "1-64 globs"},
		{"no globs", nil, "", 0, "1-64 globs"},
		{"dot-dot", []string{"a/x.go", "a/../../etc/passwd"}, "", 0, `"a/../../etc/passwd" escapes`},
		{"parent", []string{".."}, "", 0, `".." escapes`},
		{"absolute", []string{"/etc/passwd"}, "", 0, `"/etc/passwd" is absolute`},
		{"drive", []string{`C:\x`}, "", 0, "is absolute"},
		{"bad pattern", []string{"a/[x"}, "", 0, `"a/[x" is not a valid pattern`},
		{"project itself", []string{"./"}, "", 0, "names the project itself"},
		{"too long", []string{strings.Repeat("a", intent.GlobMaxChars+1)}, "", 0, "must be 1-256 characters"},
		{"empty glob", []string{""}, "", 0, "must be 1-256 characters"},
		{"note too long", []string{"a/x.go"}, strings.Repeat("n", intent.NoteMaxChars+1), 0, "note must be at most"},
		{"ttl too short", []string{"a/x.go"}, "", intent.MinTTL - time.Second, "ttl_seconds must be"},
		{"ttl too long", []string{"a/x.go"}, "", intent.MaxTTL + time.Second, "ttl_seconds must be"},
	} {
		_, _, err := svc.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: sessB, Globs: c.globs,
			Note: c.note, TTL: c.ttl}, t0.Add(time.Second))
		if failure.KindOf(err) != failure.InvalidArguments || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s: %v, want invalid_arguments saying %q", c.name, err, c.says)
		}
		if after, _ := st.Raw(ctx, owner, project); after != before {
			t.Fatalf("%s changed the store:\n%s\nwant\n%s", c.name, after, before)
		}
	}
	// A note is redacted before it is stored.
	secret := "token ghp_" + strings.Repeat("A", 36)
	if _, _, err := svc.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: sessB, Globs: []string{"b"},
		Note: secret}, t0); err != nil {
		t.Fatal(err)
	}
	if raw, _ := st.Raw(ctx, owner, project); strings.Contains(raw, "ghp_") {
		t.Fatalf("the note was stored unredacted: %s", raw)
	}
}

func listBounded(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	for i := range intent.MaxProjectIntents {
		declare(t, svc, sessID(i), []string{"d" + string(rune('a'+i%26)) + "/**"}, t0)
	}
	before, _ := st.Raw(ctx, owner, project)
	_, _, err := svc.Declare(ctx, intent.DeclareParams{Owner: owner, Project: project, SessionID: sessC, Globs: []string{"z"}}, t0)
	if failure.KindOf(err) != failure.Conflict {
		t.Fatalf("declaration past MaxProjectIntents: %v, want conflict", err)
	}
	if after, _ := st.Raw(ctx, owner, project); after != before {
		t.Fatal("a refused declaration changed the store")
	}
	// A session already holding an intent may still replace it.
	declare(t, svc, sessID(0), []string{"q"}, t0)
	ls, err := svc.List(ctx, owner, project, t0)
	if err != nil || len(ls) != intent.MaxProjectIntents {
		t.Fatalf("list: %d %v, want %d", len(ls), err, intent.MaxProjectIntents)
	}
}

func sessID(i int) string {
	const hex = "0123456789abcdef"
	return "wc_sess_" + strings.Repeat("0", 30) + string(hex[i/16%16]) + string(hex[i%16])
}

// racing: two handles declare overlapping intents at once; whichever is
// judged second sees the first, so both sessions get a notice.
func racing(t *testing.T, open Open) {
	ctx := context.Background()
	a, b := open(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []struct {
		st   intent.Store
		sess string
	}{{a, sessA}, {b, sessB}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = intent.NewService(c.st, nil).Declare(ctx, intent.DeclareParams{Owner: owner, Project: project,
				SessionID: c.sess, Globs: []string{"shared/**"}}, t0)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	svc := intent.NewService(a, nil)
	for _, s := range []string{sessA, sessB} {
		if n, err := svc.Deliver(ctx, s); n.Empty() || err != nil {
			t.Fatalf("%s got no notice: %v", s, err)
		}
	}
}

func writeNotice(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	svc := intent.NewService(st, nil)
	declare(t, svc, sessA, []string{"internal/a/**"}, t0)
	declare(t, svc, sessB, []string{"internal/a/x.go"}, t0)
	n, err := svc.WriteNotice(ctx, owner, project, []string{sessC}, []string{"internal/a/x.go", "README.md"}, t0)
	if err != nil || n.Empty() || len(n.Overlaps) != 2 {
		t.Fatalf("write notice: %+v %v", n, err)
	}
	for i, want := range []string{sessA, sessB} {
		if o := n.Overlaps[i]; o.SessionID != want || o.Kind != intent.KindWrite || strings.Join(o.Paths, ",") != "internal/a/x.go" {
			t.Fatalf("overlap %d: %+v", i, o)
		}
	}
	// The writer's own intent is not named; an unrelated path names none.
	if n, _ := svc.WriteNotice(ctx, owner, project, []string{sessA}, []string{"internal/a/q.go"}, t0); n != nil {
		t.Fatalf("own intent named: %+v", n)
	}
	if n, _ := svc.WriteNotice(ctx, owner, project, nil, []string{"cmd/main.go"}, t0); n != nil {
		t.Fatalf("unrelated path named: %+v", n)
	}
}
