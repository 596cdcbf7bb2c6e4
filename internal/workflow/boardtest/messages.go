package boardtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

func boardPostListResolve(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "context", Tags: []string{"a"}})
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix it", Priority: workflow.PriorityHigh, RequiresAck: true, Author: e.sess.ID})
	reply := e.post(t, workflow.PostParams{Kind: workflow.MessageQuestion, Body: "which file?", ReplyTo: todo.ID})
	if note.AuthorSessionID != "" || todo.AuthorSessionID != e.sess.ID {
		t.Fatalf("author: note %q todo %q", note.AuthorSessionID, todo.AuthorSessionID)
	}
	if note.Priority != workflow.PriorityNormal || note.Status != workflow.MessageOpen || !strings.HasPrefix(note.ID, "wc_msg_") || len(note.ID) != 39 {
		t.Fatalf("note: %+v", note)
	}
	all, more, err := e.board.List(ctx, e.sess.ID, workflow.MessageFilter{})
	if err != nil || more || len(all) != 3 || all[0].ID != reply.ID || all[2].ID != note.ID {
		t.Fatalf("list newest first: %v %v %+v", err, more, all)
	}
	got, _, _ := e.board.List(ctx, e.sess.ID, workflow.MessageFilter{Kind: workflow.MessageQuestion, ReplyTo: todo.ID})
	if len(got) != 1 || got[0].ID != reply.ID {
		t.Fatalf("AND filters: %+v", got)
	}
	got, _, _ = e.board.List(ctx, e.sess.ID, workflow.MessageFilter{Kind: workflow.MessageNote, ReplyTo: todo.ID})
	if len(got) != 0 {
		t.Fatalf("AND filters matched a note replying to nothing: %+v", got)
	}
	got, more, _ = e.board.List(ctx, e.sess.ID, workflow.MessageFilter{Limit: 2})
	if len(got) != 2 || !more {
		t.Fatalf("limit 2: %d more=%v", len(got), more)
	}
	r, changed, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: note.ID, Resolution: "done"})
	if err != nil || !changed || r.Status != workflow.MessageResolved || r.ResolvedAt == nil || r.Resolution != "done" {
		t.Fatalf("resolve: %+v %v %v", r, changed, err)
	}
	before := e.snap(t, e.sess.ID)
	r2, changed, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: note.ID, Resolution: "other"})
	if err != nil || changed || r2.Resolution != "done" {
		t.Fatalf("second resolve: %+v %v %v", r2, changed, err)
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("an idempotent resolve changed the board")
	}
	got, _, _ = e.board.List(ctx, e.sess.ID, workflow.MessageFilter{Status: workflow.MessageResolved})
	if len(got) != 1 || got[0].ID != note.ID {
		t.Fatalf("status filter: %+v", got)
	}
	d, err := e.board.Summary(ctx, e.sess.ID)
	if err != nil || d.Counts[workflow.MessageTodo][workflow.MessageOpen] != 1 || len(d.Open[workflow.MessageTodo]) != 1 ||
		len(d.Open[workflow.MessageQuestion]) != 1 || d.Counts[workflow.MessageNote][workflow.MessageResolved] != 1 {
		t.Fatalf("summary: %+v %v", d, err)
	}
}

