package boardtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// zeroFence has the current fence format and an all-zero payload: well
// formed, issued by no store.
var zeroFence = workflow.FencePrefix + strings.Repeat("A", workflow.FenceChars-len(workflow.FencePrefix))

// assignmentDigest is the unkeyed SHA-256 of an assignment's semantic
// state as both fence formats compute it (version "v2" or "v3").
func assignmentDigest(version string, todo workflow.Message, replies []workflow.Message) [32]byte {
	rs := make([]any, len(replies))
	for i, r := range replies {
		rs[i] = []any{r.ID, r.Kind, r.Status, r.Priority, r.Tags, r.Body, r.Resolution}
	}
	b, err := json.Marshal([]any{todo.SessionID, todo.ID, todo.AssignmentRevision,
		todo.Body, todo.Tags, todo.Priority, todo.Status, todo.RepliesPosted, todo.RepliesRemoved, rs})
	if err != nil {
		panic(err)
	}
	return sha256.Sum256(append([]byte("webcodex assignment fence state "+version+"\x00"), b...))
}

// oldFence is the unkeyed wsa2_ fence of an assignment, as issued before
// decision 0057: anyone who read the todo could compute it.
func oldFence(a workflow.Assignment) string {
	bind := sha256.Sum256([]byte("webcodex assignment fence bind v2\x00" + a.Todo.SessionID + "\x00" + a.Todo.ID))
	state := assignmentDigest("v2", a.Todo, a.Replies)
	return "wsa2_" + base64.RawURLEncoding.EncodeToString(append(bind[:8], state[:8]...))
}

// forgeFence is the current construction under a key that is not the
// store's: what a caller who knows the format and the todo, but not the
// key, can compute.
func forgeFence(key []byte, a workflow.Assignment) string {
	derive := func(use string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("webcodex assignment fence v3 " + use))
		return m.Sum(nil)
	}
	d := assignmentDigest("v3", a.Todo, a.Replies)
	m := hmac.New(sha256.New, derive("state"))
	m.Write(d[:])
	state := m.Sum(nil)[:8]
	m = hmac.New(sha256.New, derive("tag"))
	m.Write([]byte(a.Todo.SessionID + "\x00" + a.Todo.ID + "\x00"))
	m.Write(state)
	return workflow.FencePrefix + base64.RawURLEncoding.EncodeToString(append(state, m.Sum(nil)[:16]...))
}

// withTag is fence with its state part kept and its tag replaced by the
// one key computes: a caller who saw a real fence and guesses the key.
func withTag(t *testing.T, fence string, key []byte, a workflow.Assignment) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(fence, workflow.FencePrefix))
	if err != nil || len(raw) != 24 {
		t.Fatalf("fence %q: %d bytes, %v", fence, len(raw), err)
	}
	forged, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(forgeFence(key, a), workflow.FencePrefix))
	return workflow.FencePrefix + base64.RawURLEncoding.EncodeToString(append(raw[:8:8], forged[8:]...))
}

