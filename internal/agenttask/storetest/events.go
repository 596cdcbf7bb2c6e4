package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/cursortoken"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

func feed(t *testing.T, st Store, owner, project string, after int64, limit int) agenttask.FeedPage {
	t.Helper()
	p, err := st.Feed(context.Background(), owner, project, after, limit)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(cs []agenttask.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func events(t *testing.T, svc *agenttask.Service, p agenttask.EventsParams) agenttask.Events {
	t.Helper()
	e, err := svc.Events(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// feedStampsChanges: every change of a task row bumps its project's feed
// and stamps the task; a heartbeat (an attempt-only change) does not; the
// feed lists each changed task once, in the order of its latest change,
// with its live attempt; other owners and projects have their own feeds.
func feedStampsChanges(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	a := create(t, svc, alice, "a")
	b := create(t, svc, alice, "b")
	create(t, svc, bob, "bob's")
	if _, _, err := svc.Create(ctx, agenttask.CreateParams{Owner: alice, Project: other, Title: "elsewhere"}, t0); err != nil {
		t.Fatal(err)
	}
	if a.FeedRevision != 1 || b.FeedRevision != 2 {
		t.Fatalf("feed revisions %d %d, want 1 2", a.FeedRevision, b.FeedRevision)
	}
	att := start(t, svc, a.ID, sess1, at(time.Second))
	p := feed(t, st, alice, proj, 0, 10)
	if p.Revision != 3 || p.LowWatermark != 0 || fmt.Sprint(ids(p.Changes)) != fmt.Sprint([]string{b.ID, a.ID}) {
		t.Fatalf("feed %+v, want revision 3 with b then a", p)
	}
	if l := p.Changes[1].LiveAttempt; l == nil || l.ID != att.ID || l.SessionID != sess1 || l.Fence != 1 || !l.LeaseUntil.Equal(att.LeaseUntil) {
		t.Fatalf("a's live attempt %+v, want %+v", l, att)
	}
	if p.Changes[0].LiveAttempt != nil || p.Changes[1].FeedRevision != 3 || p.Changes[1].State != agenttask.Claimed {
		t.Fatalf("changes %+v", p.Changes)
	}
	if _, err := svc.Heartbeat(ctx, params(att, sess1), 0, at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if p := feed(t, st, alice, proj, 0, 10); p.Revision != 3 {
		t.Fatalf("a heartbeat moved the feed to %d", p.Revision)
	}
	if _, _, _, err := svc.Complete(ctx, completion(att, agenttask.OutcomeDone, "ok", "k1"), at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if p := feed(t, st, alice, proj, 3, 10); p.Revision != 4 || len(p.Changes) != 1 || p.Changes[0].ID != a.ID ||
		p.Changes[0].LiveAttempt != nil || p.Changes[0].State != agenttask.Done {
		t.Fatalf("after completion %+v", p)
	}
	if p := feed(t, st, bob, proj, 0, 10); p.Revision != 1 || len(p.Changes) != 1 {
		t.Fatalf("bob's feed %+v", p)
	}
	if p := feed(t, st, alice, "agent:local:none", 0, 10); p.Revision != 0 || len(p.Changes) != 0 {
		t.Fatalf("an unchanged project's feed %+v", p)
	}
}

// eventsDeltaAndPaging: a baseline carries no tasks; a delta names each
// changed task once; a limit pages through has_more with the token
// advancing only through the last task returned.
func eventsDeltaAndPaging(t *testing.T, open Open) {
	ctx := context.Background()
	svc, _ := service(t, open)
	create(t, svc, alice, "before the baseline")
	base := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj})
	if !base.Baseline || base.Changed || len(base.Tasks) != 0 || base.WaitOutcome != agenttask.WaitNone {
		t.Fatalf("baseline %+v", base)
	}
	x, y, z := create(t, svc, alice, "x"), create(t, svc, alice, "y"), create(t, svc, alice, "z")
	title := "x again"
	if _, err := svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: x.ID, ExpectedRevision: x.Revision, Title: &title}, t0); err != nil {
		t.Fatal(err)
	}
	first := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token, Limit: 2})
	if fmt.Sprint(ids(first.Tasks)) != fmt.Sprint([]string{y.ID, z.ID}) || !first.HasMore || !first.Changed {
		t.Fatalf("first page %+v", first)
	}
	second := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: first.Token, Limit: 2})
	if fmt.Sprint(ids(second.Tasks)) != fmt.Sprint([]string{x.ID}) || second.HasMore || second.Tasks[0].Title != title {
		t.Fatalf("second page %+v", second)
	}
	quiet := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: second.Token})
	if quiet.Changed || len(quiet.Tasks) != 0 || quiet.Token != second.Token {
		t.Fatalf("nothing changed, got %+v", quiet)
	}
	for _, p := range []agenttask.EventsParams{
		{Owner: alice, Project: proj, Limit: agenttask.EventsMax + 1},
		{Owner: alice, Project: proj, Limit: -1},
		{Owner: alice, Project: proj, Wait: time.Second},
		{Owner: alice, Project: proj, Token: second.Token, Wait: agenttask.MinEventsWait - 1},
		{Owner: alice, Project: proj, Token: second.Token, Wait: agenttask.MaxEventsWait + 1},
		{Owner: alice, Token: second.Token},
	} {
		if _, err := svc.Events(ctx, p); !failure.Is(err, failure.InvalidArguments) {
			t.Fatalf("%+v: %v, want invalid_arguments", p, err)
		}
	}
	page := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token, Limit: agenttask.EventsMax})
	if len(page.Tasks) != 3 || page.HasMore {
		t.Fatalf("EventsMax page %+v", page)
	}
	// Without a limit, EventsDefault tasks.
	for i := 0; i < agenttask.EventsDefault; i++ {
		create(t, svc, alice, fmt.Sprintf("task %d", i))
	}
	page = events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token})
	if len(page.Tasks) != agenttask.EventsDefault || !page.HasMore {
		t.Fatalf("a default page of %d tasks, has_more %v", len(page.Tasks), page.HasMore)
	}
}

