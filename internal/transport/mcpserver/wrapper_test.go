package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
)

func TestSplitArguments(t *testing.T) {
	ack := "wc_msg_" + strings.Repeat("a", 32)
	args, w, err := splitArguments(json.RawMessage(`{"project":"p","recording_session_id":"wc_sess_x","ack_session_message_ids":["`+ack+`"],"context_request":["webcodex.workflow"]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if string(args) != `{"project":"p"}` || w.recorder != "wc_sess_x" || w.acks[0] != ack || w.context[0] != "webcodex.workflow" {
		t.Fatalf("args %s wrapper %+v", args, w)
	}
	// Arguments without wrapper members pass through byte for byte.
	in := json.RawMessage(`{"b":1, "a":2}`)
	if out, _, _ := splitArguments(in, true); string(out) != string(in) {
		t.Fatalf("rewrote %s as %s", in, out)
	}
	many := make([]string, MaxAckIDs+1)
	for i := range many {
		many[i] = `"` + ack + `"`
	}
	keys := make([]string, MaxContextKeys+1)
	for i := range keys {
		keys[i] = `"k"`
	}
	// An ACK never gates a call: too many or malformed ids pass whole, for
	// session_attention to judge each one.
	for _, raw := range []string{`{"ack_session_message_ids":[` + strings.Join(many, ",") + `]}`, `{"ack_session_message_ids":["wc_msg_nope"]}`} {
		var want struct {
			Acks []string `json:"ack_session_message_ids"`
		}
		json.Unmarshal([]byte(raw), &want)
		args, w, err := splitArguments(json.RawMessage(raw), true)
		if err != nil || string(args) != `{}` || strings.Join(w.acks, ",") != strings.Join(want.Acks, ",") {
			t.Fatalf("%s: args %s acks %v err %v", raw, args, w.acks, err)
		}
	}
	for name, raw := range map[string]string{
		"ErrRecorderType":    `{"recording_session_id":5}`,
		"ErrRecorderLong":    `{"recording_session_id":"` + strings.Repeat("x", MaxRecordingSessionIDBytes+1) + `"}`,
		"ErrAckType":         `{"ack_session_message_ids":"` + ack + `"}`,
		"ErrContextType":     `{"context_request":{"webcodex.workflow":true}}`,
		"ErrContextTooMany":  `{"context_request":[` + strings.Join(keys, ",") + `]}`,
		"ErrContextKeyEmpty": `{"context_request":[""]}`,
		"ErrContextKeyLong":  `{"context_request":["` + strings.Repeat("k", MaxContextKeyBytes+1) + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := splitArguments(json.RawMessage(raw), true); failure.KindOf(err) != failure.InvalidArguments {
				t.Fatalf("got %v, want invalid_arguments", err)
			}
		})
	}
}

func TestClientWindow(t *testing.T) {
	p := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_1", Owner: "local"}
	q := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_2", Owner: "local"}
	a := clientWindow(map[string]any{"openai/session": "v1/abc"}, p)
	if len(a) != 64 || strings.Contains(a, "abc") {
		t.Fatalf("hash %q", a)
	}
	if a != clientWindow(map[string]any{"openai/session": "v1/abc"}, p) {
		t.Fatal("not deterministic")
	}
	if a == clientWindow(map[string]any{"openai/session": "v1/abc"}, q) {
		t.Fatal("not bound to the principal")
	}
	for _, bad := range []any{nil, "", 5, "has space", "ctl\x01", strings.Repeat("x", MaxWindowBytes+1)} {
		if got := clientWindow(map[string]any{"openai/session": bad}, p); got != "" {
			t.Errorf("malformed %q hashed to %s", bad, got)
		}
	}
}

// TestKernelSeesOnlyTheHash connects a real go-sdk client over in-memory
// transports and captures what the kernel receives.
func TestKernelSeesOnlyTheHash(t *testing.T) {
	var mu sync.Mutex
	var records []kernel.Record
	env := kerneltest.New(t, func(r *kernel.Registry) {
		kernel.Register(r, kernel.Spec[struct {
			kernel.ProjectRef
		}, struct{}]{
			Name: "noop", Description: "does nothing", Scopes: []auth.Scope{auth.ScopeProjectRead},
			Handler: func(context.Context, *kernel.Invocation, struct{ kernel.ProjectRef }) (struct{}, error) {
				return struct{}{}, nil
			},
		})
	})
	k := kernel.New(kernel.Options{Registry: env.Kernel.Registry(), Projects: kerneltest.Projects{env.Project.ID: env.Project},
		Evidence: func(_ context.Context, r kernel.Record) (kernel.Appended, error) {
			mu.Lock()
			records = append(records, r)
			mu.Unlock()
			return kernel.Appended{}, nil
		}})
	local := auth.LocalUser()
	srv := New(Options{Kernel: k, Local: local, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	go srv.MCP().Run(context.Background(), st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "9"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const raw = "v1/conversation-42"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{"project": env.Project.ID}, Meta: mcp.Meta{"openai/session": raw}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	r := records[0]
	// Recompute the expected hash independently of clientWindow.
	h := sha256.New()
	for _, f := range []string{"webcodex.client-window.v1", string(local.Kind), local.ID, local.Owner, raw} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	if r.ClientWindow != hex.EncodeToString(h.Sum(nil)) || strings.Contains(r.ClientWindow, "conversation") {
		t.Fatalf("kernel got window %q", r.ClientWindow)
	}
	if r.Source != kernel.SourceMCP || r.ProtocolEra != EraModern || r.ClientName != "c/9" {
		t.Fatalf("record %+v", r)
	}
}