// forgedAssignmentFences: a fence proves the caller read the
// assignment from this store. Everything computed without the store's
// key (the old unkeyed format, the current format under a guessed key,
// a real state digest with a guessed tag, any single-bit edit of a real
// fence) and a real fence of another session or todo are
// invalid_assignment_fence, also on a completed todo (not a replay), and
// change nothing; the real fence still completes after a restart, and
// an authentic fence the assignment outgrew is stale_precondition.
func forgedAssignmentFences(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	other := e.l.Start(t)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix Add"})
	second := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix Sub"})
	foreign := e.post(t, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageTodo, Body: "fix Add"})
	a := e.assign(t, todo.ID)
	if !strings.HasPrefix(a.Fence, workflow.FencePrefix) || len(a.Fence) != workflow.FenceChars {
		t.Fatalf("fence %q: want %s and %d characters", a.Fence, workflow.FencePrefix, workflow.FenceChars)
	}
	fa, err := e.board.Assignment(ctx, other.ID, foreign.ID)
	if err != nil {
		t.Fatal(err)
	}
	zeroKey := make([]byte, workflow.ObservationKeyBytes)
	anotherKey := sha256.Sum256([]byte("another server's key"))
	// The forgery is computed right: under the store's own key it is the
	// real fence, so the refusals below are the key's doing.
	if f := forgeFence(e.st.ObservationKey(), a); f != a.Fence {
		t.Fatalf("the test's construction under the store's key gives %q, the store %q", f, a.Fence)
	}
	forged := map[string]string{
		"old unkeyed wsa2_ fence":          oldFence(a),
		"old payload under the new prefix": workflow.FencePrefix + strings.TrimPrefix(oldFence(a), "wsa2_"),
		"computed under a zero key":        forgeFence(zeroKey, a),
		"computed under another key":       forgeFence(anotherKey[:], a),
		"real state, tag under a zero key": withTag(t, a.Fence, zeroKey, a),
		"all zeros":                        zeroFence,
		"another todo's fence":             e.assign(t, second.ID).Fence,
		"another session's fence":          fa.Fence,
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a.Fence, workflow.FencePrefix))
	for i := range raw {
		for bit := range 8 {
			b := append([]byte{}, raw...)
			b[i] ^= 1 << bit
			forged[fmt.Sprintf("byte %d bit %d flipped", i, bit)] = workflow.FencePrefix + base64.RawURLEncoding.EncodeToString(b)
		}
	}
	refuseAll := func(when, key string) {
		t.Helper()
		before, beforeOther := e.snap(t, e.sess.ID), e.snap(t, other.ID)
		for name, f := range forged {
			c, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: f, CompletionKey: key})
			if failure.KindOf(err) != failure.InvalidAssignmentFence {
				t.Errorf("%s, %s: got %v (completed: %v); want invalid_assignment_fence", when, name, err, c.Answer.ID != "")
			}
		}
		if e.snap(t, e.sess.ID) != before || e.snap(t, other.ID) != beforeOther {
			t.Fatalf("%s: a refused fence changed a board", when)
		}
	}
	refuseAll("open todo", "c1")

	// The key is the ledger's: after a restart the store issues the same
	// fence, the forgeries still fail, and the real fence completes.
	e.reopen(t)
	if again := e.assign(t, todo.ID); again.Fence != a.Fence {
		t.Fatalf("the fence changed across a restart: %q, was %q", again.Fence, a.Fence)
	}
	refuseAll("after a restart", "c1")
	done, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence, CompletionKey: "c1"})
	if err != nil || done.Replayed || done.Todo.Status != workflow.MessageResolved {
		t.Fatalf("complete with the real fence after a restart: %+v %v", done, err)
	}
	// On the completed todo a forged fence with the completion's own key
	// is still refused, not replayed; the real one replays.
	refuseAll("completed todo", "c1")
	if r, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence, CompletionKey: "c1"}); err != nil || !r.Replayed || r.Answer.ID != done.Answer.ID {
		t.Fatalf("replay with the real fence: %+v %v", r, err)
	}

	// Authentic but outgrown: stale_precondition, as before keys.
	s := e.assign(t, second.ID)
	e.post(t, workflow.PostParams{Kind: workflow.MessageGuidance, Body: "also Mul", ReplyTo: second.ID})
	before := e.snap(t, e.sess.ID)
	_, err = e.complete(workflow.CompleteParams{MessageID: second.ID, Fence: s.Fence, CompletionKey: "c2"})
	wantKind(t, err, failure.StalePrecondition)
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a stale completion changed the board")
	}
	cur, _ := failure.DetailOf(err)["assignment"].(workflow.Assignment)
	if !cur.Completable || cur.Fence == s.Fence || len(cur.Fence) != workflow.FenceChars {
		t.Fatalf("stale detail: %+v", cur)
	}
	if _, err := e.complete(workflow.CompleteParams{MessageID: second.ID, Fence: cur.Fence, CompletionKey: "c2"}); err != nil {
		t.Fatalf("complete with the fresh fence: %v", err)
	}
}