func boardPostRejects(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	other := e.l.Start(t)
	foreign := e.post(t, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageNote})
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, DeliveryKey: "k1", Body: "first"})
	tags := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", size, i)
		}
		return out
	}
	ok := func(mod func(p *workflow.PostParams)) workflow.PostParams {
		p := workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageNote, Body: "x"}
		mod(&p)
		return p
	}
	bad := []struct {
		name string
		p    workflow.PostParams
		kind failure.Kind
	}{
		{"empty message", ok(func(p *workflow.PostParams) { p.Body = "" }), failure.InvalidArguments},
		{"blank message", ok(func(p *workflow.PostParams) { p.Body = "  \n" }), failure.InvalidArguments},
		{"message 8001", ok(func(p *workflow.PostParams) { p.Body = strings.Repeat("é", workflow.MessageMaxChars+1) }), failure.InvalidArguments},
		{"17 tags", ok(func(p *workflow.PostParams) { p.Tags = tags(workflow.MaxMessageTags+1, 2) }), failure.InvalidArguments},
		{"tag 65", ok(func(p *workflow.PostParams) { p.Tags = tags(1, workflow.MaxTagChars+1) }), failure.InvalidArguments},
		{"empty tag", ok(func(p *workflow.PostParams) { p.Tags = []string{""} }), failure.InvalidArguments},
		{"repeated tag", ok(func(p *workflow.PostParams) { p.Tags = []string{"a", "a"} }), failure.InvalidArguments},
		{"unknown kind", ok(func(p *workflow.PostParams) { p.Kind = "memo" }), failure.InvalidArguments},
		{"unknown priority", ok(func(p *workflow.PostParams) { p.Priority = "urgent" }), failure.InvalidArguments},
		{"malformed reply_to", ok(func(p *workflow.PostParams) { p.ReplyTo = "msg_1" }), failure.InvalidArguments},
		{"unknown reply_to", ok(func(p *workflow.PostParams) { p.ReplyTo = workflow.NewMessageID() }), failure.UnknownMessageID},
		{"reply_to in another session", ok(func(p *workflow.PostParams) { p.ReplyTo = foreign.ID }), failure.UnknownMessageID},
		{"delivery_key 129", ok(func(p *workflow.PostParams) { p.DeliveryKey = strings.Repeat("k", workflow.MaxIdempotencyKeyChars+1) }), failure.InvalidArguments},
		{"delivery_key reused", ok(func(p *workflow.PostParams) { p.DeliveryKey = "k1"; p.Body = "second" }), failure.IdempotencyConflict},
		{"unknown session", ok(func(p *workflow.PostParams) { p.SessionID = workflow.NewSessionID() }), failure.UnknownSessionID},
	}
	before, beforeOther := e.snap(t, e.sess.ID), e.snap(t, other.ID)
	for _, c := range bad {
		_, _, err := e.board.Post(ctx, c.p)
		if failure.KindOf(err) != c.kind {
			t.Errorf("%s: got %v, want %s", c.name, err, c.kind)
		}
	}
	if e.snap(t, e.sess.ID) != before || e.snap(t, other.ID) != beforeOther {
		t.Fatal("a refused post changed a board")
	}
	// The bounds themselves are accepted.
	for _, p := range []workflow.PostParams{
		ok(func(p *workflow.PostParams) { p.Body = "y" }),
		ok(func(p *workflow.PostParams) { p.Body = strings.Repeat("é", workflow.MessageMaxChars) }),
		ok(func(p *workflow.PostParams) { p.Tags = tags(workflow.MaxMessageTags, workflow.MaxTagChars) }),
		ok(func(p *workflow.PostParams) { p.DeliveryKey = strings.Repeat("k", workflow.MaxIdempotencyKeyChars) }),
		ok(func(p *workflow.PostParams) { p.Priority = workflow.PriorityLow; p.Kind = workflow.MessageRisk }),
	} {
		if _, _, err := e.board.Post(ctx, p); err != nil {
			t.Errorf("post at the bound: %v", err)
		}
	}
	// A closed session takes no post (and the refusal changes nothing).
	e.l.Close(t, other.ID)
	beforeOther = e.snap(t, other.ID)
	_, _, err := e.board.Post(ctx, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageNote, Body: "late"})
	wantKind(t, err, failure.SessionClosed)
	if e.snap(t, other.ID) != beforeOther {
		t.Fatal("a post to a closed session changed its board")
	}
	// Listing works on a closed session.
	if ms, _, err := e.board.List(ctx, other.ID, workflow.MessageFilter{}); err != nil || len(ms) != 1 {
		t.Fatalf("list a closed session: %v %d", err, len(ms))
	}
}

func boardListRejects(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	for i := range workflow.MessageListMax + 1 {
		e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprint("n", i)})
	}
	for _, c := range []struct {
		f    workflow.MessageFilter
		want int
		more bool
	}{{workflow.MessageFilter{}, workflow.MessageListDefault, true}, {workflow.MessageFilter{Limit: workflow.MessageListMax}, workflow.MessageListMax, true},
		{workflow.MessageFilter{Limit: 1}, 1, true}} {
		ms, more, err := e.board.List(ctx, e.sess.ID, c.f)
		if err != nil || len(ms) != c.want || more != c.more {
			t.Errorf("list %+v: %d more=%v %v", c.f, len(ms), more, err)
		}
	}
	for _, f := range []workflow.MessageFilter{{Limit: workflow.MessageListMax + 1}, {Limit: -1}, {Kind: "memo"}, {Status: "closed"},
		{MessageID: "wc_msg_x"}, {ReplyTo: "nope"}} {
		_, _, err := e.board.List(ctx, e.sess.ID, f)
		if failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("list %+v: %v", f, err)
		}
	}
}

