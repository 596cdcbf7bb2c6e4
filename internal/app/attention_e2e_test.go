package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attention is a session_attention block as the tests compare it.
type attention struct {
	SessionID string `json:"session_id"`
	Messages  []struct {
		ID          string `json:"message_id"`
		Kind        string `json:"kind"`
		RequiresAck bool   `json:"requires_ack"`
		Message     string `json:"message"`
		Author      string `json:"author_session_id"`
	} `json:"messages"`
	Omitted     int      `json:"omitted"`
	AckAccepted []string `json:"ack_accepted"`
	AckRejected []struct {
		ID     string `json:"message_id"`
		Reason string `json:"reason"`
	} `json:"ack_rejected"`
	AckRejectedOmitted int `json:"ack_rejected_omitted"`
}

// shown is the block in a comparable form: session, ids shown (with
// requires_ack), accepted and rejected ids.
func (a attention) shown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session=%s shown=[", a.SessionID)
	for _, m := range a.Messages {
		fmt.Fprintf(&b, "%s:%v ", m.ID, m.RequiresAck)
	}
	fmt.Fprintf(&b, "] omitted=%d accepted=%v rejected=[", a.Omitted, a.AckAccepted)
	for _, r := range a.AckRejected {
		fmt.Fprintf(&b, "%s:%s ", r.ID, r.Reason)
	}
	fmt.Fprintf(&b, "] rejected_omitted=%d", a.AckRejectedOmitted)
	return b.String()
}

func attentionOf(t *testing.T, raw json.RawMessage) attention {
	t.Helper()
	var a attention
	if raw != nil {
		decodeInto(t, raw, &a)
	}
	return a
}

// restRaw posts a /api/tools/call envelope and returns the body.
func restRaw(t *testing.T, s *server, env map[string]any) []byte {
	t.Helper()
	body, _ := json.Marshal(env)
	code, data := s.do(t, s.token, "POST", "/api/tools/call", body)
	if code != 200 {
		t.Fatalf("HTTP %d %s", code, data)
	}
	return data
}

// boardRow is a message with its analysis facts, as list returns it.
type boardRow struct {
	ID                 string `json:"message_id"`
	FirstAckObservedAt string `json:"first_ack_observed_at"`
	FirstProjectedAt   string `json:"first_projected_at"`
	LastProjectedAt    string `json:"last_projected_at"`
	ProjectionCount    int    `json:"projection_count"`
}

func boardRows(t *testing.T, s *server, id string) map[string]boardRow {
	t.Helper()
	var ms []boardRow
	decodeInto(t, must(t, s.call(t, "list_session_messages", map[string]any{"session_id": id, "limit": 100}, ""), "list").Output["messages"], &ms)
	out := map[string]boardRow{}
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}

