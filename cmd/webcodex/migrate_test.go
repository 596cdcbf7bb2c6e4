package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/project/filerev"
)

// TestMigrateToPostgres fills a data directory through a real server,
// copies it with `webcodex migrate` into an empty database, refuses a
// second copy into the same (now non-empty) database, and then serves the
// copy: the session, its board, the memory entry and the evidence are
// there, and `webcodex evidence verify` passes on it.
func TestMigrateToPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	dbURL := pgtest.URL(t)
	ctx := context.Background()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	call := func(base, tool string, args map[string]any, recorder string) json.RawMessage {
		t.Helper()
		r, err := callTool(ctx, base, tool, args, recorder)
		if err != nil || !r.Success {
			t.Fatalf("%s: %v %+v", tool, err, r.Error)
		}
		return r.Output
	}
	var start struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(call(srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "migrate me"}, ""), &start)
	call(srv.base, "write_project_file", map[string]any{"project": "agent:local:demo", "path": "a.txt", "content": "a"}, start.SessionID)
	call(srv.base, "post_session_message", map[string]any{"session_id": start.SessionID, "kind": "note", "message": "carried over"}, "")
	call(srv.base, "memory_set", map[string]any{"project": "agent:local:demo", "memory_key": "build", "body": "go test ./..."}, "")
	// An events cursor taken before the tasks exist stays valid on the
	// database: the feed and its key are carried over.
	var events struct {
		Token string `json:"events_token"`
		Tasks []struct {
			ID string `json:"task_id"`
		} `json:"tasks"`
	}
	json.Unmarshal(call(srv.base, "wait_for_agent_events", map[string]any{"project": "agent:local:demo"}, ""), &events)
	etok := events.Token
	// An Agent Task with a label, a dependent task, and a live attempt:
	// every table of tasks.db has a row.
	var made struct {
		Task struct {
			ID string `json:"task_id"`
		} `json:"task"`
	}
	json.Unmarshal(call(srv.base, "create_agent_task", map[string]any{"project": "agent:local:demo", "title": "first", "labels": []string{"carried"}}, ""), &made)
	task := made.Task.ID
	call(srv.base, "create_agent_task", map[string]any{"project": "agent:local:demo", "title": "second", "depends_on": []string{task}}, "")
	call(srv.base, "start_agent_task_attempt", map[string]any{"session_id": start.SessionID, "task_id": task}, "")
	// Two overlapping intents: every table of intents.db has a row (the
	// first session's notice is still pending).
	call(srv.base, "declare_intent", map[string]any{"session_id": start.SessionID, "paths": []string{"a.txt"}}, "")
	var second struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(call(srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "overlap"}, ""), &second)
	call(srv.base, "declare_intent", map[string]any{"session_id": second.SessionID, "paths": []string{"*.txt"}}, "")
	// Last (the session's next call would take the notice), a change by a
	// call without a session: the session's read of a.txt and its pending
	// notice fill both tables of readsets.db.
	call(srv.base, "write_project_file", map[string]any{"project": "agent:local:demo", "path": "a.txt", "content": "b",
		"expected_sha256": filerev.SHA256([]byte("a"))}, "")
	stopServe(t, srv)
	// Retention purged the evidence payloads: the purge log is carried
	// over, so the copy still verifies (no unlogged_purge).
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Checkpoint(ctx)
	sum, err := j.PurgeBefore(ctx, "evidence_days", time.Now().Add(time.Hour), 0)
	j.Close()
	if err != nil || sum.Purged == 0 {
		t.Fatalf("purge: %+v %v", sum, err)
	}

	out := mustRun(t, "migrate", "--from", data, "--to", dbURL)
	if !strings.Contains(out, "Copied and verified") || !strings.Contains(out, "workflow.sessions") || !strings.Contains(out, "evidence.records") ||
		!strings.Contains(out, "evidence.purges") ||
		!strings.Contains(out, "tasks.attempts") || !strings.Contains(out, "intents.notices") ||
		!regexp.MustCompile(`readsets\.reads +1 `).MatchString(out) || !regexp.MustCompile(`readsets\.notices +1 `).MatchString(out) {
		t.Fatalf("migrate:\n%s", out)
	}
	again, err := run(t, "migrate", "--from", data, "--to", dbURL)
	if failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a second migrate into the same database: %v\n%s", err, again)
	}

	key := filepath.Join(data, evidence.KeyFile)
	pg := startServe(t, "--data-dir", t.TempDir(), "--database", dbURL, "--evidence-key", key, "--project", "demo="+proj)
	var summary map[string]json.RawMessage
	json.Unmarshal(call(pg.base, "session_summary", map[string]any{"session_id": start.SessionID}, ""), &summary)
	if !strings.Contains(string(call(pg.base, "list_session_messages", map[string]any{"session_id": start.SessionID}, "")), "carried over") {
		t.Fatal("the board was not carried over")
	}
	if !strings.Contains(string(call(pg.base, "memory_read", map[string]any{"project": "agent:local:demo", "memory_key": "build"}, "")), "go test ./...") {
		t.Fatal("the memory entry was not carried over")
	}
	var read struct {
		Task struct {
			State  string   `json:"state"`
			Labels []string `json:"labels"`
		} `json:"task"`
		Attempts []struct {
			SessionID string `json:"session_id"`
			State     string `json:"state"`
		} `json:"attempts"`
	}
	json.Unmarshal(call(pg.base, "read_agent_task", map[string]any{"task_id": task}, ""), &read)
	if read.Task.State != "claimed" || len(read.Task.Labels) != 1 || len(read.Attempts) != 1 ||
		read.Attempts[0].SessionID != start.SessionID || read.Attempts[0].State != "live" {
		t.Fatalf("the agent task was not carried over: %+v", read)
	}
	json.Unmarshal(call(pg.base, "wait_for_agent_events", map[string]any{"project": "agent:local:demo", "after_events_token": etok}, ""), &events)
	if len(events.Tasks) != 2 || events.Tasks[1].ID != task {
		t.Fatalf("the events cursor after the migration: %+v", events)
	}
	var intents struct {
		Intents []struct {
			SessionID string   `json:"session_id"`
			Overlaps  []string `json:"overlaps"`
		} `json:"intents"`
	}
	json.Unmarshal(call(pg.base, "list_intents", map[string]any{"project": "agent:local:demo"}, ""), &intents)
	if len(intents.Intents) != 2 || intents.Intents[0].SessionID != start.SessionID || len(intents.Intents[0].Overlaps) != 1 ||
		intents.Intents[0].Overlaps[0] != second.SessionID {
		t.Fatalf("the intents were not carried over: %+v", intents)
	}
	stopServe(t, pg)
	verifyReplicaEvidence(t, dbURL, key)
}