func boardDeliveryKeyReplayAfterRestart(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	p := workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageTodo, Body: "ship it", Tags: []string{"release"}, DeliveryKey: "post-1"}
	first, replayed, err := e.board.Post(ctx, p)
	if err != nil || replayed {
		t.Fatal(err, replayed)
	}
	e.reopen(t)
	before := e.snap(t, e.sess.ID)
	again, replayed, err := e.board.Post(ctx, p)
	if err != nil || !replayed || again.ID != first.ID || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("replay after restart: %+v replayed=%v %v", again, replayed, err)
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a replay changed the board")
	}
	conflict := p
	conflict.Priority = workflow.PriorityHigh
	_, _, err = e.board.Post(ctx, conflict)
	wantKind(t, err, failure.IdempotencyConflict)
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a conflicting replay changed the board")
	}
}

func boardRetention(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "the oldest open todo"})
	old := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "old open note"})
	var resolved []string
	for i := 2; i < workflow.MaxRetainedMessages; i++ {
		m := e.post(t, workflow.PostParams{Kind: workflow.MessageProgress, Body: fmt.Sprint("p", i)})
		if i == 100 || i == 150 {
			if _, _, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: m.ID}); err != nil {
				t.Fatal(err)
			}
			resolved = append(resolved, m.ID)
		}
	}
	var st workflow.BoardState
	state := func() workflow.BoardState {
		e.st.ViewBoard(ctx, e.sess.ID, func(r workflow.BoardReader) error { st, _ = r.State(); return nil })
		return st
	}
	if s := state(); s.Retained != workflow.MaxRetainedMessages || s.Removed != 0 || s.ObservationLowWatermark != 0 {
		t.Fatalf("at the bound: %+v", s)
	}
	// One over: the oldest resolved message goes, not the oldest message.
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "201"})
	retained := func(id string) bool {
		ms, _, _ := e.board.List(ctx, e.sess.ID, workflow.MessageFilter{MessageID: id})
		return len(ms) == 1
	}
	if retained(resolved[0]) || !retained(resolved[1]) || !retained(old.ID) || !retained(todo.ID) {
		t.Fatal("retention did not remove exactly the oldest resolved message")
	}
	s := state()
	if s.Retained != workflow.MaxRetainedMessages || s.Removed != 1 || s.ObservationLowWatermark == 0 || s.Posted != workflow.MaxRetainedMessages+1 {
		t.Fatalf("after one removal: %+v", s)
	}
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "202"})
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "203"})
	// Then the oldest open non-todo; the open todo stays.
	if retained(resolved[1]) || retained(old.ID) || !retained(todo.ID) {
		t.Fatal("retention order: resolved first, then the oldest open non-todo, never the open todo")
	}
}

// oldestOrdersByClassThenSeq: one retention pass asks for two classes
// in one statement; its rows come back resolved first, oldest first, then
// loose ones, oldest first, cut at the limit, excluding the given ids and
// never an open todo.
func oldestOrdersByClassThenSeq(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "an open todo"})
	var notes []workflow.Message
	for i := range 6 {
		notes = append(notes, e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprint("note ", i)}))
	}
	for _, i := range []int{4, 2} { // resolved out of seq order
		if _, _, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: notes[i].ID}); err != nil {
			t.Fatal(err)
		}
	}
	oldest := func(exclude []string, limit int) []string {
		t.Helper()
		var ids []string
		err := e.st.UpdateBoard(ctx, e.sess.ID, func(w workflow.BoardWriter) error {
			ms, err := w.Oldest(workflow.RetentionPasses[0], exclude, limit)
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for _, c := range []struct {
		exclude []string
		limit   int
		want    []workflow.Message
	}{
		{nil, 1, notes[2:3]},
		{nil, 3, []workflow.Message{notes[2], notes[4], notes[0]}},
		{nil, 10, []workflow.Message{notes[2], notes[4], notes[0], notes[1], notes[3], notes[5]}},
		{[]string{notes[2].ID, notes[0].ID}, 3, []workflow.Message{notes[4], notes[1], notes[3]}},
	} {
		var want []string
		for _, m := range c.want {
			want = append(want, m.ID)
		}
		if got := oldest(c.exclude, c.limit); !slices.Equal(got, want) || slices.Contains(got, todo.ID) {
			t.Errorf("Oldest(exclude %d, limit %d) = %v, want %v", len(c.exclude), c.limit, got, want)
		}
	}
}

func boardFullOfOpenTodosRefusesPost(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	for i := range workflow.MaxRetainedMessages {
		e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: fmt.Sprint("todo ", i)})
	}
	before := e.snap(t, e.sess.ID)
	_, _, err := e.board.Post(ctx, workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageNote, Body: "one more"})
	wantKind(t, err, failure.Conflict)
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a refused post changed the board")
	}
}

