package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/workflow"
)

const boardProject = "agent:local:board"

// boardMsg is a message as the board tools return it.
type boardMsg struct {
	ID              string  `json:"message_id"`
	Kind            string  `json:"kind"`
	Status          string  `json:"status"`
	ReplyTo         string  `json:"reply_to"`
	AuthorSessionID *string `json:"author_session_id"`
	ResolvedBy      string  `json:"resolved_by_message_id"`
	CompletionID    string  `json:"completion_id"`
}

func decodeInto(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func mcpOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) mcpResult {
	t.Helper()
	r, raw := callMCP(t, cs, tool, args, nil)
	if !r.Success {
		t.Fatalf("%s: %s", tool, raw)
	}
	return r
}

func boardSession(t *testing.T, cs *mcp.ClientSession, mode string) string {
	t.Helper()
	args := map[string]any{"project": boardProject, "instruction": "collaborate on the board"}
	if mode != "" {
		args["mode"] = mode
	}
	var id string
	decodeInto(t, mcpOK(t, cs, "work_on_project", args).Output["session_id"], &id)
	return id
}

// boardList returns every message of session id, newest first, over REST.
func boardList(t *testing.T, s *server, id string) string {
	t.Helper()
	r := must(t, s.call(t, "list_session_messages", map[string]any{"session_id": id, "limit": 100}, ""), "list_session_messages")
	return string(r.Output["messages"])
}

// TestBoardCoordinatorWorker runs the coordinator/worker pattern with two
// go-sdk clients (the coordinator on the modern MCP era, the worker on the
// legacy one) and REST: the coordinator posts a todo in its session C; the
// worker, recording in its own session W, reads the assignment, meets a
// stale fence after the coordinator adds guidance, completes with the fresh
// fence, retries after a "dropped" response and again after a restart
// (replayed), and a different key is already_completed.
func TestBoardCoordinatorWorker(t *testing.T) {
	dataDir := t.TempDir()
	projectDir := rawProjectDir(t)
	s := startApp(t, dataDir, "board="+projectDir)
	coord := connectMCP(t, s, "", nil)
	worker := connectMCP(t, s, rawLegacyVersion, nil)
	c := boardSession(t, coord, "")
	w := boardSession(t, worker, "")

	var post struct {
		Message  boardMsg `json:"message"`
		Replayed bool     `json:"replayed"`
	}
	r := mcpOK(t, coord, "post_session_message", map[string]any{"session_id": c, "kind": "todo", "message": "Make Add add.",
		"priority": "high", "delivery_key": "todo-1", "recording_session_id": c})
	decodeInto(t, r.Output["message"], &post.Message)
	todo := post.Message
	if todo.Kind != "todo" || todo.Status != "open" || todo.AuthorSessionID == nil || *todo.AuthorSessionID != c {
		t.Fatalf("posted todo: %+v", todo)
	}
	// Without a recorder a message has no author.
	r = mcpOK(t, coord, "post_session_message", map[string]any{"session_id": c, "kind": "note", "message": "context"})
	if strings.Contains(string(r.Output["message"]), "author_session_id") {
		t.Fatalf("a post without a recorder has an author: %s", r.Output["message"])
	}

	// The worker reads the assignment, recording in W.
	var a struct {
		Fence       string `json:"assignment_fence"`
		Completable bool   `json:"completable"`
	}
	r = mcpOK(t, worker, "get_session_assignment", map[string]any{"session_id": c, "message_id": todo.ID, "recording_session_id": w})
	decodeInto(t, r.Output["assignment_fence"], &a.Fence)
	if !strings.HasPrefix(a.Fence, workflow.FencePrefix) || len(a.Fence) != workflow.FenceChars {
		t.Fatalf("assignment: %+v", r.Output)
	}
	// The coordinator edits the assignment with guidance on the todo.
	mcpOK(t, coord, "post_session_message", map[string]any{"session_id": c, "kind": "guidance", "message": "Also test 0+0.",
		"reply_to": todo.ID, "recording_session_id": c})
	before := boardList(t, s, c)
	complete := map[string]any{"session_id": c, "message_id": todo.ID, "answer": "Add fixed; TestAdd passes.",
		"completion_key": "w-1", "expected_assignment_fence": a.Fence, "recording_session_id": w}
	stale, raw := callMCP(t, worker, "complete_session_message", complete, nil)
	if stale.Success || stale.Error.Kind != "stale_precondition" || string(stale.Output["state_changed"]) != "false" {
		t.Fatalf("complete with a stale fence: %s", raw)
	}
	var cur struct {
		Fence       string     `json:"assignment_fence"`
		Completable bool       `json:"completable"`
		Replies     []boardMsg `json:"replies"`
	}
	decodeInto(t, stale.Output["assignment"], &cur)
	if !cur.Completable || cur.Fence == "" || cur.Fence == a.Fence || len(cur.Replies) != 1 || cur.Replies[0].Kind != "guidance" {
		t.Fatalf("stale result's assignment: %s", stale.Output["assignment"])
	}
	if boardList(t, s, c) != before {
		t.Fatal("a stale completion changed the board")
	}

	complete["expected_assignment_fence"] = cur.Fence
	var done struct {
		Todo     boardMsg `json:"todo"`
		Answer   boardMsg `json:"answer"`
		Replayed bool     `json:"replayed"`
	}
	r = mcpOK(t, worker, "complete_session_message", complete)
	decodeInto(t, r.Output["todo"], &done.Todo)
	decodeInto(t, r.Output["answer"], &done.Answer)
	if done.Todo.Status != "resolved" || done.Todo.ResolvedBy != done.Answer.ID || done.Answer.ReplyTo != todo.ID ||
		done.Answer.Kind != "answer" || done.Answer.AuthorSessionID == nil || *done.Answer.AuthorSessionID != w ||
		string(r.Output["replayed"]) != "false" {
		t.Fatalf("completion: %+v", r.Output)
	}
	// The response was "dropped": the worker retries the same call.
	r = mcpOK(t, worker, "complete_session_message", complete)
	var again boardMsg
	decodeInto(t, r.Output["answer"], &again)
	if string(r.Output["replayed"]) != "true" || again.ID != done.Answer.ID {
		t.Fatalf("retried completion: %+v", r.Output)
	}
	// Another worker's key on the completed todo.
	other := map[string]any{}
	for k, v := range complete {
		other[k] = v
	}
	other["completion_key"] = "w-2"
	ac, raw := callMCP(t, worker, "complete_session_message", other, nil)
	if ac.Success || ac.Error.Kind != "already_completed" || !strings.Contains(string(ac.Output["completion_id"]), done.Todo.CompletionID) {
		t.Fatalf("a second completion: %s", raw)
	}
	// The worker's own session recorded its calls; C holds the business pairs.
	if ev := rawEvents(t, s, w); ev < 4 {
		t.Fatalf("worker session recorded %d events", ev)
	}
	afterCompletion := boardList(t, s, c)
	coord.Close()
	worker.Close()
	s.stop(t)

	// After a restart the same completion and the same post replay.
	s = startApp(t, dataDir, "board="+projectDir)
	defer s.stop(t)
	worker = connectMCP(t, s, "", nil)
	r = mcpOK(t, worker, "complete_session_message", complete)
	decodeInto(t, r.Output["answer"], &again)
	if string(r.Output["replayed"]) != "true" || again.ID != done.Answer.ID {
		t.Fatalf("completion after restart: %+v", r.Output)
	}
	res := must(t, s.call(t, "post_session_message", map[string]any{"session_id": c, "kind": "todo", "message": "Make Add add.",
		"priority": "high", "delivery_key": "todo-1"}, ""), "post replay")
	var replayed boardMsg
	decodeInto(t, res.Output["message"], &replayed)
	if replayed.ID != todo.ID || string(res.Output["replayed"]) != "true" {
		t.Fatalf("post replay after restart: %+v", res.Output)
	}
	if boardList(t, s, c) != afterCompletion {
		t.Fatal("replays after a restart changed the board")
	}
	// The same key with another payload.
	res = s.call(t, "post_session_message", map[string]any{"session_id": c, "kind": "todo", "message": "Something else.",
		"delivery_key": "todo-1"}, "")
	if res.Success || res.Error.Kind != "idempotency_conflict" || boardList(t, s, c) != afterCompletion {
		t.Fatalf("conflicting replay: %+v", res)
	}
}