// eventsHistoryLost: a cursor below the feed's low watermark reports
// history_lost (changed) with what is left.
func eventsHistoryLost(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	base := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj})
	create(t, svc, alice, "one")
	two := create(t, svc, alice, "two")
	if err := st.SetLowWatermark(ctx, alice, proj, 1); err != nil {
		t.Fatal(err)
	}
	e := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token})
	if !e.HistoryLost || !e.Changed || len(e.Tasks) != 2 {
		t.Fatalf("below the watermark %+v", e)
	}
	e = events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj, Token: e.Token})
	if e.HistoryLost || e.Changed {
		t.Fatalf("at the head %+v", e)
	}
	if p := feed(t, st, alice, proj, 1, 10); fmt.Sprint(ids(p.Changes)) != fmt.Sprint([]string{two.ID}) || p.LowWatermark != 1 {
		t.Fatalf("feed %+v", p)
	}
}

// eventsRefuseForeignTokens: a token of another project, another owner,
// edited, forged, malformed or naming a revision the feed has not reached
// is invalid_observation_token and changes nothing.
func eventsRefuseForeignTokens(t *testing.T, open Open) {
	ctx := context.Background()
	svc, st := service(t, open)
	tk := create(t, svc, alice, "watched")
	mine := events(t, svc, agenttask.EventsParams{Owner: alice, Project: proj}).Token
	elsewhere := events(t, svc, agenttask.EventsParams{Owner: alice, Project: other}).Token
	bobs := events(t, svc, agenttask.EventsParams{Owner: bob, Project: proj}).Token
	// A token of another database's key is what a forger without this
	// store's key can make.
	foreign, _ := open(t)
	forged := events(t, agenttask.NewService(foreign), agenttask.EventsParams{Owner: alice, Project: proj}).Token
	edited := []byte(mine)
	edited[len(edited)-1] ^= 1
	before, rev := raw(t, st, tk.ID), feed(t, st, alice, proj, 0, 0).Revision
	for name, tok := range map[string]string{
		"another project": elsewhere, "another owner": bobs, "edited": string(edited), "another key": forged,
		"board token": workflow.ObservationTokenPrefix + mine[len(agenttask.EventsTokenPrefix):],
		"malformed":   agenttask.EventsTokenPrefix + "!!", "oversized": mine + string(make([]byte, agenttask.MaxEventsTokenChars)),
	} {
		_, err := svc.Events(ctx, agenttask.EventsParams{Owner: alice, Project: proj, Token: tok})
		if !failure.Is(err, failure.InvalidObservationToken) {
			t.Fatalf("%s: %v, want invalid_observation_token", name, err)
		}
	}
	// With the store's own key (what only a leak would give), a token
	// for a revision the feed has not reached is still refused, and the
	// same construction at the feed's revision is accepted.
	keys := cursortoken.New(cursortoken.Format{Prefix: agenttask.EventsTokenPrefix, Label: "webcodex agent events token v1 ",
		Fields: 1, MaxChars: agenttask.MaxEventsTokenChars}, st.EventKey())
	sc, _ := json.Marshal([]string{"agent events", alice, proj})
	if _, err := svc.Events(ctx, agenttask.EventsParams{Owner: alice, Project: proj, Token: keys.Make(string(sc), uint64(rev+1))}); !failure.Is(err, failure.InvalidObservationToken) {
		t.Fatalf("a revision the feed has not reached: %v", err)
	}
	if tok := keys.Make(string(sc), uint64(rev)); tok != mine {
		t.Fatalf("the events token format changed: %s, want %s", tok, mine)
	}
	if after, r := raw(t, st, tk.ID), feed(t, st, alice, proj, 0, 0).Revision; after != before || r != rev {
		t.Fatalf("a refused token changed the store: %s %d", after, r)
	}
}