func assignmentFenceAndCompletion(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix Add"})
	a := e.assign(t, todo.ID)
	if len(a.Fence) != workflow.FenceChars || !a.RepliesComplete || len(a.Replies) != 0 {
		t.Fatalf("assignment: %+v", a)
	}
	// Unrelated traffic does not stale the fence.
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "unrelated"})
	e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: note.ID})
	if b := e.assign(t, todo.ID); b.Fence != a.Fence {
		t.Fatal("unrelated traffic staled the fence")
	}
	// A direct reply does: the completion is refused with the current
	// assignment and a fresh fence, and nothing changes.
	e.post(t, workflow.PostParams{Kind: workflow.MessageGuidance, Body: "also handle overflow", ReplyTo: todo.ID})
	before := e.snap(t, e.sess.ID)
	_, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence})
	wantKind(t, err, failure.StalePrecondition)
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a stale completion changed the board")
	}
	cur, ok := failure.DetailOf(err)["assignment"].(workflow.Assignment)
	if !ok || !cur.Completable || cur.Fence == a.Fence || len(cur.Replies) != 1 {
		t.Fatalf("stale detail: %+v", failure.DetailOf(err))
	}
	done, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: cur.Fence, Tags: []string{"fix"}, Author: e.sess.ID})
	if err != nil || done.Replayed || done.Todo.Status != workflow.MessageResolved || done.Answer.Kind != workflow.MessageAnswer ||
		done.Answer.ReplyTo != todo.ID || done.Todo.ResolvedByMessageID != done.Answer.ID || !strings.HasPrefix(done.Todo.CompletionID, "wc_cmp_") ||
		done.Answer.AuthorSessionID != e.sess.ID {
		t.Fatalf("complete: %+v %v", done, err)
	}
	// Replay after a restart: the original result, nothing changed.
	e.reopen(t)
	before = e.snap(t, e.sess.ID)
	again, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: cur.Fence, Tags: []string{"fix"}})
	if err != nil || !again.Replayed || again.Answer.ID != done.Answer.ID || again.Todo.CompletionID != done.Todo.CompletionID {
		t.Fatalf("replay after restart: %+v %v", again, err)
	}
	_, err = e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: cur.Fence, Answer: "another answer"})
	wantKind(t, err, failure.IdempotencyConflict)
	_, err = e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: cur.Fence, CompletionKey: "c2", Tags: []string{"fix"}})
	wantKind(t, err, failure.AlreadyCompleted)
	if d := failure.DetailOf(err); d["completion_id"] != done.Todo.CompletionID || d["answer_message_id"] != done.Answer.ID {
		t.Fatalf("already_completed detail: %+v", d)
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("a replayed or refused completion changed the board")
	}
	if r, err := e.board.Assignment(ctx, e.sess.ID, todo.ID); err != nil || r.Completable || r.Fence != "" || r.Reason != workflow.NotCompletableResolved {
		t.Fatalf("assignment of a completed todo: %+v %v", r, err)
	}
}

