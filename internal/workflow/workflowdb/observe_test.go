package workflowdb_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
)

// TestObserveFutureToken: a token from ahead of the board (the ledger
// restored from an older copy) fails closed.
func TestObserveFutureToken(t *testing.T) {
	e := newBoardEnv(t)
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "one"})
	e.reopen(t) // closing checkpoints the WAL into the file
	backup := e.path + ".bak"
	copyFile(t, e.path, backup)
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "two"})
	o, err := e.board.Observe(context.Background(), workflow.ObserveParams{SessionID: e.sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	tok := o.Token
	e.st.Close()
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(e.path + suffix)
	}
	copyFile(t, backup, e.path)
	e.open(t)
	_, err = e.board.Observe(context.Background(), workflow.ObserveParams{SessionID: e.sess.ID, Token: tok})
	wantKind(t, err, failure.InvalidObservationToken)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestViewBoardFullPool: as many read snapshots as the read pool has
// connections, open at once, each running queries no snapshot has run
// before, all finish. A snapshot never waits for a second connection of
// the pool: when it prepared its statements there, a burst of observers
// (TestObserveManyWaiters) each held a connection and waited for another.
func TestViewBoardFullPool(t *testing.T) {
	e := newBoardEnv(t)
	m := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "seen by all"})
	var inside sync.WaitGroup
	inside.Add(sqlitedb.ReadConns)
	errs := make(chan error, sqlitedb.ReadConns)
	for range sqlitedb.ReadConns {
		go func() {
			errs <- e.st.ViewBoard(context.Background(), e.sess.ID, func(r workflow.BoardReader) error {
				inside.Done()
				inside.Wait() // every connection of the pool is now held
				changed, err := r.Changed(0, 10)
				if err != nil {
					return err
				}
				listed, _, err := r.List(workflow.MessageFilter{Status: workflow.MessageOpen, Limit: 10})
				if err != nil {
					return err
				}
				if len(changed) != 1 || changed[0].ID != m.ID || len(listed) != 1 || listed[0].ID != m.ID {
					return fmt.Errorf("changed %v, listed %v, want [%s]", boardtest.IDs(changed), boardtest.IDs(listed), m.ID)
				}
				return nil
			})
		}()
	}
	for range sqlitedb.ReadConns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// gateNotifier is a LocalNotifier whose next Notify and Subscribe calls a
// test can hold (a nil hook lets a call through).
type gateNotifier struct {
	*workflow.LocalNotifier
	mu          sync.Mutex
	onNotify    func()
	onSubscribe func()
}

func (g *gateNotifier) hooks(notify, subscribe func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onNotify, g.onSubscribe = notify, subscribe
}

func (g *gateNotifier) Notify(id string) {
	g.mu.Lock()
	hook := g.onNotify
	g.mu.Unlock()
	if hook != nil {
		hook()
	}
	g.LocalNotifier.Notify(id)
}

func (g *gateNotifier) Subscribe(id string) (<-chan struct{}, func()) {
	g.mu.Lock()
	hook := g.onSubscribe
	g.mu.Unlock()
	if hook != nil {
		hook()
	}
	return g.LocalNotifier.Subscribe(id)
}

// TestObserverWokenLateSeesTheNextPost: two observers whose cursor
// already holds a post are woken by that post's signal. The first reads
// (nothing new) and waits again; a second post commits and wakes it. The
// other observer, scheduled only now, must not take the first one's
// unchanged read: that read predates the second post, whose signal it
// subscribed too late to get. It returns the second post at once instead
// of when its wait runs out.
func TestObserverWokenLateSeesTheNextPost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "workflow.db")
	synctest.Test(t, func(t *testing.T) {
		st := open(t, path)
		defer st.Close()
		g := &gateNotifier{LocalNotifier: workflow.NewLocalNotifier()}
		board := workflow.NewBoard(st, nil).WithNotifier(g)
		sess := start(t, workflow.NewService(st, nil))
		ctx := context.Background()
		post := func(body string) (workflow.Message, error) {
			m, _, err := board.Post(ctx, workflow.PostParams{SessionID: sess.ID, Kind: workflow.MessageNote, Body: body})
			return m, err
		}
		// The first post commits; its signal is held.
		notifying, releaseNotify := make(chan struct{}), make(chan struct{})
		g.hooks(func() { close(notifying); <-releaseNotify }, nil)
		go func() {
			if _, err := post("first"); err != nil {
				t.Error(err)
			}
		}()
		<-notifying
		base, err := board.Observe(ctx, workflow.ObserveParams{SessionID: sess.ID})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			o   workflow.Observation
			err error
		}
		results := make(chan result, 2)
		for range 2 {
			go func() {
				o, err := board.Observe(ctx, workflow.ObserveParams{SessionID: sess.ID, Token: base.Token, Wait: workflow.MaxObserveWait})
				results <- result{o, err}
			}()
		}
		synctest.Wait() // both wait, their cursor holding the first post
		// Woken, the first to subscribe again goes on; the other is held
		// there, as if scheduled late.
		var subscribed int
		releaseLate := make(chan struct{})
		g.hooks(nil, func() {
			g.mu.Lock()
			subscribed++
			n := subscribed
			g.mu.Unlock()
			if n == 2 {
				<-releaseLate
			}
		})
		close(releaseNotify)
		synctest.Wait() // one has read nothing new and waits again
		second, err := post("second")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // that one returned the second post
		for range 2 {
			select {
			case r := <-results:
				if r.err != nil || r.o.WaitOutcome != workflow.WaitUpdated || fmt.Sprint(boardtest.IDs(r.o.Messages)) != fmt.Sprint([]string{second.ID}) {
					t.Fatalf("an observer returned %+v, %v; want the second post %s", r.o, r.err, second.ID)
				}
			default:
				t.Fatal("an observer woken by the first post's signal still waits: it missed the second post")
			}
			close(releaseLate)
			releaseLate = make(chan struct{})
			synctest.Wait() // the late one ran
		}
	})
}
