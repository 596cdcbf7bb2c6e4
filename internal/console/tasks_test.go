package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
)

// TestTaskPageBounds pins how many tasks one state's section shows and
// how many projects the intents map shows unfiltered.
func TestTaskPageBounds(t *testing.T) {
	if console.TaskSectionLimit != 20 || console.IntentMapProjects != 10 {
		t.Fatalf("TaskSectionLimit = %d, IntentMapProjects = %d, want 20 and 10", console.TaskSectionLimit, console.IntentMapProjects)
	}
}

// TestTasksPage: the page groups the viewer's tasks by state, shows a
// claimed task's attempt session, fence and lease age and a finished
// task's summary, escapes what agents wrote, maps the live intents with
// their overlaps, and shows nothing of another authority group's tasks or
// intents.
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

	// Two sessions declare overlapping intents; a third's intent meets
	// neither; bob's is another authority group's.
	other, third := s.startSession(t, alice, "reviewer"), s.startSession(t, alice, "docs")
	s.call(t, alice, "declare_intent", map[string]any{"session_id": worker, "paths": []string{"internal/parser/**"}, "note": "port the <i>parser</i>"})
	s.call(t, alice, "declare_intent", map[string]any{"session_id": other, "paths": []string{"internal/parser/lex.go"}})
	s.call(t, alice, "declare_intent", map[string]any{"session_id": third, "paths": []string{"docs/*.md"}})
	bobSession := s.startSession(t, bob, "bob's")
	s.call(t, bob, "declare_intent", map[string]any{"session_id": bobSession, "paths": []string{"internal/parser/secret.go"}})

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
	// The intents map: each session's globs, the two overlapping rows
	// marked and naming each other, the third not, bob's absent.
	rows := map[string]string{}
	for _, row := range strings.Split(p.body, "<tr") {
		for _, id := range []string{worker, other, third} {
			if strings.Contains(row, `<td><a href="/console/sessions/`+id+`">`) {
				rows[id] = row
			}
		}
	}
	if !strings.Contains(p.body, `id="intents-map"`) || !strings.Contains(rows[worker], "<code>internal/parser/**</code>") ||
		!strings.Contains(rows[worker], "port the &lt;i&gt;parser&lt;/i&gt;") {
		t.Fatalf("the intents map lacks the worker's intent: %q", rows[worker])
	}
	for id, want := range map[string]string{worker: other, other: worker} {
		if !strings.HasPrefix(rows[id], ` class="overlap"`) || !strings.Contains(rows[id], "/console/sessions/"+want) {
			t.Errorf("intent of %s is not marked as overlapping %s: %q", id, want, rows[id])
		}
	}
	if strings.HasPrefix(rows[third], ` class="overlap"`) || !strings.Contains(rows[third], "none") {
		t.Errorf("the third intent is marked overlapping: %q", rows[third])
	}
	if strings.Contains(p.body, bobSession) || strings.Contains(p.body, "secret.go") {
		t.Error("the intents map shows another authority group's intent")
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