func completionRejects(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	other := e.l.Start(t)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix Add"})
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "a note"})
	foreignTodo := e.post(t, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageTodo, Body: "other"})
	fa, err := e.board.Assignment(ctx, other.ID, foreignTodo.ID)
	if err != nil {
		t.Fatal(err)
	}
	second := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "second"})
	fence := e.assign(t, todo.ID).Fence
	secondFence := e.assign(t, second.ID).Fence
	obsToken, err := e.board.Observe(ctx, workflow.ObserveParams{SessionID: e.sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	edited := []byte(fence)
	if edited[10] == 'A' {
		edited[10] = 'B'
	} else {
		edited[10] = 'A'
	}
	cases := []struct {
		name string
		p    workflow.CompleteParams
		kind failure.Kind
	}{
		{"empty fence", workflow.CompleteParams{MessageID: todo.ID}, failure.InvalidAssignmentFence},
		{"wrong prefix", workflow.CompleteParams{MessageID: todo.ID, Fence: "wsa1_" + fence[5:]}, failure.InvalidAssignmentFence},
		{"fence one char short", workflow.CompleteParams{MessageID: todo.ID, Fence: fence[:len(fence)-1]}, failure.InvalidAssignmentFence},
		{"fence one char long", workflow.CompleteParams{MessageID: todo.ID, Fence: fence + "A"}, failure.InvalidAssignmentFence},
		{"fence not base64url", workflow.CompleteParams{MessageID: todo.ID, Fence: fence[:len(fence)-1] + "*"}, failure.InvalidAssignmentFence},
		{"another session's fence", workflow.CompleteParams{MessageID: todo.ID, Fence: fa.Fence}, failure.InvalidAssignmentFence},
		{"another todo's fence", workflow.CompleteParams{MessageID: todo.ID, Fence: secondFence}, failure.InvalidAssignmentFence},
		{"fence with an edited state", workflow.CompleteParams{MessageID: todo.ID, Fence: string(edited)}, failure.InvalidAssignmentFence},
		{"an observation token as fence", workflow.CompleteParams{MessageID: todo.ID, Fence: obsToken.Token}, failure.InvalidAssignmentFence},
		{"a message id as fence", workflow.CompleteParams{MessageID: todo.ID, Fence: todo.ID}, failure.InvalidAssignmentFence},
		{"not a todo", workflow.CompleteParams{MessageID: note.ID, Fence: fence}, failure.SessionMessageNotTodo},
		{"unknown id", workflow.CompleteParams{MessageID: workflow.NewMessageID(), Fence: fence}, failure.UnknownMessageID},
		{"todo of another session", workflow.CompleteParams{MessageID: foreignTodo.ID, Fence: fa.Fence}, failure.UnknownMessageID},
		{"malformed id", workflow.CompleteParams{MessageID: "todo-1", Fence: fence}, failure.InvalidArguments},
		{"answer 8001", workflow.CompleteParams{MessageID: todo.ID, Fence: fence, Answer: strings.Repeat("a", workflow.MessageMaxChars+1)}, failure.InvalidArguments},
		{"blank answer", workflow.CompleteParams{MessageID: todo.ID, Fence: fence, Answer: " "}, failure.InvalidArguments},
		{"key 129", workflow.CompleteParams{MessageID: todo.ID, Fence: fence, CompletionKey: strings.Repeat("k", workflow.MaxIdempotencyKeyChars+1)}, failure.InvalidArguments},
		{"17 tags", workflow.CompleteParams{MessageID: todo.ID, Fence: fence, Tags: strings.Split("a b c d e f g h i j k l m n o p q", " ")}, failure.InvalidArguments},
		{"unknown priority", workflow.CompleteParams{MessageID: todo.ID, Fence: fence, Priority: "urgent"}, failure.InvalidArguments},
	}
	before, beforeOther := e.snap(t, e.sess.ID), e.snap(t, other.ID)
	for _, c := range cases {
		_, err := e.complete(c.p)
		if failure.KindOf(err) != c.kind {
			t.Errorf("%s: got %v, want %s", c.name, err, c.kind)
		}
	}
	if e.snap(t, e.sess.ID) != before || e.snap(t, other.ID) != beforeOther {
		t.Fatal("a refused completion changed a board")
	}
	// The bounds themselves are accepted.
	done, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: fence, Answer: strings.Repeat("a", workflow.MessageMaxChars),
		CompletionKey: strings.Repeat("k", workflow.MaxIdempotencyKeyChars)})
	if err != nil || done.Replayed {
		t.Fatalf("complete at the bounds: %v", err)
	}
	_, err = e.complete(workflow.CompleteParams{MessageID: second.ID, Fence: secondFence, CompletionKey: "k", Answer: "b"})
	if err != nil {
		t.Fatalf("complete with a 1-char key and answer: %v", err)
	}
	// A closed session completes nothing.
	third := e.post(t, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageTodo, Body: "third"})
	tf, _ := e.board.Assignment(ctx, other.ID, third.ID)
	e.l.Close(t, other.ID)
	if a, err := e.board.Assignment(ctx, other.ID, third.ID); err != nil || a.Completable || a.Fence != "" || a.Reason != workflow.NotCompletableSessionClosed {
		t.Fatalf("assignment in a closed session: %+v %v", a, err)
	}
	beforeOther = e.snap(t, other.ID)
	_, err = e.complete(workflow.CompleteParams{SessionID: other.ID, MessageID: third.ID, Fence: tf.Fence})
	wantKind(t, err, failure.SessionClosed)
	if e.snap(t, other.ID) != beforeOther {
		t.Fatal("a completion in a closed session changed its board")
	}
}

