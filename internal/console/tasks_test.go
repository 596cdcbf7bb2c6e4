package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
)

// TestTaskSectionLimit pins how many tasks one state's section shows.
func TestTaskSectionLimit(t *testing.T) {
	if console.TaskSectionLimit != 20 {
		t.Fatalf("TaskSectionLimit = %d, want 20", console.TaskSectionLimit)
	}
}

// TestTasksPage: the page groups the viewer's tasks by state, shows a
// claimed task's attempt session, fence and lease age and a finished
// task's summary, escapes what agents wrote, and shows nothing of
// another authority group's tasks.
func TestTasksPage(t *testing.T) {
	s := start(t)
	alice, bob := s.token(t, "alice"), s.token(t, "bob")
	create := func(tok, title string) string {
		var task struct {
			ID string `json:"task_id"`
		}
		json.Unmarshal(s.call(t, tok, "create_agent_task", map[string]any{"project": s.project, "title": title})["task"], &task)
		return task.ID
	}
	claimed := create(alice, "Port the <b>parser</b>")
	finished := create(alice, "Write the docs")
	open := create(alice, "Benchmark the lexer")
	hidden := create(bob, "Bob's secret plan")
	worker := s.startSession(t, alice, "worker")
	start := func(id string) (string, int64) {
		var a struct {
			ID    string `json:"attempt_id"`
			Fence int64  `json:"fence"`
		}
		json.Unmarshal(s.call(t, alice, "start_agent_task_attempt", map[string]any{"session_id": worker, "task_id": id})["attempt"], &a)
		return a.ID, a.Fence
	}
	start(claimed)
	id, fence := start(finished)
	s.call(t, alice, "complete_agent_task_attempt", map[string]any{"session_id": worker, "attempt_id": id, "fence": fence,
		"outcome": "done", "summary": "docs/tasks.md written", "completion_key": "k"})

	b := s.browser(t)
	b.login(alice)
	p := b.get("/console/tasks")
	if p.status != http.StatusOK {
		t.Fatalf("tasks page: %d %s", p.status, p.body)
	}
	for _, want := range []string{claimed, finished, open, "Port the &lt;b&gt;parser&lt;/b&gt;", "/console/sessions/" + worker,
		"fence 1", "lease age", "docs/tasks.md written", `id="tasks-claimed">claimed <span class="count">(1)`,
		`id="tasks-open">open <span class="count">(1)`, `id="tasks-done">done <span class="count">(1)`, "No failed tasks."} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the tasks page lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<b>parser") || strings.Contains(p.body, hidden) || strings.Contains(p.body, "secret plan") {
		t.Error("the tasks page shows raw HTML or another authority group's task")
	}
	if !strings.Contains(p.body, `href="/console/tasks" aria-current="page"`) {
		t.Error("the navigation does not mark the Tasks page")
	}

	// Another project filter shows none of these; a reader without
	// project:read is refused.
	if p := b.get("/console/tasks?project=agent:local:nothing"); p.status != http.StatusOK || strings.Contains(p.body, claimed) {
		t.Fatalf("filtered page: %d, shows the task: %v", p.status, strings.Contains(p.body, claimed))
	}
	nobody := s.browser(t)
	nobody.login(s.token(t, "alice", auth.ScopeJobRun))
	if p := nobody.get("/console/tasks"); p.status != http.StatusForbidden {
		t.Fatalf("tasks page without project:read: %d", p.status)
	}
}
