package boardtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

func observeDelta(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	early := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "before the baseline"})
	base := e.observe(t, workflow.ObserveParams{})
	if !base.Baseline || len(base.Messages) != 0 || base.Changed || !strings.HasPrefix(base.Token, workflow.ObservationTokenPrefix) ||
		len(base.Token) > workflow.MaxObservationTokenChars {
		t.Fatalf("baseline: %+v", base)
	}
	if o := e.observe(t, workflow.ObserveParams{Token: base.Token}); o.Changed || len(o.Messages) != 0 || o.Token != base.Token || o.WaitOutcome != workflow.WaitNone {
		t.Fatalf("nothing changed: %+v", o)
	}
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix"})
	o := e.observe(t, workflow.ObserveParams{Token: base.Token})
	if !o.Changed || fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{todo.ID}) || o.HasMore || o.HistoryLost {
		t.Fatalf("after a post: %+v", o)
	}
	tok := o.Token
	// A real resolve is a change; a repeated one is not.
	e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: early.ID})
	o = e.observe(t, workflow.ObserveParams{Token: tok})
	if fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{early.ID}) || o.Messages[0].Status != workflow.MessageResolved {
		t.Fatalf("after a resolve: %+v", o)
	}
	tok = o.Token
	rev := e.revision(t)
	e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: early.ID})
	if e.revision(t) != rev {
		t.Fatal("a resolve that changed nothing advanced the revision")
	}
	// A completion is observed as both the resolution and the answer.
	a := e.assign(t, todo.ID)
	done, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence})
	if err != nil {
		t.Fatal(err)
	}
	o = e.observe(t, workflow.ObserveParams{Token: tok})
	if fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{todo.ID, done.Answer.ID}) {
		t.Fatalf("after a completion: %+v", IDs(o.Messages))
	}
	tok = o.Token
	// Exact replays do not advance.
	rev = e.revision(t)
	if _, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence}); err != nil {
		t.Fatal(err)
	}
	if e.revision(t) != rev || e.observe(t, workflow.ObserveParams{Token: tok}).Changed {
		t.Fatal("a replayed completion advanced the revision")
	}
	// The token is valid across a restart.
	e.reopen(t)
	if o := e.observe(t, workflow.ObserveParams{Token: tok}); o.Changed || o.Token != tok {
		t.Fatalf("after a restart: %+v", o)
	}
	n := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "after restart"})
	if o := e.observe(t, workflow.ObserveParams{Token: tok}); fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{n.ID}) {
		t.Fatalf("after a restart and a post: %+v", o)
	}
}

func observePagination(t *testing.T, open Opener) {
	e := newEnv(t, open)
	tok := e.observe(t, workflow.ObserveParams{}).Token
	var want []string
	for i := range 5 {
		want = append(want, e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprint(i)}).ID)
	}
	var got []string
	for range 3 {
		o := e.observe(t, workflow.ObserveParams{Token: tok, Limit: 2})
		got = append(got, IDs(o.Messages)...)
		tok = o.Token
		if o.HasMore != (len(got) < 5) {
			t.Fatalf("has_more=%v after %d", o.HasMore, len(got))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	if o := e.observe(t, workflow.ObserveParams{Token: tok}); o.Changed {
		t.Fatalf("after the last page: %+v", o)
	}
}

func observeHistoryLost(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	start := e.observe(t, workflow.ObserveParams{}).Token
	first := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "soon resolved"})
	e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: first.ID})
	for i := 1; i < workflow.MaxRetainedMessages; i++ {
		e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprint(i)})
	}
	mid := e.observe(t, workflow.ObserveParams{Token: start, Limit: workflow.ObserveMax})
	if mid.HistoryLost {
		t.Fatal("history_lost before anything was removed")
	}
	// The next post removes the resolved message: a non-FIFO hole.
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "over the bound"})
	o := e.observe(t, workflow.ObserveParams{Token: start, Limit: 1})
	if !o.HistoryLost || !o.Changed {
		t.Fatalf("a cursor before the removed message: %+v", o.HistoryLost)
	}
	if o := e.observe(t, workflow.ObserveParams{Token: mid.Token}); o.HistoryLost {
		t.Fatal("history_lost for a cursor after the removed message's change")
	}
}