func assignmentReplyBound(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "big"})
	for i := range workflow.MaxAssignmentReplies {
		e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: fmt.Sprint("r", i), ReplyTo: todo.ID})
	}
	a := e.assign(t, todo.ID)
	if len(a.Replies) != workflow.MaxAssignmentReplies || !a.RepliesComplete {
		t.Fatalf("at the reply bound: %d complete=%v", len(a.Replies), a.RepliesComplete)
	}
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "one more", ReplyTo: todo.ID})
	b, err := e.board.Assignment(ctx, e.sess.ID, todo.ID)
	if err != nil || b.Completable || b.Fence != "" || b.Reason != workflow.NotCompletableTooManyReplies || len(b.Replies) != workflow.MaxAssignmentReplies || b.RepliesComplete {
		t.Fatalf("over the reply bound: %+v %v", b.Reason, err)
	}
	before := e.snap(t, e.sess.ID)
	_, err = e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: a.Fence})
	wantKind(t, err, failure.StalePrecondition)
	if cur := failure.DetailOf(err)["assignment"].(workflow.Assignment); cur.Fence != "" || cur.Completable {
		t.Fatalf("a stale result over the bound carries a fence: %+v", cur.Fence)
	}
	if e.snap(t, e.sess.ID) != before {
		t.Fatal("changed")
	}
}

func assignmentRetentionLoss(t *testing.T, open Opener) {
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "keep me"})
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "reply", ReplyTo: todo.ID})
	fence := e.assign(t, todo.ID).Fence
	// Fill the board with open todos so that the only removable message
	// is the todo's reply.
	for i := 2; i <= workflow.MaxRetainedMessages; i++ {
		e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: fmt.Sprint("t", i)})
	}
	a, err := e.board.Assignment(context.Background(), e.sess.ID, todo.ID)
	if err != nil || a.Completable || a.Reason != workflow.NotCompletableRepliesRemoved || a.RepliesComplete {
		t.Fatalf("after the reply was removed: %+v %v", a, err)
	}
	_, err = e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: fence})
	wantKind(t, err, failure.StalePrecondition)
}

// racingCompletions: 16 completions with distinct keys race on one todo,
// spread over the ledger's replicas (Replicated); exactly one wins and
// the others are already_completed.
func racingCompletions(t *testing.T, open Opener) {
	e := newEnv(t, open)
	boards := e.replicas(t)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "one winner"})
	fence := e.assign(t, todo.ID).Fence
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = boards[i%len(boards)].Complete(context.Background(), workflow.CompleteParams{SessionID: e.sess.ID, MessageID: todo.ID,
				Fence: fence, CompletionKey: fmt.Sprint("key-", i), Answer: fmt.Sprint("answer ", i)})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case failure.KindOf(err) != failure.AlreadyCompleted:
			t.Errorf("a losing completion: %v", err)
		}
	}
	answers, _, _ := e.board.List(context.Background(), e.sess.ID, workflow.MessageFilter{Kind: workflow.MessageAnswer})
	if wins != 1 || len(answers) != 1 {
		t.Fatalf("%d completions won, %d answers", wins, len(answers))
	}
}

// racingPosts: posts racing over the ledger's replicas (Replicated) take
// distinct, consecutive sequence numbers and observation revisions, and
// the board's counters count every one.
func racingPosts(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	boards := e.replicas(t)
	const n = 24
	msgs := make([]workflow.Message, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs[i], _, errs[i] = boards[i%len(boards)].Post(ctx, workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageNote, Body: fmt.Sprint("post ", i)})
		}()
	}
	wg.Wait()
	var revs, seqs []int64
	for i, m := range msgs {
		if errs[i] != nil {
			t.Fatalf("post %d: %v", i, errs[i])
		}
		revs, seqs = append(revs, m.ObservationRevision), append(seqs, m.Seq)
	}
	slices.Sort(revs)
	slices.Sort(seqs)
	for i := range n {
		if revs[i] != int64(i+1) || seqs[i] != int64(i+1) {
			t.Fatalf("revisions %v, sequence numbers %v: want 1…%d each", revs, seqs, n)
		}
	}
	st, err := e.board.State(ctx, e.sess.ID)
	if err != nil || st.Posted != n || st.Retained != n || st.ObservationRevision != n {
		t.Fatalf("state %+v %v", st, err)
	}
}

