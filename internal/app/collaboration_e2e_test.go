package app_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestCollaborationDoc runs, call for call, the coordinator/worker
// sequence of docs/collaboration.md with two go-sdk MCP clients:
// coordinator session C posts a todo; worker session W reads
// session_handoff_summary(C) and get_session_assignment(C, todo), works
// under W, and completes on C with recording_session_id = W. A recorder of
// another project is refused and changes nothing. (The stale-fence,
// dropped-response and restart cases are TestBoardCoordinatorWorker's.)
func TestCollaborationDoc(t *testing.T) {
	s := startApp(t, t.TempDir(), "board="+rawProjectDir(t), "other="+rawProjectDir(t))
	defer s.stop(t)
	coord := connectMCP(t, s, "", nil)
	worker := connectMCP(t, s, "", nil)
	defer coord.Close()
	defer worker.Close()

	// 1. The coordinator starts C and posts the todo, recording in C.
	var c, w string
	decodeInto(t, mcpOK(t, coord, "work_on_project", map[string]any{"project": boardProject,
		"instruction": "Coordinate the parser work."}).Output["session_id"], &c)
	var todo boardMsg
	decodeInto(t, mcpOK(t, coord, "post_session_message", map[string]any{"session_id": c, "kind": "todo",
		"message": "Make Add add; run go_test.", "priority": "high", "delivery_key": "todo-add",
		"recording_session_id": c}).Output["message"], &todo)

	// 2. The worker starts W in the same project.
	decodeInto(t, mcpOK(t, worker, "work_on_project", map[string]any{"project": boardProject,
		"instruction": "Work on the coordinator's todo."}).Output["session_id"], &w)

	// 3. The worker recovers C's state, recording in W.
	brief := handoffBrief(t, mcpOK(t, worker, "session_handoff_summary", map[string]any{"session_id": c, "recording_session_id": w}))
	if brief.Attention.OpenTodos == nil || *brief.Attention.OpenTodos != 1 {
		t.Fatalf("C's brief: %+v", brief.Attention)
	}

	// 4. The worker finds the todo and reads its assignment.
	var open []boardMsg
	decodeInto(t, mcpOK(t, worker, "list_session_messages", map[string]any{"session_id": c, "kind": "todo", "status": "open",
		"recording_session_id": w}).Output["messages"], &open)
	if len(open) != 1 || open[0].ID != todo.ID {
		t.Fatalf("open todos: %+v", open)
	}
	var fence string
	decodeInto(t, mcpOK(t, worker, "get_session_assignment", map[string]any{"session_id": c, "message_id": todo.ID,
		"recording_session_id": w}).Output["assignment_fence"], &fence)

	// 5. The worker works under W.
	mcpOK(t, worker, "read_files", map[string]any{"session_id": w, "project": boardProject, "files": []any{map[string]any{"path": "a.txt"}}})

	// A recorder of another project cannot complete on C: refused, and
	// the board is unchanged.
	var x string
	decodeInto(t, mcpOK(t, worker, "work_on_project", map[string]any{"project": "agent:local:other",
		"instruction": "Elsewhere."}).Output["session_id"], &x)
	before := boardList(t, s, c)
	complete := map[string]any{"session_id": c, "message_id": todo.ID, "answer": "Add fixed; go_test passes.",
		"completion_key": "w-add-1", "expected_assignment_fence": fence, "recording_session_id": x}
	r, raw := callMCP(t, worker, "complete_session_message", complete, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "session_project_mismatch" || boardList(t, s, c) != before {
		t.Fatalf("completion recorded in another project: %s", raw)
	}

	// 6. The worker completes on C, recording in W.
	complete["recording_session_id"] = w
	var answer boardMsg
	r = mcpOK(t, worker, "complete_session_message", complete)
	decodeInto(t, r.Output["answer"], &answer)
	if answer.AuthorSessionID == nil || *answer.AuthorSessionID != w || answer.ReplyTo != todo.ID || string(r.Output["replayed"]) != "false" {
		t.Fatalf("completion: %+v", r.Output)
	}

	// 7. The coordinator sees the todo done: C's brief has no open todo,
	// and its closeout no open-collaboration advisory.
	brief = handoffBrief(t, mcpOK(t, coord, "session_handoff_summary", map[string]any{"session_id": c, "recording_session_id": c}))
	if brief.Attention.OpenTodos == nil || *brief.Attention.OpenTodos != 0 {
		t.Fatalf("C's brief after completion: %+v", brief.Attention)
	}
	var adv []string
	decodeInto(t, mcpOK(t, coord, "finish_coding_task", map[string]any{"session_id": c, "project": boardProject,
		"include_workspace": false}).Output["advisories"], &adv)
	if slices.Contains(adv, "open_todos") || slices.Contains(adv, "collaboration_unavailable") {
		t.Fatalf("C's advisories: %v", adv)
	}
	// W recorded the worker's calls; the answer names W as its author.
	if ev := rawEvents(t, s, w); ev < 10 {
		t.Fatalf("W recorded %d events", ev)
	}
}

type briefAttention struct {
	Attention struct {
		OpenTodos             *int `json:"open_todos"`
		UnresolvedAckRequired *int `json:"unresolved_ack_required"`
	} `json:"attention"`
}

func handoffBrief(t *testing.T, r mcpResult) briefAttention {
	t.Helper()
	var b briefAttention
	if err := json.Unmarshal(r.Output["handoff_brief"], &b); err != nil {
		t.Fatalf("brief: %v %s", err, r.Output["handoff_brief"])
	}
	return b
}