func observeTokenRejects(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	other := e.l.Start(t)
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "one"})
	tok := e.observe(t, workflow.ObserveParams{}).Token
	otherTok := e.observe(t, workflow.ObserveParams{SessionID: other.ID}).Token
	bad := map[string]string{
		"oversized":     tok + strings.Repeat("A", workflow.MaxObservationTokenChars+1-len(tok)),
		"wrong prefix":  "wso1_" + tok[5:],
		"not base64url": tok[:len(tok)-1] + "*",
		"one char less": tok[:len(tok)-1],
		"other session": otherTok,
		"a fence":       e.assign(t, e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "t"}).ID).Fence,
		"a message id":  workflow.NewMessageID(),
	}
	for i := len(workflow.ObservationTokenPrefix); i < len(tok); i++ {
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		bad[fmt.Sprint("edited at ", i)] = string(b)
	}
	before := e.snap(t, e.sess.ID)
	for name, tk := range bad {
		_, err := e.board.Observe(ctx, workflow.ObserveParams{SessionID: e.sess.ID, Token: tk})
		if failure.KindOf(err) != failure.InvalidObservationToken {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if len(tok) > workflow.MaxObservationTokenChars || len(bad["oversized"]) != workflow.MaxObservationTokenChars+1 {
		t.Fatalf("token length %d", len(tok))
	}
	for _, p := range []workflow.ObserveParams{
		{SessionID: e.sess.ID, Wait: time.Second},
		{SessionID: e.sess.ID, Token: tok, Wait: workflow.MaxObserveWait + time.Second},
		{SessionID: e.sess.ID, Token: tok, Wait: time.Second - 1},
		{SessionID: e.sess.ID, Token: tok, Limit: workflow.ObserveMax + 1},
		{SessionID: e.sess.ID, Token: tok, Limit: -1},
	} {
		_, err := e.board.Observe(ctx, p)
		wantKind(t, err, failure.InvalidArguments)
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a refused observation changed the board")
	}
}

// observeForgedToken reproduces the finding of issue 24: a token
// carried the revision in clear with an unkeyed check, so anyone could
// forge a revision-0 token and read the board's history. Tokens are now
// authenticated with the ledger's key: a revision-0 token forged in the
// old format, in the new format under any other key, a token with one bit
// flipped anywhere, and another session's token all fail closed, change
// nothing, and a real token still works after a restart.
func observeForgedToken(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "history before the baseline"})
	tok := e.observe(t, workflow.ObserveParams{}).Token
	if len(tok) != len(workflow.ObservationTokenPrefix)+43 || len(tok) > workflow.MaxObservationTokenChars {
		t.Fatalf("token %q: %d characters", tok, len(tok))
	}
	var gen int64
	e.st.ViewBoard(ctx, e.sess.ID, func(r workflow.BoardReader) error {
		st, err := r.State()
		gen = st.Generation
		return err
	})
	// The old format: wso1_ + revision, generation, SHA-256 check.
	oldCheck := sha256.Sum256([]byte("webcodex observation token v1\x00" + e.sess.ID + "\x00" +
		strconv.FormatInt(gen, 10) + "\x00" + strconv.FormatInt(0, 10)))
	old := make([]byte, 16, 28)
	binary.BigEndian.PutUint64(old[8:], uint64(gen))
	old = append(old, oldCheck[:12]...)
	// The new format under a guessed key (all zeros) and a random one.
	forge := func(key []byte) string {
		derive := func(use string) []byte {
			m := hmac.New(sha256.New, key)
			m.Write([]byte("webcodex observation token v2 " + use))
			return m.Sum(nil)
		}
		fields := make([]byte, 16)
		binary.BigEndian.PutUint64(fields[8:], uint64(gen))
		m := hmac.New(sha256.New, derive("mac"))
		m.Write([]byte(e.sess.ID + "\x00"))
		m.Write(fields)
		tag := m.Sum(nil)[:16]
		m = hmac.New(sha256.New, derive("enc"))
		m.Write(tag)
		mask := m.Sum(nil)
		b := append([]byte{}, tag...)
		for i := range fields {
			b = append(b, fields[i]^mask[i])
		}
		return workflow.ObservationTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	}
	another := sha256.Sum256([]byte("another server's key"))
	other := e.l.Start(t)
	forged := map[string]string{
		"revision 0, old format":          "wso1_" + base64.RawURLEncoding.EncodeToString(old),
		"old format under the new prefix": workflow.ObservationTokenPrefix + base64.RawURLEncoding.EncodeToString(old),
		"revision 0, zero key":            forge(make([]byte, workflow.ObservationKeyBytes)),
		"revision 0, another key":         forge(another[:]),
		"other session":                   e.observe(t, workflow.ObserveParams{SessionID: other.ID}).Token,
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, workflow.ObservationTokenPrefix))
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte{}, raw...)
			b[i] ^= 1 << bit
			forged[fmt.Sprintf("byte %d bit %d flipped", i, bit)] = workflow.ObservationTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
		}
	}
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "after the baseline"})
	before := e.snap(t, e.sess.ID)
	for name, f := range forged {
		o, err := e.board.Observe(ctx, workflow.ObserveParams{SessionID: e.sess.ID, Token: f})
		if failure.KindOf(err) != failure.InvalidObservationToken {
			t.Errorf("%s: %d messages, %v; want invalid_observation_token", name, len(o.Messages), err)
		}
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a refused token changed the board")
	}
	// The key survives a restart: the real token still reads the one
	// change after it, and the forgeries still fail.
	e.reopen(t)
	if o := e.observe(t, workflow.ObserveParams{Token: tok}); len(o.Messages) != 1 || o.Messages[0].Body != "after the baseline" {
		t.Fatalf("the real token after a restart: %+v", o)
	}
	if _, err := e.board.Observe(ctx, workflow.ObserveParams{SessionID: e.sess.ID, Token: forged["revision 0, zero key"]}); failure.KindOf(err) != failure.InvalidObservationToken {
		t.Fatalf("a forgery after a restart: %v", err)
	}
}