// failingCommit runs each board update and then fails it as a commit
// whose outcome is unknown would: the function ran, the error came after.
type failingCommit struct{ Store }

func (f failingCommit) UpdateBoard(ctx context.Context, id string, fn func(workflow.BoardWriter) error) error {
	return f.Store.UpdateBoard(ctx, id, func(w workflow.BoardWriter) error {
		if err := fn(w); err != nil {
			return err
		}
		return errors.New("disk I/O error")
	})
}

func completionPersistenceUncertain(t *testing.T, open Opener) {
	e := newEnv(t, open)
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix"})
	fence := e.assign(t, todo.ID).Fence
	uncertain := workflow.NewBoard(failingCommit{e.st}, nil)
	p := workflow.CompleteParams{SessionID: e.sess.ID, MessageID: todo.ID, Answer: "fixed", CompletionKey: "c", Fence: fence}
	_, err := uncertain.Complete(context.Background(), p)
	wantKind(t, err, failure.CompletionPersistenceUncertain)
	if c := failure.ClassOf(failure.KindOf(err)); c.FailureKind != "outcome_unknown" || c.RecoveryKind != "retry_same" || failure.DetailOf(err)["retry_same_completion"] != true {
		t.Fatalf("class %+v detail %+v", c, failure.DetailOf(err))
	}
	// Retrying the same call settles it.
	done, err := e.board.Complete(context.Background(), p)
	if err != nil || done.Replayed {
		t.Fatalf("retry: %+v %v", done, err)
	}
	again, err := e.board.Complete(context.Background(), p)
	if err != nil || !again.Replayed || again.Answer.ID != done.Answer.ID {
		t.Fatalf("second retry: %+v %v", again, err)
	}
}

func resolveAndAssignmentRejects(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	other := e.l.Start(t)
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "a note"})
	foreign := e.post(t, workflow.PostParams{SessionID: other.ID, Kind: workflow.MessageTodo, Body: "theirs"})
	before, beforeOther := e.snap(t, e.sess.ID), e.snap(t, other.ID)
	for _, c := range []struct {
		name string
		p    workflow.ResolveParams
		kind failure.Kind
	}{
		{"malformed id", workflow.ResolveParams{MessageID: "wc_msg_1"}, failure.InvalidArguments},
		{"unknown id", workflow.ResolveParams{MessageID: workflow.NewMessageID()}, failure.UnknownMessageID},
		{"another session's message", workflow.ResolveParams{MessageID: foreign.ID}, failure.UnknownMessageID},
		{"resolution 2001", workflow.ResolveParams{MessageID: note.ID, Resolution: strings.Repeat("r", workflow.ResolutionMaxChars+1)}, failure.InvalidArguments},
	} {
		c.p.SessionID = e.sess.ID
		_, _, err := e.board.Resolve(ctx, c.p)
		if failure.KindOf(err) != c.kind {
			t.Errorf("resolve, %s: got %v, want %s", c.name, err, c.kind)
		}
	}
	for _, c := range []struct {
		name, id string
		kind     failure.Kind
	}{
		{"malformed id", "todo", failure.InvalidArguments},
		{"unknown id", workflow.NewMessageID(), failure.UnknownMessageID},
		{"another session's todo", foreign.ID, failure.UnknownMessageID},
		{"not a todo", note.ID, failure.SessionMessageNotTodo},
	} {
		_, err := e.board.Assignment(ctx, e.sess.ID, c.id)
		if failure.KindOf(err) != c.kind {
			t.Errorf("assignment, %s: got %v, want %s", c.name, err, c.kind)
		}
	}
	_, err := e.board.Complete(ctx, workflow.CompleteParams{SessionID: e.sess.ID, MessageID: note.ID, Answer: "a", Fence: zeroFence})
	wantKind(t, err, failure.InvalidArguments) // no completion_key
	if e.snap(t, e.sess.ID) != before || e.snap(t, other.ID) != beforeOther {
		t.Fatal("a refused resolve or assignment changed a board")
	}
	r, changed, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: note.ID, Resolution: strings.Repeat("r", workflow.ResolutionMaxChars)})
	if err != nil || !changed || r.Status != workflow.MessageResolved {
		t.Fatalf("resolve at the bound: %v", err)
	}
	e.l.Close(t, other.ID)
	beforeOther = e.snap(t, other.ID)
	_, _, err = e.board.Resolve(ctx, workflow.ResolveParams{SessionID: other.ID, MessageID: foreign.ID})
	wantKind(t, err, failure.SessionClosed)
	if e.snap(t, other.ID) != beforeOther {
		t.Fatal("a resolve in a closed session changed its board")
	}
}

