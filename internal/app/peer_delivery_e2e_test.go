package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// ambientBlocks are the window plane's ambient members of a result.
type ambientBlocks struct {
	PeerMessages *window.Delivery           `json:"peer_messages"`
	Continuity   *kernel.RecorderContinuity `json:"recorder_continuity"`
	Attention    *workflow.Attention        `json:"session_attention"`
}

// peerFacts is a peer message's analysis facts once the behind writes
// are done.
func peerFacts(t *testing.T, s *server, id string) (first, last, count, ack int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.a.Stores.Window.(*windowdb.Store).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	first, last, count, ack, err := s.a.Stores.Window.(*windowdb.Store).Facts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return first, last, count, ack
}

func shownIDs(d *window.Delivery) []string {
	if d == nil {
		return nil
	}
	var ids []string
	for _, m := range d.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestPeerMessageDelivery: two windows of one principal on one project;
// an ordinary peer message is projected once on the recipient's next
// model-facing result, an ACK-required one on every call that does not
// list its id in ack_session_message_ids (an ACK, with no recorder,
// leaves out its body in that call's result only);
// ACK ids of that message from the sender's window or another principal
// are rejected and change nothing; a third principal sees nothing; a call
// with nothing to project has the same bytes as one with no window.
func TestPeerMessageDelivery(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	ctx := context.Background()
	bobTok, _, err := s.a.Auth.CreateToken(ctx, "bob", "bob", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	metaA, metaB, metaX := mcp.Meta{"openai/session": "deliver-A"}, mcp.Meta{"openai/session": "deliver-B"}, mcp.Meta{"openai/session": "deliver-X"}
	// The recipient speaks the legacy protocol era, the sender the modern.
	a, b, x := connectMCP(t, s, "", nil), connectMCP(t, s, rawLegacyVersion, nil), connectAs(t, s, bobTok)
	read := func(cs *mcp.ClientSession, meta mcp.Meta, acks ...string) (ambientBlocks, []byte) {
		t.Helper()
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		if len(acks) > 0 {
			args["ack_session_message_ids"] = acks
		}
		r, raw := callMCP(t, cs, "read_files", args, meta)
		if !r.Success {
			t.Fatalf("read_files: %s", raw)
		}
		var blk ambientBlocks
		if err := json.Unmarshal(raw, &blk); err != nil {
			t.Fatal(err)
		}
		return blk, raw
	}
	read(a, metaA)
	read(b, metaB)
	read(x, metaX)
	peerB := currentActivity(t, b, metaB).PeerID
	post := func(body string, ack bool) string {
		t.Helper()
		r, raw := callMCP(t, a, "post_peer_message", map[string]any{"peer_id": peerB, "message": body, "requires_ack": ack}, metaA)
		if !r.Success {
			t.Fatalf("post_peer_message: %s", raw)
		}
		return str(t, r.Output["message_id"])
	}
	ordinary := post("FYI: tests are green on main", false)
	acked := post("rebased main; pull before editing", true)

	// First call: both, the ACK-required one first.
	blk, _ := read(b, metaB)
	if got := shownIDs(blk.PeerMessages); len(got) != 2 || got[0] != acked || got[1] != ordinary {
		t.Fatalf("first projection %v, want [%s %s]", got, acked, ordinary)
	}
	if m := blk.PeerMessages.Messages[0]; !m.RequiresAck || m.Message != "rebased main; pull before editing" || m.FromPeer != currentActivity(t, a, metaA).PeerID {
		t.Fatalf("projected message %+v", m)
	}
	// Second: only the ACK-required one.
	blk, _ = read(b, metaB)
	if got := shownIDs(blk.PeerMessages); len(got) != 1 || got[0] != acked {
		t.Fatalf("second projection %v, want [%s]", got, acked)
	}
	if first, last, n, ack := peerFacts(t, s, ordinary); first == 0 || first != last || n != 1 || ack != 0 {
		t.Fatalf("ordinary facts first=%d last=%d count=%d ack=%d", first, last, n, ack)
	}
	if first, last, n, ack := peerFacts(t, s, acked); first == 0 || last < first || n != 2 || ack != 0 {
		t.Fatalf("ack-required facts first=%d last=%d count=%d ack=%d", first, last, n, ack)
	}

	// The sender's window and another principal cannot ACK it: rejected
	// like any id that is no message of theirs, nothing changes.
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
		meta mcp.Meta
	}{{"sender window", a, metaA}, {"other principal", x, metaX}} {
		blk, _ := read(c.cs, c.meta, acked)
		if blk.PeerMessages != nil {
			t.Errorf("%s: peer_messages %+v", c.name, blk.PeerMessages)
		}
		if blk.Attention == nil || len(blk.Attention.AckRejected) != 1 || blk.Attention.AckRejected[0].MessageID != acked ||
			blk.Attention.AckRejected[0].Reason != workflow.AckNoRecorder {
			t.Errorf("%s: session_attention %+v, want %s rejected", c.name, blk.Attention, acked)
		}
	}
	if _, _, n, ack := peerFacts(t, s, acked); n != 2 || ack != 0 {
		t.Fatalf("rejected ACKs changed the facts: count=%d ack=%d", n, ack)
	}

	// The recipient's ACK of the ordinary one is not_ack_required; of
	// the ACK-required one accepted (its body then left out).
	blk, _ = read(b, metaB, ordinary, acked)
	d := blk.PeerMessages
	if d == nil || len(d.Messages) != 0 || len(d.AckAccepted) != 1 || d.AckAccepted[0] != acked ||
		len(d.AckRejected) != 1 || d.AckRejected[0] != (window.AckRejection{MessageID: ordinary, Reason: workflow.AckNotRequired}) {
		t.Fatalf("ack block %+v", d)
	}
	if blk.Attention != nil {
		t.Fatalf("the board judged the window's peer message ids too: %+v", blk.Attention)
	}
	if _, _, n, ack := peerFacts(t, s, acked); n != 2 || ack == 0 {
		t.Fatalf("accepted ACK facts: count=%d ack=%d", n, ack)
	}
	// The ACK suppressed the body in that response only: the next call
	// omitting the id shows it again, while it is retained.
	blk, _ = read(b, metaB)
	if got := shownIDs(blk.PeerMessages); len(got) != 1 || got[0] != acked {
		t.Fatalf("after its ACK %v, want [%s] re-projected", got, acked)
	}
	// A third principal never saw anything: its result is the bytes of a
	// call with no window at all.
	blk, withWindow := read(x, metaX)
	_, without := read(x, nil)
	if blk.PeerMessages != nil || string(withWindow) != string(without) {
		t.Fatalf("a call with nothing to project differs:\n%s\n%s", withWindow, without)
	}
}

// TestPeerDeliveryBound: more waiting messages than a block shows are
// counted, not dropped: the next call shows the rest.
func TestPeerDeliveryBound(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	metaA, metaB := mcp.Meta{"openai/session": "bound-A"}, mcp.Meta{"openai/session": "bound-B"}
	cs := connectMCP(t, s, "", nil)
	args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	callMCP(t, cs, "read_files", args, metaA)
	callMCP(t, cs, "read_files", args, metaB)
	peerB := currentActivity(t, cs, metaB).PeerID
	n := window.MaxDeliveredMessages + 3
	long := strings.Repeat("y", window.DeliveryExcerptChars+500)
	for i := range n {
		body := "note " + string(rune('a'+i))
		if i == 0 {
			body = long
		}
		if r, raw := callMCP(t, cs, "post_peer_message", map[string]any{"peer_id": peerB, "message": body}, metaA); !r.Success {
			t.Fatalf("post: %s", raw)
		}
	}
	var seen []string
	for range 2 {
		_, raw := callMCP(t, cs, "read_files", args, metaB)
		var blk ambientBlocks
		decodeInto(t, raw, &blk)
		if blk.PeerMessages == nil {
			t.Fatalf("no block: %s", raw)
		}
		if len(seen) == 0 {
			m := blk.PeerMessages.Messages[0]
			if !m.Truncated || len(m.Message) > window.DeliveryExcerptChars || !strings.HasPrefix(long, m.Message[:100]) {
				t.Fatalf("long body shown as %d bytes, truncated=%v", len(m.Message), m.Truncated)
			}
		}
		seen = append(seen, shownIDs(blk.PeerMessages)...)
		if len(seen) == window.MaxDeliveredMessages && blk.PeerMessages.Omitted != 3 {
			t.Fatalf("first block omitted %d, want 3", blk.PeerMessages.Omitted)
		}
	}
	if len(seen) != n {
		t.Fatalf("shown %d messages over two calls, want %d", len(seen), n)
	}
}

// TestRecorderContinuityOnResult: a window that forgot its recorder gets
// the diagnostic naming its session on the result; the ledger is
// unchanged; the diagnostic is not sticky (a call with the recorder, or
// without a window, carries none).
func TestRecorderContinuityOnResult(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	meta := mcp.Meta{"openai/session": "forgetful-window"}
	w, raw := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "go"}, meta)
	if !w.Success {
		t.Fatalf("work_on_project: %s", raw)
	}
	sess := str(t, w.Output["session_id"])
	read := func(meta mcp.Meta, recorder string) ambientBlocks {
		t.Helper()
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		if recorder != "" {
			args["recording_session_id"] = recorder
		}
		r, raw := callMCP(t, cs, "read_files", args, meta)
		if !r.Success {
			t.Fatalf("read_files: %s", raw)
		}
		var blk ambientBlocks
		decodeInto(t, raw, &blk)
		return blk
	}
	if blk := read(meta, sess); blk.Continuity != nil {
		t.Fatalf("a call with its recorder got %+v", blk.Continuity)
	}
	before := exportLedger(t, s.a, sess)
	blk := read(meta, "")
	if c := blk.Continuity; c == nil || c.SuggestedSessionID != sess || c.Diagnostic != kernel.DiagnosticRecorderGap {
		t.Fatalf("forgot the recorder: %+v, want %s suggested", c, sess)
	}
	if after := exportLedger(t, s.a, sess); string(after) != string(before) {
		t.Fatal("the missed call was backfilled into the ledger")
	}
	if blk := read(nil, ""); blk.Continuity != nil {
		t.Fatalf("a call without a window got %+v", blk.Continuity)
	}
	if blk := read(mcp.Meta{"openai/session": "another-window"}, ""); blk.Continuity != nil {
		t.Fatalf("another window got %+v", blk.Continuity)
	}
}

