package app_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
)

const taskProject = "agent:local:task"

// taskOut and attemptOut are an Agent Task and an attempt as the tools
// return them.
type taskOut struct {
	ID       string `json:"task_id"`
	Project  string `json:"project"`
	State    string `json:"state"`
	Revision string `json:"revision"`
	Fence    int64  `json:"fence"`
}

type attemptOut struct {
	ID         string `json:"attempt_id"`
	TaskID     string `json:"task_id"`
	SessionID  string `json:"session_id"`
	Fence      int64  `json:"fence"`
	State      string `json:"state"`
	Outcome    string `json:"outcome"`
	LeaseUntil string `json:"lease_until"`
}

// outField decodes member name of r's output into v.
func outField(t *testing.T, r result, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Output[name], v); err != nil {
		t.Fatalf("output %s: %v (%s)", name, err, r.Output[name])
	}
}

// refusedAs fails t unless r is a failure of kind.
func refusedAs(t *testing.T, r result, kind, what string) {
	t.Helper()
	if r.Success || r.Error == nil || r.Error.Kind != kind {
		t.Fatalf("%s: %+v, want %s", what, r.Error, kind)
	}
}

// readTask is read_agent_task's whole output, raw and decoded.
func readTask(t *testing.T, s *server, token, id string) (string, taskOut, []attemptOut) {
	t.Helper()
	r := must(t, s.callAs(t, token, "read_agent_task", map[string]any{"task_id": id}, ""), "read_agent_task")
	var task taskOut
	var as []attemptOut
	outField(t, r, "task", &task)
	outField(t, r, "attempts", &as)
	raw, _ := json.Marshal(r.Output)
	return string(raw), task, as
}

// TestTaskExpireInterval pins how often a serving process expires lapsed
// attempts.
func TestTaskExpireInterval(t *testing.T) {
	if app.TaskExpireInterval != 10*time.Second {
		t.Fatalf("TaskExpireInterval = %s, want 10s", app.TaskExpireInterval)
	}
}

// TestAgentTasksSQLite drives the Agent Task tools through the real
// kernel and server on SQLite files (tasks.db).
func TestAgentTasksSQLite(t *testing.T) {
	s := startApp(t, t.TempDir(), "task="+rawProjectDir(t), "other="+rawProjectDir(t))
	defer s.stop(t)
	if _, err := os.Stat(s.a.Config.DataDir + "/" + app.TasksDB); err != nil {
		t.Fatalf("tasks.db: %v", err)
	}
	agentTaskFlow(t, s)
	agentEventsFlow(t, s)
}

// TestAgentTasksPostgres is the same flow on PostgreSQL (schema tasks).
func TestAgentTasksPostgres(t *testing.T) {
	url := pgtest.URL(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.DatabaseURL = url }, "task="+rawProjectDir(t), "other="+rawProjectDir(t))
	defer s.stop(t)
	if s.a.Stores.Backend == app.BackendSQLite {
		t.Fatal("the app is not on PostgreSQL")
	}
	agentTaskFlow(t, s)
	agentEventsFlow(t, s)
}