// retentionKeepsOpenTodoReplyingToTodo: an open todo posted as a reply
// to an open todo is an open todo: retention never removes it, even when
// only replies to open todos are left to remove.
func retentionKeepsOpenTodoReplyingToTodo(t *testing.T, open Opener) {
	e := newEnv(t, open)
	parent := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "parent"})
	child := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "sub-todo", ReplyTo: parent.ID})
	note := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "reply", ReplyTo: parent.ID})
	for i := 3; i < workflow.MaxRetainedMessages; i++ {
		e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: fmt.Sprint("t", i)})
	}
	e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "over the bound"})
	retained := func(id string) bool {
		ms, _, _ := e.board.List(context.Background(), e.sess.ID, workflow.MessageFilter{MessageID: id})
		return len(ms) == 1
	}
	if !retained(child.ID) || retained(note.ID) || !retained(parent.ID) {
		t.Fatal("retention removed an open todo, or not the reply")
	}
	before := e.snap(t, e.sess.ID)
	_, _, err := e.board.Post(context.Background(), workflow.PostParams{SessionID: e.sess.ID, Kind: workflow.MessageTodo, Body: "one more"})
	wantKind(t, err, failure.Conflict)
	if e.snap(t, e.sess.ID) != before || !retained(child.ID) {
		t.Fatal("a refused post changed the board")
	}
}

// discussionSummaryBounds: the open lists hold the newest 10 of each
// kind and the recent lists 5; a body over 240 characters is cut and
// marked; State reports the counters the summary is built from.
func discussionSummaryBounds(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	var questions []string
	for i := range workflow.SummaryOpenPerKind + 1 {
		questions = append(questions, e.post(t, workflow.PostParams{Kind: workflow.MessageQuestion, Body: fmt.Sprint("q", i)}).ID)
	}
	for i := range workflow.SummaryRecentPerKind + 1 {
		e.post(t, workflow.PostParams{Kind: workflow.MessageDecision, Body: fmt.Sprint("d", i)})
	}
	atBound := e.post(t, workflow.PostParams{Kind: workflow.MessageRisk, Body: strings.Repeat("r", workflow.SummaryExcerptChars)})
	over := e.post(t, workflow.PostParams{Kind: workflow.MessageRisk, Body: strings.Repeat("é", workflow.SummaryExcerptChars+1)})
	d, err := e.board.Summary(ctx, e.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := d.Open[workflow.MessageQuestion]
	if len(q) != workflow.SummaryOpenPerKind || q[0].ID != questions[len(questions)-1] || d.Counts[workflow.MessageQuestion][workflow.MessageOpen] != workflow.SummaryOpenPerKind+1 {
		t.Fatalf("open questions: %d, newest %s", len(q), q[0].ID)
	}
	if len(d.Recent[workflow.MessageDecision]) != workflow.SummaryRecentPerKind {
		t.Fatalf("recent decisions: %d", len(d.Recent[workflow.MessageDecision]))
	}
	risks := d.Open[workflow.MessageRisk]
	if len(risks) != 2 || risks[0].ID != over.ID || !risks[0].Truncated || len([]rune(risks[0].Message)) != workflow.SummaryExcerptChars ||
		risks[1].ID != atBound.ID || risks[1].Truncated {
		t.Fatalf("risk excerpts: %+v", risks)
	}
	st, err := e.board.State(ctx, e.sess.ID)
	if err != nil || st.Retained != d.Retained || st.Posted != int64(len(questions)+workflow.SummaryRecentPerKind+3) || st.ObservationRevision != st.Posted {
		t.Fatalf("state %+v (%v)", st, err)
	}
	_, err = e.board.State(ctx, workflow.NewSessionID())
	wantKind(t, err, failure.UnknownSessionID)
}