// observationKeyPerLedger: every ledger file has its own key, kept in
// the file: the same across opens, another for another ledger.
func observationKeyPerLedger(t *testing.T, open Opener) {
	a, b := newEnv(t, open), newEnv(t, open)
	if len(a.st.ObservationKey()) != workflow.ObservationKeyBytes || string(a.st.ObservationKey()) == string(b.st.ObservationKey()) {
		t.Fatal("two ledgers share a key, or it has the wrong size")
	}
	key := string(a.st.ObservationKey())
	a.reopen(t)
	if string(a.st.ObservationKey()) != key {
		t.Fatal("the key changed across a restart")
	}
}

func observeWait(t *testing.T, open Opener) {
	e := newEnv(t, open)
	tok := e.observe(t, workflow.ObserveParams{}).Token
	// A post from elsewhere wakes the waiter; the post is made once the
	// observer is about to wait (its subscription precedes its check, so
	// the wake cannot be lost).
	waiting := make(chan struct{})
	posted := make(chan workflow.Message, 1)
	go func() {
		<-waiting
		m, _, err := e.board.Post(context.Background(), workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageNote, Body: "wake up"})
		if err != nil {
			t.Error(err)
		}
		posted <- m
	}()
	var inWait int64
	o := e.observe(t, workflow.ObserveParams{Token: tok, Wait: workflow.MaxObserveWait, BeforeWait: func() error {
		inWait = e.board.Waiting()
		close(waiting)
		return nil
	}})
	m := <-posted
	// The waiter gauge of /metrics counts the wait, and only while it lasts.
	if inWait != 1 || e.board.Waiting() != 0 {
		t.Errorf("Waiting() = %d during the wait, %d after, want 1 and 0", inWait, e.board.Waiting())
	}
	if o.WaitOutcome != workflow.WaitUpdated || fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{m.ID}) {
		t.Fatalf("woken observation: %+v", o)
	}
	// A timeout is a successful unchanged result.
	o = e.observe(t, workflow.ObserveParams{Token: o.Token, Wait: workflow.MinObserveWait})
	if o.WaitOutcome != workflow.WaitTimeout || o.Changed || len(o.Messages) != 0 {
		t.Fatalf("timed out observation: %+v", o)
	}
	// A refused wait (the caller's waiter share) fails without waiting.
	_, err := e.board.Observe(context.Background(), workflow.ObserveParams{SessionID: e.sess.ID, Token: o.Token, Wait: workflow.MaxObserveWait,
		BeforeWait: func() error { return failure.New(failure.TooManyRequests, "share") }})
	wantKind(t, err, failure.TooManyRequests)
	if n := e.board.Waiting(); n != 0 {
		t.Errorf("Waiting() = %d after a refused wait, want 0", n)
	}
}

