package board

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestCompleteRefusesUnkeyedFences: complete_session_message takes only
// a fence get_session_assignment issued. The old unkeyed wsa2_ fence
// (computable from the todo alone) and a real fence with one bit flipped
// are invalid_assignment_fence and complete nothing; the real fence
// completes.
func TestCompleteRefusesUnkeyedFences(t *testing.T) {
	ctx := context.Background()
	e := newStaleEnv(t)
	id := e.todo(t)
	a := e.fetch(t, "", id)
	bind := sha256.Sum256([]byte("webcodex assignment fence bind v2\x00" + e.session + "\x00" + id))
	old := "wsa2_" + base64.RawURLEncoding.EncodeToString(append(bind[:8], make([]byte, 8)...))
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a.Fence, workflow.FencePrefix))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1
	flipped := workflow.FencePrefix + base64.RawURLEncoding.EncodeToString(raw)
	complete := func(fence string) (workflow.Completion, error) {
		return e.tools.complete(ctx, &kernel.Invocation{}, CompleteInput{RequiredSessionRef: kernel.RequiredSessionRef{SessionID: e.session},
			MessageID: id, Answer: "done", CompletionKey: "k1", ExpectedFence: fence})
	}
	for name, f := range map[string]string{"old wsa2_ fence": old, "one bit flipped": flipped} {
		if c, err := complete(f); failure.KindOf(err) != failure.InvalidAssignmentFence {
			t.Errorf("%s: got %v (answer %q); want invalid_assignment_fence", name, err, c.Answer.ID)
		}
	}
	if now := e.fetch(t, "", id); !now.Completable || now.Todo.Status != workflow.MessageOpen || now.Fence != a.Fence {
		t.Fatalf("a refused fence changed the assignment: %+v", now)
	}
	if c, err := complete(a.Fence); err != nil || c.Todo.Status != workflow.MessageResolved {
		t.Fatalf("complete with the real fence: %+v %v", c, err)
	}
}