// TestBoardSessionGuards: a read_only session may post (its guard denies
// file writes and shells only); a closed session takes no post and
// refuses it without change; a recorder that fails its check refuses the
// call before anything is posted.
func TestBoardSessionGuards(t *testing.T) {
	s := startApp(t, t.TempDir(), "board="+rawProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	ro := boardSession(t, cs, "read_only")
	r := mcpOK(t, cs, "post_session_message", map[string]any{"session_id": ro, "kind": "question", "message": "Which file?"})
	var m boardMsg
	decodeInto(t, r.Output["message"], &m)
	if m.Status != "open" {
		t.Fatalf("read_only post: %+v", r.Output)
	}

	closed := boardSession(t, cs, "")
	mcpOK(t, cs, "post_session_message", map[string]any{"session_id": closed, "kind": "note", "message": "before close"})
	mcpOK(t, cs, "close_session", map[string]any{"session_id": closed})
	before := boardList(t, s, closed)
	res, raw := callMCP(t, cs, "post_session_message", map[string]any{"session_id": closed, "kind": "note", "message": "late"}, nil)
	if res.Success || res.Error.Kind != "session_closed" {
		t.Fatalf("post to a closed session: %s", raw)
	}
	if boardList(t, s, closed) != before {
		t.Fatal("a refused post changed the board")
	}

	before = boardList(t, s, ro)
	res, raw = callMCP(t, cs, "post_session_message", map[string]any{"session_id": ro, "kind": "note", "message": "x",
		"recording_session_id": "wc_sess_00000000000000000000000000000000"}, nil)
	if res.Success || res.Error.Kind != "unknown_session_id" {
		t.Fatalf("post with an unknown recorder: %s", raw)
	}
	for _, bad := range []map[string]any{
		{"session_id": ro, "kind": "memo", "message": "x"},
		{"session_id": ro, "kind": "note", "message": "x", "priority": "urgent"},
		{"session_id": ro, "kind": "note", "message": strings.Repeat("x", 8001)},
		{"session_id": ro, "kind": "note", "message": "x", "author_session_id": ro},
	} {
		res, raw = callMCP(t, cs, "post_session_message", bad, nil)
		if res.Success || res.Error.Kind != "invalid_arguments" {
			t.Fatalf("bad post %v: %s", bad["kind"], raw)
		}
	}
	if boardList(t, s, ro) != before {
		t.Fatal("a refused post changed the board")
	}
}

// TestBoardObserve: an observation loop over MCP and REST that survives a
// restart with the same token, a wait that returns another client's post,
// a timeout that is a normal result, and a token edited by one character
// that fails closed.
func TestBoardObserve(t *testing.T) {
	dataDir := t.TempDir()
	projectDir := rawProjectDir(t)
	s := startApp(t, dataDir, "board="+projectDir)
	a := connectMCP(t, s, "", nil)
	b := connectMCP(t, s, rawLegacyVersion, nil)
	c := boardSession(t, a, "")
	var tok string
	decodeInto(t, mcpOK(t, a, "observe_session_messages", map[string]any{"session_id": c}).Output["observation_token"], &tok)

	// a waits; b posts. Either the post lands before a's first check or
	// it wakes a's wait: both return it as a change.
	type obs struct {
		r   mcpResult
		raw []byte
	}
	got := make(chan obs, 1)
	go func() {
		r, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "observe_session_messages",
			Arguments: map[string]any{"session_id": c, "after_observation_token": tok, "wait_seconds": 60}})
		if err != nil {
			t.Error(err)
			got <- obs{}
			return
		}
		raw, _ := json.Marshal(r.StructuredContent)
		var res mcpResult
		json.Unmarshal(raw, &res)
		got <- obs{res, raw}
	}()
	var posted boardMsg
	decodeInto(t, mcpOK(t, b, "post_session_message", map[string]any{"session_id": c, "kind": "risk", "message": "flaky test"}).Output["message"], &posted)
	o := <-got
	var msgs []boardMsg
	var outcome string
	if !o.r.Success {
		t.Fatalf("observe with wait: %s", o.raw)
	}
	decodeInto(t, o.r.Output["messages"], &msgs)
	decodeInto(t, o.r.Output["wait_outcome"], &outcome)
	if len(msgs) != 1 || msgs[0].ID != posted.ID || (outcome != "updated" && outcome != "not_waited") {
		t.Fatalf("observe with wait: %s", o.raw)
	}
	decodeInto(t, o.r.Output["observation_token"], &tok)
	a.Close()
	b.Close()
	s.stop(t)

	s = startApp(t, dataDir, "board="+projectDir)
	defer s.stop(t)
	r := must(t, s.call(t, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok}, ""), "observe after restart")
	if string(r.Output["changed"]) != "false" || str(t, r.Output["observation_token"]) != tok {
		t.Fatalf("observe after restart: %+v", r.Output)
	}
	must(t, s.call(t, "post_session_message", map[string]any{"session_id": c, "kind": "progress", "message": "half done"}, ""), "post")
	r = must(t, s.call(t, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok}, ""), "observe")
	decodeInto(t, r.Output["messages"], &msgs)
	if len(msgs) != 1 || msgs[0].Kind != "progress" {
		t.Fatalf("observe after restart and a post: %+v", r.Output)
	}
	tok = str(t, r.Output["observation_token"])
	r = must(t, s.call(t, "observe_session_messages", map[string]any{"session_id": c, "after_observation_token": tok, "wait_seconds": 1}, ""), "timeout")
	if str(t, r.Output["wait_outcome"]) != "timeout" || string(r.Output["changed"]) != "false" {
		t.Fatalf("a timed-out wait: %+v", r.Output)
	}
	edited := []byte(tok)
	edited[len(edited)/2] ^= 1
	for _, bad := range []map[string]any{
		{"session_id": c, "after_observation_token": string(edited)},
		{"session_id": c, "after_observation_token": strings.Repeat("x", 193)},
	} {
		r = s.call(t, "observe_session_messages", bad, "")
		if r.Success || r.Error.Kind != "invalid_observation_token" {
			t.Fatalf("bad token: %+v", r)
		}
	}
	r = s.call(t, "observe_session_messages", map[string]any{"session_id": c, "wait_seconds": 5}, "")
	if r.Success || r.Error.Kind != "invalid_arguments" {
		t.Fatalf("a wait without a token: %+v", r)
	}
}
