package workflowdb_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// boardLedger is a session whose board holds a completed todo (with its
// answer), an open todo with a reply, and a note; exported.
type boardLedger struct {
	e          *boardEnv
	done, open workflow.Message
	reply      workflow.Message
	complete   workflow.CompleteParams
	completion workflow.Completion
	token      string
	doc        []byte
}

func newBoardLedger(t *testing.T) *boardLedger {
	t.Helper()
	ctx := context.Background()
	l := &boardLedger{e: newBoardEnv(t)}
	e := l.e
	l.done = e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "write the parser", DeliveryKey: "todo-1", RequiresAck: true})
	l.open = e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "write the printer", Tags: []string{"printer"}})
	l.reply = e.post(t, workflow.PostParams{Kind: workflow.MessageQuestion, Body: "which format?", ReplyTo: l.open.ID})
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "fyi"})
	a, err := e.board.Assignment(ctx, e.sess.ID, l.done.ID)
	if err != nil {
		t.Fatal(err)
	}
	l.complete = workflow.CompleteParams{SessionID: e.sess.ID, MessageID: l.done.ID, Answer: "parser written",
		CompletionKey: "done-1", Fence: a.Fence}
	if l.completion, err = e.board.Complete(ctx, l.complete); err != nil {
		t.Fatal(err)
	}
	o, err := e.board.Observe(ctx, workflow.ObserveParams{SessionID: e.sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	l.token = o.Token
	led, err := workflow.Export(ctx, e.st, []string{e.sess.ID}, e.sess.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if b := led.Sessions[0].Board; b == nil || len(b.Messages) != 5 || b.Posted != 5 || b.ObservationRevision != 6 {
		t.Fatalf("exported board: %+v", b)
	}
	l.doc, _ = json.Marshal(led)
	return l
}

// A board exported and imported into a fresh data directory lists and
// assigns exactly as before; its fences, issued under the exported
// ledger's key, fail closed.
func TestLedgerBoardRoundTrip(t *testing.T) {
	ctx := context.Background()
	l := newBoardLedger(t)
	id := l.e.sess.ID
	before := l.e.snap(t, id)

	e2 := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
	e2.open(t)
	rep, err := workflow.ImportLedgerReport(ctx, e2.st, strings.NewReader(string(l.doc)), knownProj)
	if err != nil || rep.Sessions != 1 || rep.Messages != 5 || rep.DiscardedMessages != 0 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	// Everything but the generation is as it was.
	after := e2.snap(t, id)
	st1, _ := l.e.board.State(ctx, id)
	st2, _ := e2.board.State(ctx, id)
	if st2.Generation == st1.Generation || st2.Generation == 0 {
		t.Fatalf("generation %d, exported board's %d: a restored board needs a new one", st2.Generation, st1.Generation)
	}
	st2.Generation = st1.Generation
	if st1 != st2 || stripState(before) != stripState(after) {
		t.Fatalf("restored board differs:\n%s\n%s", before, after)
	}

	ms, _, err := e2.board.List(ctx, id, workflow.MessageFilter{Kind: workflow.MessageTodo})
	if err != nil || len(ms) != 2 || ms[0].ID != l.open.ID || ms[1].Status != workflow.MessageResolved {
		t.Fatalf("list: %v %+v", err, ms)
	}
	// The restored ledger has its own key (decision 0057): a fence the
	// exported board issued fails closed, for a retry of the recorded
	// completion as for another key or payload (a completed todo has no
	// fresh fence), and the assignment shows that completion instead.
	other := l.complete
	other.CompletionKey = "done-2"
	conflict := l.complete
	conflict.Answer = "something else"
	for _, p := range []workflow.CompleteParams{l.complete, other, conflict} {
		_, err = e2.board.Complete(ctx, p)
		wantKind(t, err, failure.InvalidAssignmentFence)
	}
	if a, err := e2.board.Assignment(ctx, id, l.done.ID); err != nil || a.Completable || a.Reason != workflow.NotCompletableResolved ||
		a.Todo.CompletionID != l.completion.Todo.CompletionID || a.Todo.ResolvedByMessageID != l.completion.Answer.ID {
		t.Fatalf("assignment of the completed todo: %v %+v", err, a)
	}
	// The delivery key replays the original post.
	m, replayed, err := e2.board.Post(ctx, workflow.PostParams{SessionID: id, Kind: workflow.MessageTodo, Body: "write the parser", DeliveryKey: "todo-1", RequiresAck: true})
	if err != nil || !replayed || m.ID != l.done.ID {
		t.Fatalf("delivery replay: %v %v %+v", err, replayed, m)
	}
	// The open todo is in the same state, fenced under the restored
	// ledger's key: a new fence; the exported board's one is refused.
	a1, _ := l.e.board.Assignment(ctx, id, l.open.ID)
	a2, err := e2.board.Assignment(ctx, id, l.open.ID)
	if err != nil || !a2.Completable || a2.Fence == a1.Fence || len(a2.Fence) != workflow.FenceChars || len(a2.Replies) != 1 {
		t.Fatalf("assignment: %v %+v", err, a2)
	}
	_, err = e2.board.Complete(ctx, workflow.CompleteParams{SessionID: id, MessageID: l.open.ID, Answer: "printer written", CompletionKey: "p-1", Fence: a1.Fence})
	wantKind(t, err, failure.InvalidAssignmentFence)
	if stripState(e2.snap(t, id)) != stripState(after) {
		t.Fatal("replays changed the restored board")
	}
	// A token of the exported board fails closed on the restored one; a
	// baseline gives a token that works.
	_, err = e2.board.Observe(ctx, workflow.ObserveParams{SessionID: id, Token: l.token})
	wantKind(t, err, failure.InvalidObservationToken)
	o, err := e2.board.Observe(ctx, workflow.ObserveParams{SessionID: id})
	if err != nil || !o.Baseline {
		t.Fatalf("baseline: %v %+v", err, o)
	}
	e2.post(t, workflow.PostParams{SessionID: id, Kind: workflow.MessageNote, Body: "after restore"})
	o, err = e2.board.Observe(ctx, workflow.ObserveParams{SessionID: id, Token: o.Token})
	if err != nil || len(o.Messages) != 1 || o.HistoryLost {
		t.Fatalf("observe after restore: %v %+v", err, o)
	}
}

// stripState drops the board-state line (which holds the generation) of
// a boardEnv.snap.
func stripState(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

// editMessage rewrites one message member of the ledger's first board.
func editMessage(t *testing.T, doc []byte, index int, member string, v any) []byte {
	t.Helper()
	var led map[string]any
	if err := json.Unmarshal(doc, &led); err != nil {
		t.Fatal(err)
	}
	row := led["sessions"].([]any)[0].(map[string]any)
	msgs := row["board"].(map[string]any)["messages"].([]any)
	m := msgs[index].(map[string]any)
	if v == nil {
		delete(m, member)
	} else {
		m[member] = v
	}
	out, _ := json.Marshal(led)
	return out
}

// An edited message row cannot prove its shape: it is discarded and
// counted, and the board is left as retention would have left it.
func TestLedgerBoardEditedRowDiscarded(t *testing.T) {
	ctx := context.Background()
	l := newBoardLedger(t)
	id := l.e.sess.ID
	// Row 3 is the reply to the open todo: edit its text.
	doc := editMessage(t, l.doc, 2, "message", "which format? (edited)")

	e2 := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
	e2.open(t)
	rep, err := workflow.ImportLedgerReport(ctx, e2.st, strings.NewReader(string(doc)), knownProj)
	if err != nil || rep.Sessions != 1 || rep.Messages != 4 || rep.DiscardedMessages != 1 || len(rep.Discarded) != 1 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	d := rep.Discarded[0]
	if d.Index != 3 || d.ID != l.reply.ID || !strings.Contains(d.Reason, "digest") || !strings.Contains(d.Where, id) {
		t.Fatalf("discard: %+v", d)
	}
	if _, ok, _ := message(t, e2, id, l.reply.ID); ok {
		t.Fatal("the edited row was imported")
	}
	st, _ := e2.board.State(ctx, id)
	if st.Retained != 4 || st.Removed != 1 || st.Posted != 5 || st.ObservationLowWatermark < l.reply.ObservationRevision {
		t.Fatalf("state: %+v", st)
	}
	// Its todo lost a reply: not completable from stale context.
	a, err := e2.board.Assignment(ctx, id, l.open.ID)
	if err != nil || a.Completable || a.Fence != "" {
		t.Fatalf("assignment after a lost reply: %v %+v", err, a)
	}
	// The completion is still recorded (its old fence fails closed).
	if a, err := e2.board.Assignment(ctx, id, l.done.ID); err != nil || a.Todo.CompletionID != l.completion.Todo.CompletionID {
		t.Fatalf("completed todo: %v %+v", err, a)
	}
}

func message(t *testing.T, e *boardEnv, id, msg string) (workflow.Message, bool, error) {
	t.Helper()
	ms, _, err := e.board.List(context.Background(), id, workflow.MessageFilter{MessageID: msg})
	if err != nil || len(ms) == 0 {
		return workflow.Message{}, false, err
	}
	return ms[0], true, nil
}

// Every kind of message row that cannot prove its shape is discarded and
// counted; board counters that contradict each other refuse the import.
func TestLedgerBoardBadRows(t *testing.T) {
	ctx := context.Background()
	l := newBoardLedger(t)
	for _, c := range []struct {
		name   string
		index  int
		member string
		v      any
		reason string
	}{
		{"unknown member", 3, "extra", "x", "unknown field"},
		{"missing member", 3, "seq", nil, "missing member"},
		{"unknown kind", 3, "kind", "memo", "digest"},
		{"missing digest", 3, "digest", nil, "missing member"},
		{"revision beyond the board", 3, "observation_revision", 99, "digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e2 := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
			e2.open(t)
			doc := editMessage(t, l.doc, c.index, c.member, c.v)
			rep, err := workflow.ImportLedgerReport(ctx, e2.st, strings.NewReader(string(doc)), knownProj)
			if err != nil || rep.DiscardedMessages != 1 || rep.Messages != 4 || !strings.Contains(rep.Discarded[0].Reason, c.reason) {
				t.Fatalf("import: %+v %v", rep, err)
			}
		})
	}
	// Contradicting counters refuse the whole file, and nothing is written.
	var led map[string]any
	json.Unmarshal(l.doc, &led)
	led["sessions"].([]any)[0].(map[string]any)["board"].(map[string]any)["posted"] = 9
	doc, _ := json.Marshal(led)
	e2 := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
	e2.open(t)
	_, err := workflow.ImportLedgerReport(ctx, e2.st, strings.NewReader(string(doc)), knownProj)
	if failure.KindOf(err) != failure.InvalidLedger || !strings.Contains(err.Error(), "posted 9") {
		t.Fatalf("contradicting counters: %v", err)
	}
	if _, err := e2.svc.Get(ctx, l.e.sess.ID); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("refused import wrote the session: %v", err)
	}
}

// A row without a board member (a ledger written before boards) imports
// with an empty board.
func TestLedgerWithoutBoard(t *testing.T) {
	ctx := context.Background()
	l := newBoardLedger(t)
	var led map[string]any
	json.Unmarshal(l.doc, &led)
	delete(led["sessions"].([]any)[0].(map[string]any), "board")
	doc, _ := json.Marshal(led)
	e2 := &boardEnv{path: filepath.Join(t.TempDir(), "workflow.db")}
	e2.open(t)
	rep, err := workflow.ImportLedgerReport(ctx, e2.st, strings.NewReader(string(doc)), knownProj)
	if err != nil || rep.Sessions != 1 || rep.Messages != 0 {
		t.Fatalf("import: %+v %v", rep, err)
	}
	ms, _, err := e2.board.List(ctx, l.e.sess.ID, workflow.MessageFilter{})
	if err != nil || len(ms) != 0 {
		t.Fatalf("list: %v %+v", err, ms)
	}
	// Its board starts from nothing; a post works.
	e2.post(t, workflow.PostParams{SessionID: l.e.sess.ID, Kind: workflow.MessageNote, Body: "new"})
}