// observationRevisionProperties drives random board operations and
// checks after each one: the revision never decreases; it advances
// exactly when the operation changed observable state (posts, real
// resolves, completions; never replays or repeated resolves); and every
// earlier token observes exactly the retained messages changed since.
func observationRevisionProperties(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	rng := rand.New(rand.NewPCG(14, 14))
	type cursor struct {
		tok   string
		rev   int64
		state map[string]string // message id → rendered state at the cursor
	}
	render := func() map[string]string {
		var ms []workflow.Message
		e.st.ViewBoard(ctx, e.sess.ID, func(r workflow.BoardReader) error {
			ms, _, _ = r.List(workflow.MessageFilter{Limit: 10000})
			return nil
		})
		out := map[string]string{}
		for _, m := range ms {
			out[m.ID] = fmt.Sprintf("%s/%s", m.Status, m.ResolvedByMessageID)
		}
		return out
	}
	var msgs []workflow.Message
	var cursors []cursor
	for step := range 120 {
		before := e.revision(t)
		changed := false
		switch op := rng.IntN(5); {
		case op == 0 || len(msgs) == 0:
			kind := workflow.MessageNote
			if rng.IntN(2) == 0 {
				kind = workflow.MessageTodo
			}
			key := fmt.Sprint("k", rng.IntN(10))
			m, replayed, err := e.board.Post(ctx, workflow.PostParams{SessionID: e.sess.ID, Kind: kind, Body: "body " + key, DeliveryKey: key})
			if err != nil && failure.KindOf(err) != failure.IdempotencyConflict {
				t.Fatal(err)
			}
			changed = err == nil && !replayed
			if changed {
				msgs = append(msgs, m)
			}
		case op == 1 || op == 2:
			m := msgs[rng.IntN(len(msgs))]
			_, c, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: m.ID})
			if err != nil {
				t.Fatal(err)
			}
			changed = c
		default:
			m := msgs[rng.IntN(len(msgs))]
			a, err := e.board.Assignment(ctx, e.sess.ID, m.ID)
			if err != nil || !a.Completable {
				// Not a todo, or resolved: a replay attempt changes nothing.
				if a.Todo.CompletionKey != "" {
					_, err = e.complete(workflow.CompleteParams{MessageID: m.ID, Fence: zeroFence, CompletionKey: a.Todo.CompletionKey})
					if failure.KindOf(err) != failure.InvalidAssignmentFence {
						t.Fatalf("step %d: replay with a foreign fence: %v", step, err)
					}
				}
				break
			}
			done, err := e.complete(workflow.CompleteParams{MessageID: m.ID, Fence: a.Fence, CompletionKey: fmt.Sprint("c", step)})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, done.Answer)
			changed = true
			again, err := e.complete(workflow.CompleteParams{MessageID: m.ID, Fence: a.Fence, CompletionKey: fmt.Sprint("c", step)})
			if err != nil || !again.Replayed {
				t.Fatalf("replay: %v", err)
			}
		}
		after := e.revision(t)
		if after < before || (after > before) != changed {
			t.Fatalf("step %d: revision %d -> %d, changed=%v", step, before, after, changed)
		}
		now := render()
		for _, c := range cursors {
			o := e.observe(t, workflow.ObserveParams{Token: c.tok, Limit: workflow.ObserveMax})
			var want []string
			for id, st := range now {
				if c.state[id] != st {
					want = append(want, id)
				}
			}
			got := IDs(o.Messages)
			if len(got) != len(want) || o.HasMore {
				t.Fatalf("step %d: cursor at %d sees %v, want %v", step, c.rev, got, want)
			}
			for _, id := range got {
				if c.state[id] == now[id] {
					t.Fatalf("step %d: cursor at %d sees unchanged %s", step, c.rev, id)
				}
			}
		}
		if step%10 == 0 {
			cursors = append(cursors, cursor{tok: e.observe(t, workflow.ObserveParams{}).Token, rev: after, state: now})
		}
	}
}

// observeManyWaiters: one post wakes every waiter of the session, each
// returns that post (the waiters woken by one signal share one read), and
// a waiter on another session is not woken.
func observeManyWaiters(t *testing.T, open Opener) {
	e := newEnv(t, open)
	other := e.l.Start(t)
	tok := e.observe(t, workflow.ObserveParams{}).Token
	otherTok := e.observe(t, workflow.ObserveParams{SessionID: other.ID}).Token
	const n = 20
	var ready sync.WaitGroup
	results := make(chan workflow.Observation, n)
	for range n {
		ready.Add(1)
		go func() {
			o, err := e.board.Observe(context.Background(), workflow.ObserveParams{SessionID: e.sess.ID, Token: tok, Wait: workflow.MaxObserveWait,
				BeforeWait: func() error { ready.Done(); return nil }})
			if err != nil {
				t.Error(err)
			}
			results <- o
		}()
	}
	ready.Wait()
	m := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "to all"})
	for range n {
		o := <-results
		if o.WaitOutcome != workflow.WaitUpdated || fmt.Sprint(IDs(o.Messages)) != fmt.Sprint([]string{m.ID}) {
			t.Fatalf("a waiter returned %+v", o)
		}
	}
	if o := e.observe(t, workflow.ObserveParams{SessionID: other.ID, Token: otherTok}); o.Changed {
		t.Fatalf("the other session changed: %+v", o)
	}
}