// TestSessionAttention: an ACK-required message posted by coordinator
// session C is projected on every call recorded in C (modern and legacy
// MCP, REST) until the call ACKs it, then again on a call that does not;
// an ordinary message is projected once; bad ACK ids (malformed, a 9th id,
// another session's, not ACK-required) are reported with exact reasons,
// the tool still runs and nothing changes; the first ACK advances the
// observation revision once, a repeat does not; a resolved message is no
// longer projected; a call without a recorder has no block.
func TestSessionAttention(t *testing.T) {
	s := startApp(t, t.TempDir(), "board="+rawProjectDir(t))
	defer s.stop(t)
	coord := connectMCP(t, s, "", nil)
	modern := connectMCP(t, s, "", nil)
	legacy := connectMCP(t, s, rawLegacyVersion, nil)
	c := boardSession(t, coord, "")
	w := boardSession(t, modern, "")

	post := func(session, kind, body string, ack bool, recorder string) string {
		args := map[string]any{"session_id": session, "kind": kind, "message": body, "requires_ack": ack}
		if recorder != "" {
			args["recording_session_id"] = recorder
		}
		r := mcpOK(t, coord, "post_session_message", args)
		var m boardMsg
		decodeInto(t, r.Output["message"], &m)
		if recorder != "" && r.Attention != nil {
			// The post's own message was posted during the call: never
			// in its own block.
			if strings.Contains(string(r.Attention), m.ID) {
				t.Fatalf("a post's own message is in its block: %s", r.Attention)
			}
		}
		return m.ID
	}
	ackMsg := post(c, "guidance", "Run go vet before every commit.", true, c)
	note := post(c, "note", "The CI runner is slow today.", false, "")
	otherAck := post(w, "risk", "W's own risk.", true, "")

	// recorded calls a read in C over modern MCP with acks.
	recorded := func(cs *mcp.ClientSession, acks []string) (mcpResult, attention) {
		t.Helper()
		args := map[string]any{"session_id": w, "limit": 1, "recording_session_id": c}
		if acks != nil {
			args["ack_session_message_ids"] = acks
		}
		r := mcpOK(t, cs, "list_session_messages", args)
		return r, attentionOf(t, r.Attention)
	}
	want := func(t *testing.T, what string, got attention, wantShown string) {
		t.Helper()
		if got.shown() != wantShown {
			t.Fatalf("%s:\n got %s\nwant %s", what, got.shown(), wantShown)
		}
	}
	shownBoth := fmt.Sprintf("session=%s shown=[%s:true %s:false ] omitted=0 accepted=[] rejected=[] rejected_omitted=0", c, ackMsg, note)
	shownAck := fmt.Sprintf("session=%s shown=[%s:true ] omitted=0 accepted=[] rejected=[] rejected_omitted=0", c, ackMsg)

	_, a := recorded(modern, nil)
	want(t, "first recorded call (modern)", a, shownBoth)
	if a.Messages[0].Message != "Run go vet before every commit." || a.Messages[0].Author != c || a.Messages[0].Kind != "guidance" {
		t.Fatalf("projected message: %+v", a.Messages[0])
	}
	_, a = recorded(legacy, nil)
	want(t, "second recorded call (legacy): the note was projected once", a, shownAck)
	var rest struct {
		Success   bool            `json:"success"`
		Attention json.RawMessage `json:"session_attention"`
	}
	decodeInto(t, restRaw(t, s, map[string]any{"tool": "list_session_messages", "arguments": map[string]any{"session_id": w, "limit": 1},
		"recording_session_id": c}), &rest)
	want(t, "REST recorded call", attentionOf(t, rest.Attention), shownAck)

	// The observation baseline of C, and a sync: a durable post on W
	// commits after every write queued before it (the writer is FIFO), so
	// the behind facts of earlier calls are committed when it returns.
	var tok string
	decodeInto(t, mcpOK(t, coord, "observe_session_messages", map[string]any{"session_id": c}).Output["observation_token"], &tok)
	sync := func() { post(w, "progress", "sync", false, "") }
	unchanged := func(t *testing.T, what string) {
		t.Helper()
		sync()
		r := mcpOK(t, coord, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok})
		if string(r.Output["changed"]) != "false" {
			t.Fatalf("%s changed C's board: %v", what, r.Output)
		}
		if rows := boardRows(t, s, c); rows[ackMsg].FirstAckObservedAt != "" || boardRows(t, s, w)[otherAck].FirstAckObservedAt != "" {
			t.Fatalf("%s recorded an ACK: %+v", what, rows[ackMsg])
		}
	}

	// Bad ACK ids: the tool runs, the block says why, nothing changes.
	fresh := func(i int) string { return fmt.Sprintf("wc_msg_%032x", i) }
	nine := []string{fresh(1), fresh(2), fresh(3), fresh(4), fresh(5), fresh(6), fresh(7), fresh(8), ackMsg}
	for _, tc := range []struct {
		name     string
		acks     []string
		rejected string
	}{
		{"ErrAckMalformed", []string{"wc_msg_nope", "wc_msg_" + strings.Repeat("A", 32)},
			"wc_msg_nope:malformed wc_msg_" + strings.Repeat("A", 32) + ":malformed "},
		{"ErrAckNineIDs", nine, func() string {
			var b strings.Builder
			for _, id := range nine[:8] {
				b.WriteString(id + ":not_in_recording_session ")
			}
			return b.String() + ackMsg + ":over_limit "
		}()},
		{"ErrAckOtherSession", []string{otherAck}, otherAck + ":not_in_recording_session "},
		{"ErrAckNotRequired", []string{note}, note + ":not_ack_required "},
		{"ErrAckDuplicate", []string{note, note}, note + ":not_ack_required " + note + ":duplicate "},
	} {
		r, a := recorded(modern, tc.acks)
		if !r.Success || string(r.Output["messages"]) == "" {
			t.Fatalf("%s: the tool did not run: %+v", tc.name, r)
		}
		want(t, tc.name, a, fmt.Sprintf("session=%s shown=[%s:true ] omitted=0 accepted=[] rejected=[%s] rejected_omitted=0", c, ackMsg, tc.rejected))
		unchanged(t, tc.name)
	}
	// ACK ids without a recorder: judged, never accepted.
	r := mcpOK(t, modern, "list_session_messages", map[string]any{"session_id": w, "limit": 1, "ack_session_message_ids": []string{ackMsg}})
	want(t, "ACK without a recorder", attentionOf(t, r.Attention),
		fmt.Sprintf("session= shown=[] omitted=0 accepted=[] rejected=[%s:no_recording_session ] rejected_omitted=0", ackMsg))
	unchanged(t, "an ACK without a recorder")

	// The first ACK: accepted, the body suppressed in this response; the
	// observation revision advances once (observe wakes on it).
	_, a = recorded(modern, []string{ackMsg})
	want(t, "first ACK", a, fmt.Sprintf("session=%s shown=[] omitted=0 accepted=[%s] rejected=[] rejected_omitted=0", c, ackMsg))
	obs := mcpOK(t, coord, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok, "wait_seconds": 30})
	var changed []boardRow
	decodeInto(t, obs.Output["messages"], &changed)
	if len(changed) != 1 || changed[0].ID != ackMsg || changed[0].FirstAckObservedAt == "" {
		t.Fatalf("observation after the first ACK: %v", obs.Output)
	}
	tok = str(t, obs.Output["observation_token"])
	firstAck := changed[0].FirstAckObservedAt

	// A repeated ACK is accepted again and changes nothing.
	_, a = recorded(legacy, []string{ackMsg})
	want(t, "repeated ACK (legacy)", a, fmt.Sprintf("session=%s shown=[] omitted=0 accepted=[%s] rejected=[] rejected_omitted=0", c, ackMsg))
	sync()
	obs = mcpOK(t, coord, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok})
	if string(obs.Output["changed"]) != "false" {
		t.Fatalf("a repeated ACK advanced the revision: %v", obs.Output)
	}
	if got := boardRows(t, s, c)[ackMsg].FirstAckObservedAt; got != firstAck {
		t.Fatalf("first_ack_observed_at moved from %s to %s", firstAck, got)
	}
	// Suppression is for that response only: omitted again, projected again.
	_, a = recorded(modern, nil)
	want(t, "after the ACK, a call without it", a, shownAck)

	// Projection facts: the ACK-required message was shown by 5 bad-ACK
	// calls and 4 others (2 MCP, REST, the last one); the note once.
	sync()
	rows := boardRows(t, s, c)
	if rows[ackMsg].ProjectionCount != 9 || rows[note].ProjectionCount != 1 || rows[note].FirstProjectedAt == "" ||
		rows[note].FirstProjectedAt != rows[note].LastProjectedAt || rows[ackMsg].FirstProjectedAt == rows[ackMsg].LastProjectedAt {
		t.Fatalf("projection facts: ack %+v note %+v", rows[ackMsg], rows[note])
	}

	// ACK over the REST envelope (a second ACK-required message).
	second := post(c, "question", "Which Go version?", true, "")
	decodeInto(t, restRaw(t, s, map[string]any{"tool": "list_session_messages", "arguments": map[string]any{"session_id": w, "limit": 1},
		"recording_session_id": c, "ack_session_message_ids": []string{second}}), &rest)
	want(t, "REST ACK", attentionOf(t, rest.Attention),
		fmt.Sprintf("session=%s shown=[%s:true ] omitted=0 accepted=[%s] rejected=[] rejected_omitted=0", c, ackMsg, second))
	sync()
	if boardRows(t, s, c)[second].FirstAckObservedAt == "" {
		t.Fatal("the REST ACK was not observed")
	}
	// GPT Actions: the ids are a wrapper member of the body.
	body, _ := json.Marshal(map[string]any{"session_id": w, "limit": 1, "recording_session_id": c, "ack_session_message_ids": []string{second, "bad"}})
	code, data := s.do(t, s.token, "POST", "/api/actions/list_session_messages", body)
	decodeInto(t, data, &rest)
	if code != 200 || !rest.Success {
		t.Fatalf("GPT Actions ACK: %d %s", code, data)
	}
	want(t, "GPT Actions ACK", attentionOf(t, rest.Attention),
		fmt.Sprintf("session=%s shown=[%s:true ] omitted=0 accepted=[%s] rejected=[bad:malformed ] rejected_omitted=0", c, ackMsg, second))

	// Resolved messages are no longer projected: no block at all.
	for _, id := range []string{ackMsg, second} {
		mcpOK(t, coord, "resolve_session_message", map[string]any{"session_id": c, "message_id": id})
	}
	r, raw := callMCP(t, modern, "list_session_messages", map[string]any{"session_id": w, "limit": 1, "recording_session_id": c}, nil)
	if r.Attention != nil || bytes.Contains(raw, []byte("session_attention")) {
		t.Fatalf("a block after resolution: %s", raw)
	}
	// Acking a resolved message is rejected as resolved.
	_, a = recorded(modern, []string{ackMsg})
	want(t, "ACK of a resolved message", a, fmt.Sprintf("session=%s shown=[] omitted=0 accepted=[] rejected=[%s:resolved ] rejected_omitted=0", c, ackMsg))
}