// TestPeerAwareness: a meaningful call gets the peer_awareness hint when
// the set of its principal's other recently active windows on the project
// changes, not on every call; a status call and another principal's
// window get none.
func TestPeerAwareness(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	bobTok, _, err := s.a.Auth.CreateToken(context.Background(), "bob", "bob", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	cs, bob := connectMCP(t, s, "", nil), connectAs(t, s, bobTok)
	metaA, metaB, metaC := mcp.Meta{"openai/session": "aware-A"}, mcp.Meta{"openai/session": "aware-B"}, mcp.Meta{"openai/session": "aware-C"}
	aware := func(cs *mcp.ClientSession, meta mcp.Meta) *window.Awareness {
		t.Helper()
		args := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
		r, raw := callMCP(t, cs, "read_files", args, meta)
		if !r.Success {
			t.Fatalf("read_files: %s", raw)
		}
		var blk struct {
			A *window.Awareness `json:"peer_awareness"`
		}
		decodeInto(t, raw, &blk)
		return blk.A
	}
	if a := aware(cs, metaA); a != nil {
		t.Fatalf("A alone got %+v", a)
	}
	peerA := currentActivity(t, cs, metaA).PeerID
	if a := aware(cs, metaB); a == nil || a.RecentPeers != 1 || len(a.PeerIDs) != 1 || a.PeerIDs[0] != peerA {
		t.Fatalf("B got %+v, want [%s]", a, peerA)
	}
	if a := aware(cs, metaB); a != nil {
		t.Fatalf("B got the hint again for the same peers: %+v", a)
	}
	if a := aware(cs, metaA); a == nil || a.RecentPeers != 1 {
		t.Fatalf("A got %+v once B was active", a)
	}
	if a := aware(cs, metaA); a != nil {
		t.Fatalf("A got the hint again: %+v", a)
	}
	if a := aware(cs, metaC); a == nil || a.RecentPeers != 2 {
		t.Fatalf("C got %+v, want 2 peers", a)
	}
	if a := aware(cs, metaB); a == nil || a.RecentPeers != 2 {
		t.Fatalf("B got %+v once C joined", a)
	}
	if a := aware(bob, mcp.Meta{"openai/session": "aware-bob"}); a != nil {
		t.Fatalf("another principal got %+v", a)
	}
	r, raw := callMCP(t, cs, "list_sessions", map[string]any{"project": "agent:local:p"}, mcp.Meta{"openai/session": "aware-D"})
	if !r.Success || json.Valid(raw) && bytesContains(raw, "peer_awareness") {
		t.Fatalf("a status call got the hint: %s", raw)
	}
}

func bytesContains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// TestPeerDeliveryREST: a REST host naming its window in the header gets
// its peer messages on REST results.
func TestPeerDeliveryREST(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("x\n"), 0o644)
	s, _ := startLogged(t, t.TempDir(), "p="+proj)
	defer s.stop(t)
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	restWin := "rest-recipient-window"
	must(t, restCall(t, s, "read_files", read, &restWin), "read_files")
	peer := str(t, must(t, restCall(t, s, "current_window_activity", map[string]any{}, &restWin), "current_window_activity").Output["peer_id"])
	cs := connectMCP(t, s, "", nil)
	meta := mcp.Meta{"openai/session": "mcp-sender-window"}
	callMCP(t, cs, "read_files", read, meta)
	r, raw := callMCP(t, cs, "post_peer_message", map[string]any{"peer_id": peer, "message": "over REST", "requires_ack": true}, meta)
	if !r.Success {
		t.Fatalf("post: %s", raw)
	}
	id := str(t, r.Output["message_id"])
	body, _ := json.Marshal(map[string]any{"tool": "read_files", "arguments": read})
	for i, wantShown := range []bool{true, true} {
		code, out := s.doWindow(t, restWin, "/api/tools/call", body)
		var blk ambientBlocks
		decodeInto(t, out, &blk)
		if code != 200 || (len(shownIDs(blk.PeerMessages)) == 1 && shownIDs(blk.PeerMessages)[0] == id) != wantShown {
			t.Fatalf("REST call %d: HTTP %d %s", i, code, out)
		}
	}
	ackBody, _ := json.Marshal(map[string]any{"tool": "read_files", "arguments": read, "ack_session_message_ids": []string{id}})
	_, out := s.doWindow(t, restWin, "/api/tools/call", ackBody)
	var blk ambientBlocks
	decodeInto(t, out, &blk)
	if blk.PeerMessages == nil || len(blk.PeerMessages.AckAccepted) != 1 || blk.PeerMessages.AckAccepted[0] != id {
		t.Fatalf("REST ack: %s", out)
	}
	if blk.PeerMessages.Messages != nil {
		t.Fatalf("the ACKing call showed the body: %s", out)
	}
	if _, out := s.doWindow(t, restWin, "/api/tools/call", body); !bytesContains(out, id) {
		t.Fatalf("the acknowledged message was not re-projected on the next call omitting its id: %s", out)
	}
}