// agentTaskFlow: create → start → heartbeat → complete → read shows done;
// a second start on a claimed task is conflict; a stale fence is
// stale_precondition and changes nothing; another authority group's task
// and attempt are not_found; a repeated completion is replayed; a task of
// another project than the session's is session_project_mismatch.
func agentTaskFlow(t *testing.T, s *server) {
	var task taskOut
	outField(t, must(t, s.call(t, "create_agent_task", map[string]any{"project": taskProject, "title": "Port the parser",
		"labels": []string{"parser"}, "priority": 5, "idempotency_key": "k1"}, ""), "create_agent_task"), "task", &task)
	if task.State != "open" || task.Project != taskProject || task.Fence != 0 {
		t.Fatalf("created %+v", task)
	}
	// The same key and payload is a replay of the same task.
	again := must(t, s.call(t, "create_agent_task", map[string]any{"project": taskProject, "title": "Port the parser",
		"labels": []string{"parser"}, "priority": 5, "idempotency_key": "k1"}, ""), "create replay")
	var replayTask taskOut
	var replayed bool
	outField(t, again, "task", &replayTask)
	outField(t, again, "replayed", &replayed)
	if !replayed || replayTask.ID != task.ID {
		t.Fatalf("replayed create: %v %+v, want the first task", replayed, replayTask)
	}
	var list []taskOut
	outField(t, must(t, s.call(t, "list_agent_tasks", map[string]any{"project": taskProject, "label": "parser"}, ""), "list"), "tasks", &list)
	if len(list) != 1 || list[0].ID != task.ID {
		t.Fatalf("listed %+v", list)
	}

	sess := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": taskProject, "instruction": "Take a task."}, ""), "session").Output["session_id"])
	var a attemptOut
	outField(t, must(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task.ID,
		"lease_seconds": 600}, ""), "start"), "attempt", &a)
	if a.Fence != 1 || a.State != "live" || a.SessionID != sess || a.TaskID != task.ID {
		t.Fatalf("started %+v", a)
	}
	// A second start on the claimed task is a conflict, also by label.
	refusedAs(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task.ID}, ""), "conflict", "second start")
	var started bool
	outField(t, must(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "label": "parser"}, ""), "start next"), "started", &started)
	if started {
		t.Fatal("the claimed task was started again as the next ready task")
	}

	// A stale fence is refused with its reason and changes nothing.
	before, _, _ := readTask(t, s, s.token, task.ID)
	r := s.call(t, "heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence + 1}, "")
	refusedAs(t, r, "stale_precondition", "stale heartbeat")
	var reason string
	var changed bool
	outField(t, r, "reason", &reason)
	outField(t, r, "state_changed", &changed)
	if reason != "stale_fence" || changed {
		t.Errorf("stale heartbeat output %s, want reason stale_fence and state_changed false", mustJSON(r.Output))
	}
	refusedAs(t, s.call(t, "complete_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence + 1,
		"outcome": "done", "summary": "x", "completion_key": "c0"}, ""), "stale_precondition", "stale completion")
	if after, _, _ := readTask(t, s, s.token, task.ID); after != before {
		t.Fatalf("a refused call changed the task:\n%s\n%s", before, after)
	}
	// The refusals are recorded in the session as failed calls: negative
	// evidence.
	_, evs, err := s.a.Sessions.Summary(context.Background(), sess, 50)
	if err != nil {
		t.Fatal(err)
	}
	refusals := 0
	for _, e := range evs {
		if (e.Tool == "heartbeat_agent_task_attempt" || e.Tool == "complete_agent_task_attempt") &&
			e.Outcome == workflow.OutcomeFailed && e.ErrorKind == "stale_precondition" {
			refusals++
		}
	}
	if refusals != 2 {
		t.Fatalf("the session records %d refused attempt calls, want 2", refusals)
	}

	// Another authority group: the task and the attempt are unknown.
	var bob string
	bob, _, err = s.a.Auth.CreateToken(context.Background(), "bob", "bob", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	refusedAs(t, s.callAs(t, bob, "read_agent_task", map[string]any{"task_id": task.ID}, ""), "not_found", "bob reads")
	refusedAs(t, s.callAs(t, bob, "cancel_agent_task", map[string]any{"task_id": task.ID}, ""), "not_found", "bob cancels")
	bobSess := str(t, must(t, s.callAs(t, bob, "work_on_project", map[string]any{"project": taskProject, "instruction": "Bob's."}, ""), "bob session").Output["session_id"])
	refusedAs(t, s.callAs(t, bob, "heartbeat_agent_task_attempt", map[string]any{"session_id": bobSess, "attempt_id": a.ID, "fence": a.Fence}, ""), "not_found", "bob heartbeats")
	refusedAs(t, s.callAs(t, bob, "start_agent_task_attempt", map[string]any{"session_id": bobSess, "task_id": task.ID}, ""), "not_found", "bob starts")
	// Bob may not use our session either.
	refusedAs(t, s.callAs(t, bob, "heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence}, ""),
		"session_authority_denied", "bob uses our session")
	if after, _, _ := readTask(t, s, s.token, task.ID); after != before {
		t.Fatalf("another group's calls changed the task:\n%s\n%s", before, after)
	}

	var hb attemptOut
	outField(t, must(t, s.call(t, "heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence,
		"lease_seconds": 900}, ""), "heartbeat"), "attempt", &hb)
	if hb.LeaseUntil <= a.LeaseUntil || hb.State != "live" {
		t.Fatalf("heartbeat left %+v (lease was %s)", hb, a.LeaseUntil)
	}
	complete := map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence, "outcome": "done",
		"summary": "Ported.", "completion_key": "c1"}
	c := must(t, s.call(t, "complete_agent_task_attempt", complete, ""), "complete")
	var done taskOut
	outField(t, c, "task", &done)
	outField(t, c, "replayed", &replayed)
	if done.State != "done" || replayed {
		t.Fatalf("completed %+v replayed %v", done, replayed)
	}
	final, read, attempts := readTask(t, s, s.token, task.ID)
	if read.State != "done" || len(attempts) != 1 || attempts[0].State != "done" || attempts[0].Outcome != "done" {
		t.Fatalf("read after completion: %s", final)
	}
	// The same completion again is a replay that changes nothing; another
	// key is already_completed.
	c = must(t, s.call(t, "complete_agent_task_attempt", complete, ""), "complete replay")
	outField(t, c, "replayed", &replayed)
	if !replayed {
		t.Fatal("a repeated completion was not replayed")
	}
	complete["completion_key"] = "c2"
	refusedAs(t, s.call(t, "complete_agent_task_attempt", complete, ""), "already_completed", "completion under another key")
	if after, _, _ := readTask(t, s, s.token, task.ID); after != final {
		t.Fatalf("a replayed completion changed the task:\n%s\n%s", final, after)
	}
	refusedAs(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task.ID}, ""), "conflict", "start a done task")

	// A task of another project than the session's.
	var elsewhere taskOut
	outField(t, must(t, s.call(t, "create_agent_task", map[string]any{"project": "agent:local:other", "title": "Elsewhere"}, ""), "create other"), "task", &elsewhere)
	refusedAs(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": elsewhere.ID}, ""),
		"session_project_mismatch", "start another project's task")
	expiry(t, s, sess)
	// update under CAS, then cancel.
	var upd taskOut
	outField(t, must(t, s.call(t, "update_agent_task", map[string]any{"task_id": elsewhere.ID, "expected_revision": elsewhere.Revision,
		"priority": 7}, ""), "update"), "task", &upd)
	refusedAs(t, s.call(t, "update_agent_task", map[string]any{"task_id": elsewhere.ID, "expected_revision": elsewhere.Revision,
		"priority": 8}, ""), "revision_conflict", "stale update")
	var cancelled taskOut
	outField(t, must(t, s.call(t, "cancel_agent_task", map[string]any{"task_id": elsewhere.ID}, ""), "cancel"), "task", &cancelled)
	if cancelled.State != "cancelled" {
		t.Fatalf("cancelled %+v", cancelled)
	}
}

