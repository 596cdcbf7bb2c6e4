package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/workflow"
)

// spyAmbient records the calls it projects and adds a block naming the
// recorder.
type spyAmbient struct {
	mu    sync.Mutex
	calls []kernel.AmbientCall
}

func (s *spyAmbient) Project(_ context.Context, c kernel.AmbientCall, p *kernel.Projections) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	id := ""
	if c.Recorder != nil {
		id = c.Recorder.ID
	}
	p.SessionAttention = &workflow.Attention{SessionID: id, AckAccepted: c.AckMessageIDs}
}

// TestAmbientSeam: projections run after the effect for calls that reached
// their tool on MCP or REST, with the verified recorder and the ACK ids;
// never for refused calls or internal ones; and never change Body (the
// digested {success, output, error}).
func TestAmbientSeam(t *testing.T) {
	e := newEnv(t)
	sess := e.start(t, "")
	spy := &spyAmbient{}
	k := kernel.New(kernel.Options{Registry: e.k.Registry(), Sessions: e.svc,
		Projects: projects{projA: {ID: projA, Name: "a", Root: e.root}}, Ambient: []kernel.Ambient{spy}})
	acks := []string{"wc_msg_x"}
	call := func(src kernel.Source, tool, recorder string) kernel.Result {
		return k.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: json.RawMessage(`{"project":"` + projA + `","text":"hi"}`),
			RecordingSessionID: recorder, AckMessageIDs: acks, Principal: auth.LocalUser(), Source: src})
	}
	plain := call(kernel.SourceInternal, "echo", sess)
	if len(spy.calls) != 0 || !plain.Projections.Empty() {
		t.Fatalf("an internal call was projected: %+v", spy.calls)
	}
	for _, src := range []kernel.Source{kernel.SourceMCP, kernel.SourceREST} {
		res := call(src, "echo", sess)
		if !res.Success || res.SessionAttention == nil || res.SessionAttention.SessionID != sess {
			t.Fatalf("%s: %+v", src, res)
		}
		if !bytes.Equal(res.Body, plain.Body) {
			t.Fatalf("%s: projections changed Body: %s vs %s", src, res.Body, plain.Body)
		}
		if b, _ := json.Marshal(res); !bytes.Contains(b, []byte(`"session_attention":{"session_id":"`+sess+`"`)) {
			t.Fatalf("%s: wire shape %s", src, b)
		}
	}
	if c := spy.calls[0]; c.Tool != "echo" || c.Recorder == nil || c.Recorder.ID != sess || len(c.AckMessageIDs) != 1 || c.InvocationID == "" || !c.Success || c.Began.IsZero() {
		t.Fatalf("ambient call %+v", c)
	}
	// Refused calls (unknown tool, an invalid recorder claim) are not projected.
	n := len(spy.calls)
	if res := call(kernel.SourceMCP, "nope", sess); res.Success || !res.Projections.Empty() {
		t.Fatalf("unknown tool: %+v", res)
	}
	if res := call(kernel.SourceMCP, "echo", "wc_sess_"+"00000000000000000000000000000000"); res.Success || !res.Projections.Empty() {
		t.Fatalf("invalid recorder: %+v", res)
	}
	if len(spy.calls) != n {
		t.Fatalf("refused calls were projected: %+v", spy.calls[n:])
	}
	// Without a recorder the projection still runs (it judges ACK ids).
	if res := call(kernel.SourceREST, "echo", ""); res.SessionAttention == nil || spy.calls[len(spy.calls)-1].Recorder != nil {
		t.Fatalf("no recorder: %+v", res)
	}
}

// TestPeerAckReasonsAreTheBoards: the peer_messages block reports ack
// rejections with the board's reasons and shape.
func TestPeerAckReasonsAreTheBoards(t *testing.T) {
	if window.AckDuplicate != workflow.AckDuplicate || window.AckNotRequired != workflow.AckNotRequired {
		t.Fatalf("window reasons %q %q, board %q %q", window.AckDuplicate, window.AckNotRequired, workflow.AckDuplicate, workflow.AckNotRequired)
	}
	w, _ := json.Marshal(window.AckRejection{MessageID: "m", Reason: "r"})
	b, _ := json.Marshal(workflow.AckRejection{MessageID: "m", Reason: "r"})
	if string(w) != string(b) {
		t.Fatalf("shapes differ: %s vs %s", w, b)
	}
}
