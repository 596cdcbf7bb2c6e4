package boardtest

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// sessionSnapshot: SessionSnapshot reads the session's events_observed,
// the board's observation revision (0 before its first message) and the
// open counts the revision's board holds; an unknown session is
// unknown_session_id.
func sessionSnapshot(t *testing.T, open Opener) {
	ctx := context.Background()
	e := newEnv(t, open)
	snap := func(id string) workflow.SessionSnapshot {
		t.Helper()
		s, err := e.st.SessionSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := snap(e.sess.ID); s.Fence != (workflow.SnapshotFence{EventsObserved: e.sess.EventsObserved}) || s.Collaboration != (workflow.CollaborationCounts{}) {
		t.Fatalf("a new session's snapshot: %+v", s)
	}
	e.post(t, workflow.PostParams{Kind: workflow.MessageGuidance, Body: "vet first", RequiresAck: true})
	q := e.post(t, workflow.PostParams{Kind: workflow.MessageQuestion, Body: "which file?"})
	e.post(t, workflow.PostParams{Kind: workflow.MessageRisk, Body: "flaky"})
	todo := e.post(t, workflow.PostParams{Kind: workflow.MessageTodo, Body: "fix it", RequiresAck: true})
	e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "fyi"})
	if _, _, err := e.board.Resolve(ctx, workflow.ResolveParams{SessionID: e.sess.ID, MessageID: q.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.complete(workflow.CompleteParams{MessageID: todo.ID, Fence: e.assign(t, todo.ID).Fence}); err != nil {
		t.Fatal(err)
	}
	st, err := e.board.State(ctx, e.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := workflow.SessionSnapshot{
		Fence:         workflow.SnapshotFence{EventsObserved: e.sess.EventsObserved, MessageObservationRevision: st.ObservationRevision},
		Collaboration: workflow.CollaborationCounts{OpenGuidance: 1, OpenRisks: 1, UnresolvedAckRequired: 1},
	}
	if s := snap(e.sess.ID); s != want || st.ObservationRevision != 8 {
		t.Fatalf("snapshot %+v, want %+v (revision %d)", s, want, st.ObservationRevision)
	}
	_, err = e.st.SessionSnapshot(ctx, workflow.NewSessionID())
	wantKind(t, err, failure.UnknownSessionID)
}
