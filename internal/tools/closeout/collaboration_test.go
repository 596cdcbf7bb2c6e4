package closeout_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// post puts a message on the env's session board directly (no ledger
// event), returning its id.
func (e *env) post(kind workflow.MessageKind, body string, ack bool) string {
	e.T.Helper()
	m, _, err := e.board.Post(context.Background(), workflow.PostParams{SessionID: e.id, Kind: kind, Body: body, RequiresAck: ack})
	if err != nil {
		e.T.Fatal(err)
	}
	return m.ID
}

func (e *env) resolve(id string) {
	e.T.Helper()
	if _, _, err := e.board.Resolve(context.Background(), workflow.ResolveParams{SessionID: e.id, MessageID: id}); err != nil {
		e.T.Fatal(err)
	}
}

func intOf(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// The brief's collaboration counts and the closeout's advisories are the
// board's open messages, counted in the fence's snapshot.
func TestCollaborationCounts(t *testing.T) {
	e := newHandoffEnv(t)
	out, _ := e.handoff(nil)
	a := out.HandoffBrief.Attention
	if intOf(a.OpenTodos) != 0 || intOf(a.UnresolvedAckRequired) != 0 || slices.Contains(out.HandoffBrief.Basis.ReasonCodes, handoff.BasisGuidanceUnavailable) {
		t.Fatalf("empty board: %+v %v", a, out.HandoffBrief.Basis.ReasonCodes)
	}
	r, _ := e.finish(nil)
	for _, code := range []string{closeout.AdvisoryOpenTodos, closeout.AdvisoryOpenQuestions, closeout.AdvisoryOpenRisks,
		closeout.AdvisoryUnresolvedAckRequired, closeout.AdvisoryCollaborationUnavailable} {
		if slices.Contains(r.Advisories, code) {
			t.Fatalf("empty board advises %s: %v", code, r.Advisories)
		}
	}

	todo := e.post(workflow.MessageTodo, "write the parser", false)
	e.post(workflow.MessageTodo, "write the printer", false)
	q := e.post(workflow.MessageQuestion, "which format?", false)
	e.post(workflow.MessageQuestion, "which version?", true)
	e.post(workflow.MessageRisk, "the fixture is flaky", false)
	e.post(workflow.MessageGuidance, "keep the API stable", true)
	note := e.post(workflow.MessageNote, "fyi", true)
	e.resolve(q)
	e.resolve(note) // resolved: no longer counted, ACK-required or not

	out, _ = e.handoff(nil)
	a = out.HandoffBrief.Attention
	if intOf(a.OpenTodos) != 2 || intOf(a.OpenQuestions) != 1 || intOf(a.OpenRisks) != 1 || intOf(a.OpenGuidance) != 1 ||
		intOf(a.UnresolvedAckRequired) != 2 {
		t.Fatalf("counts: todos %d questions %d risks %d guidance %d ack %d", intOf(a.OpenTodos), intOf(a.OpenQuestions),
			intOf(a.OpenRisks), intOf(a.OpenGuidance), intOf(a.UnresolvedAckRequired))
	}
	if out.HandoffBrief.Progress.State != handoff.StateBlocked {
		t.Fatalf("an open risk blocks: %s", out.HandoffBrief.Progress.State)
	}
	r, _ = e.finish(nil)
	for _, code := range []string{closeout.AdvisoryOpenTodos, closeout.AdvisoryOpenQuestions, closeout.AdvisoryOpenRisks,
		closeout.AdvisoryUnresolvedAckRequired} {
		if !slices.Contains(r.Advisories, code) || !slices.Contains(r.TaskOutcome.Reasons, code) {
			t.Fatalf("advisories %v lack %s", r.Advisories, code)
		}
	}
	if r.TaskOutcome.Status == closeout.StatusFail || len(r.HardBlockers) != 0 {
		t.Fatalf("open collaboration never blocks a closeout: %+v %v", r.TaskOutcome, r.HardBlockers)
	}
	if intOf(r.HandoffBrief.Attention.OpenTodos) != 2 {
		t.Fatalf("finish brief: %+v", r.HandoffBrief.Attention)
	}
	e.resolve(todo)
	out, _ = e.handoff(nil)
	if intOf(out.HandoffBrief.Attention.OpenTodos) != 1 {
		t.Fatalf("after resolve: %+v", out.HandoffBrief.Attention)
	}
}

// A board change alone (no ledger event) while the brief is gathered moves
// the fence's second dimension: the brief says so.
func TestSnapshotFenceMessageDimension(t *testing.T) {
	e := newHandoffEnv(t)
	before, _ := e.svc.Get(context.Background(), e.id)
	e.store.during = func() { e.post(workflow.MessageNote, "posted while gathering", false) }
	out, _ := e.handoff(nil)
	b := out.HandoffBrief
	if b.Basis.Complete || !slices.Contains(b.Basis.ReasonCodes, handoff.BasisSessionChangedDuringSnapshot) {
		t.Fatalf("board raced: %+v", b.Basis)
	}
	r, _ := e.finish(nil)
	if !slices.Contains(r.Advisories, closeout.AdvisorySessionChangedDuringSnapshot) {
		t.Fatalf("finish advisories: %v", r.Advisories)
	}
	// The posts changed no ledger event: only the message dimension moved
	// (the two calls' own events are 4).
	after, _ := e.svc.Get(context.Background(), e.id)
	if after.EventsObserved != before.EventsObserved+4 {
		t.Fatalf("events_observed %d → %d", before.EventsObserved, after.EventsObserved)
	}
	e.store.during = nil
	out, _ = e.handoff(nil)
	if slices.Contains(out.HandoffBrief.Basis.ReasonCodes, handoff.BasisSessionChangedDuringSnapshot) {
		t.Fatalf("quiet again: %+v", out.HandoffBrief.Basis)
	}
}

// The same ledger and board give byte-identical briefs, with messages on
// the board; one more post changes them.
func TestSameBoardSameBytes(t *testing.T) {
	e := newHandoffEnv(t)
	e.post(workflow.MessageTodo, "write the parser", true)
	e.post(workflow.MessageRisk, "flaky", false)
	e.handoff(nil) // the first call's own events change the ledger
	_, b := e.handoff(nil)
	_, c := e.handoff(nil)
	if string(b) != string(c) {
		t.Fatalf("briefs differ:\n%s\n%s", b, c)
	}
	e.post(workflow.MessageTodo, "one more", false)
	_, d := e.handoff(nil)
	if string(c) == string(d) {
		t.Fatal("a new todo left the brief unchanged")
	}
}

// Without a snapshot reader the counts are unavailable, never zero.
func TestCollaborationUnavailable(t *testing.T) {
	st, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	p := kerneltest.TempProject(t, map[string]string{"calc.go": "package calc\n"})
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	closeout.Register(reg, &closeout.Tools{Sessions: svc})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	e := &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc}
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "x"})).SessionID
	out, _ := e.handoff(nil)
	if out.HandoffBrief.Attention.OpenTodos != nil || out.HandoffBrief.Attention.UnresolvedAckRequired != nil ||
		!slices.Contains(out.HandoffBrief.Basis.ReasonCodes, handoff.BasisGuidanceUnavailable) {
		t.Fatalf("unavailable: %+v %v", out.HandoffBrief.Attention, out.HandoffBrief.Basis.ReasonCodes)
	}
	r, _ := e.finish(nil)
	if !slices.Contains(r.Advisories, closeout.AdvisoryCollaborationUnavailable) {
		t.Fatalf("advisories: %v", r.Advisories)
	}
}