// eventsTokenOnAnotherHandle: a token one handle issued is valid on a
// second handle of the same database (another process or replica): the
// key lives in the database.
func eventsTokenOnAnotherHandle(t *testing.T, open Open) {
	a, b := open(t)
	svcA, svcB := agenttask.NewService(a), agenttask.NewService(b)
	base := events(t, svcA, agenttask.EventsParams{Owner: alice, Project: proj})
	tk := create(t, svcB, alice, "made on b")
	e := events(t, svcB, agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token})
	if len(e.Tasks) != 1 || e.Tasks[0].ID != tk.ID {
		t.Fatalf("b read %+v", e)
	}
}

// eventsWaitWokenAndTimeout: a wait is woken by a change made through
// another Service sharing the notifier once it waits, and returns the
// change; a wait on which nothing changes times out unchanged.
func eventsWaitWokenAndTimeout(t *testing.T, open Open) {
	a, b := open(t)
	n := workflow.NewLocalNotifier()
	waiter, writer := agenttask.NewService(a).WithNotifier(n), agenttask.NewService(b).WithNotifier(n)
	base := events(t, waiter, agenttask.EventsParams{Owner: alice, Project: proj})
	waiting := make(chan struct{})
	got := make(chan agenttask.Events, 1)
	fail := make(chan error, 1)
	go func() {
		e, err := waiter.Events(context.Background(), agenttask.EventsParams{Owner: alice, Project: proj, Token: base.Token,
			Wait: agenttask.MaxEventsWait, BeforeWait: func() error { close(waiting); return nil }})
		if err != nil {
			fail <- err
			return
		}
		got <- e
	}()
	<-waiting
	tk := create(t, writer, alice, "wake up")
	select {
	case err := <-fail:
		t.Fatal(err)
	case e := <-got:
		if e.WaitOutcome != agenttask.WaitUpdated || len(e.Tasks) != 1 || e.Tasks[0].ID != tk.ID {
			t.Fatalf("woken with %+v", e)
		}
		out := events(t, waiter, agenttask.EventsParams{Owner: alice, Project: proj, Token: e.Token, Wait: agenttask.MinEventsWait})
		if out.WaitOutcome != agenttask.WaitTimeout || out.Changed || out.Token != e.Token {
			t.Fatalf("timeout %+v", out)
		}
	}
}