// TestAttentionLeavesUnrecordedResultsAlone: with an unresolved
// ACK-required message on C, a call without a recorder answers exactly as
// before: REST sends res.Body (one member set, no session_attention), MCP
// one content block whose text equals structuredContent.
func TestAttentionLeavesUnrecordedResultsAlone(t *testing.T) {
	s := startApp(t, t.TempDir(), "board="+rawProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	c := boardSession(t, cs, "")
	mcpOK(t, cs, "post_session_message", map[string]any{"session_id": c, "kind": "todo", "message": "ack me", "requires_ack": true})
	args := map[string]any{"session_id": c, "kind": "note"}
	body := restRaw(t, s, map[string]any{"tool": "list_session_messages", "arguments": args})
	var m map[string]json.RawMessage
	decodeInto(t, body, &m)
	if len(m) != 2 || m["success"] == nil || m["output"] == nil {
		t.Fatalf("REST body without a recorder: %s", body)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_session_messages", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var a, b any
	json.Unmarshal(structured, &a)
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &b)
	if len(res.Content) != 1 || cmp.Diff(a, b) != "" || bytes.Contains(structured, []byte("session_attention")) {
		t.Fatalf("MCP result without a recorder: %d blocks, %s", len(res.Content), structured)
	}
	// The same call recorded in C has the block (so the check above can fail).
	recorded := restRaw(t, s, map[string]any{"tool": "list_session_messages", "arguments": args, "recording_session_id": c})
	if !bytes.Contains(recorded, []byte(`"session_attention":{"session_id":"`+c+`"`)) {
		t.Fatalf("recorded call: %s", recorded)
	}
}