// expiry: an attempt the app's Service expires (as its background loop
// does, here at a later now) reopens its task, and its heartbeat is then
// refused (attempt_not_live) with nothing changed.
func expiry(t *testing.T, s *server, sess string) {
	t.Helper()
	var task taskOut
	outField(t, must(t, s.call(t, "create_agent_task", map[string]any{"project": taskProject, "title": "Lapses"}, ""), "create"), "task", &task)
	var a attemptOut
	outField(t, must(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task.ID,
		"lease_seconds": 3600}, ""), "start"), "attempt", &a)
	expired, err := s.a.Tasks.Expire(context.Background(), time.Now().Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 1 || expired[0].ID != a.ID {
		t.Fatalf("expired %+v, want attempt %s", expired, a.ID)
	}
	before, read, attempts := readTask(t, s, s.token, task.ID)
	if read.State != "open" || len(attempts) != 1 || attempts[0].State != "expired" {
		t.Fatalf("after expiry: %s", before)
	}
	r := s.call(t, "heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": a.ID, "fence": a.Fence}, "")
	refusedAs(t, r, "stale_precondition", "heartbeat an expired attempt")
	var reason string
	outField(t, r, "reason", &reason)
	if reason != "attempt_not_live" {
		t.Errorf("heartbeat of an expired attempt: reason %q, want attempt_not_live", reason)
	}
	if after, _, _ := readTask(t, s, s.token, task.ID); after != before {
		t.Fatalf("a refused heartbeat changed the task:\n%s\n%s", before, after)
	}
}

// TestProjectCredentialAgentTasks: a credential bound to one project
// reaches that project's Agent Tasks only; another project's task is
// refused by id and unchanged.
func TestProjectCredentialAgentTasks(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	defer s.stop(t)
	cred, _, err := s.a.Auth.CreateProjectCredential(context.Background(), "", auth.DefaultOwner, "agent:local:p", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var theirs, mine taskOut
	outField(t, must(t, s.call(t, "create_agent_task", map[string]any{"project": "agent:local:q", "title": "Theirs"}, ""), "create q"), "task", &theirs)
	outField(t, must(t, s.callAs(t, cred, "create_agent_task", map[string]any{"project": "agent:local:p", "title": "Mine"}, ""), "create p"), "task", &mine)
	before, _, _ := readTask(t, s, s.token, theirs.ID)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_agent_task", map[string]any{"task_id": theirs.ID}},
		{"update_agent_task", map[string]any{"task_id": theirs.ID, "expected_revision": theirs.Revision, "title": "Taken"}},
		{"cancel_agent_task", map[string]any{"task_id": theirs.ID}},
	} {
		refusedAs(t, s.callAs(t, cred, c.tool, c.args, ""), "permission_denied", c.tool)
	}
	if r := s.callAs(t, cred, "create_agent_task", map[string]any{"project": "agent:local:q", "title": "x"}, ""); r.Success {
		t.Fatal("the credential created a task on another project")
	}
	if after, _, _ := readTask(t, s, s.token, theirs.ID); after != before {
		t.Fatalf("refused calls changed the task:\n%s\n%s", before, after)
	}
	readTask(t, s, cred, mine.ID)
}