// changesNotify: the service notifies its project's key after every
// committed change (create, update, start, complete, cancel, expiry) and
// not after a heartbeat, a replayed create or completion, or a refusal.
// The local notifier wakes synchronously, so each check is immediate.
func changesNotify(t *testing.T, open Open) {
	ctx := context.Background()
	st, _ := open(t)
	n := workflow.NewLocalNotifier()
	svc := agenttask.NewService(st).WithNotifier(n)
	key := agenttask.FeedKey(alice, proj)
	expect := func(what string, want bool, fn func() error) {
		t.Helper()
		ch, stop := n.Subscribe(key)
		defer stop()
		if err := fn(); err != nil && want {
			t.Fatalf("%s: %v", what, err)
		}
		select {
		case <-ch:
			if !want {
				t.Fatalf("%s woke the waiters", what)
			}
		default:
			if want {
				t.Fatalf("%s did not wake the waiters", what)
			}
		}
	}
	var tk agenttask.Task
	create := agenttask.CreateParams{Owner: alice, Project: proj, Title: "notified", IdempotencyKey: "n1"}
	expect("create", true, func() (err error) { tk, _, err = svc.Create(ctx, create, t0); return err })
	expect("a replayed create", false, func() error { _, _, err := svc.Create(ctx, create, t0); return err })
	title := "renamed"
	expect("update", true, func() (err error) {
		tk, err = svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: tk.Revision, Title: &title}, t0)
		return err
	})
	expect("an update that changes nothing", false, func() error {
		_, err := svc.Update(ctx, agenttask.UpdateParams{Owner: alice, ID: tk.ID, ExpectedRevision: tk.Revision, Title: &title}, t0)
		return err
	})
	var a agenttask.Attempt
	expect("start", true, func() (err error) {
		a, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess1, Lease: agenttask.MinLease}, t0)
		return err
	})
	expect("a refused start", false, func() error {
		_, _, err := svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess2}, t0)
		return err
	})
	expect("heartbeat", false, func() error { _, err := svc.Heartbeat(ctx, params(a, sess1), agenttask.MinLease, t0); return err })
	expect("expiry", true, func() error {
		ex, err := svc.Expire(ctx, at(time.Hour))
		if err == nil && len(ex) != 1 {
			err = fmt.Errorf("expired %d attempts", len(ex))
		}
		return err
	})
	expect("a second start", true, func() (err error) {
		a, _, err = svc.StartAttempt(ctx, agenttask.StartParams{Owner: alice, TaskID: tk.ID, SessionID: sess2}, at(time.Hour))
		return err
	})
	done := completion(a, agenttask.OutcomeDone, "ok", "c1")
	expect("complete", true, func() error { _, _, _, err := svc.Complete(ctx, done, at(time.Hour)); return err })
	expect("a replayed completion", false, func() error { _, _, _, err := svc.Complete(ctx, done, at(time.Hour)); return err })
	other := create
	other.IdempotencyKey, other.Title = "", "to cancel"
	expect("another create", true, func() (err error) { tk, _, err = svc.Create(ctx, other, t0); return err })
	expect("cancel", true, func() error { _, err := svc.Cancel(ctx, alice, tk.ID, t0); return err })
	expect("a refused cancel", false, func() error { _, err := svc.Cancel(ctx, alice, tk.ID, t0); return err })
}
