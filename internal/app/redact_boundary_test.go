package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/redact/redacttest"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// TestCredentialsAtAnyBoundaryNeverReachDisk (issue 24): every credential
// pattern, planted behind every kind of preceding character (the start, a
// word boundary, _ - . / a digit, a letter), goes through real tool calls
// into every store — a Workflow Session's instruction (workflow.db), a
// memory body (memory.db), a recorded run_process's argv and output
// (evidence.db), a run_job's command and purpose (jobs.db), a goal's
// objective and a session message, an Agent Task's body and completion
// summary (tasks.db), and the audit trail (audit.db) — and
// afterwards no file of the data directory and no line
// of the debug log holds any planted secret.
func TestCredentialsAtAnyBoundaryNeverReachDisk(t *testing.T) {
	data := t.TempDir()
	var logged syncBuffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := startAppLogging(t, data, log, nil, "p="+rawProjectDir(t))
	stopped := false
	defer func() {
		if !stopped {
			s.stop(t)
		}
	}()
	w := must(t, s.call(t, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "plant credentials"}, ""), "start")
	id := str(t, w.Output["session_id"])
	for i, c := range redacttest.Credentials {
		var glued []string
		for _, b := range redacttest.Before {
			glued = append(glued, b.Text+c.Planted)
		}
		text := strings.Join(glued, "\n")
		must(t, s.call(t, "work_on_project", map[string]any{"project": rawProjectID, "session_id": id, "instruction": text}, ""), c.Name+" instruction")
		must(t, s.call(t, "memory_set", map[string]any{"project": rawProjectID, "memory_key": fmt.Sprintf("planted-%d", i), "body": text}, id), c.Name+" memory_set")
		r := must(t, s.call(t, "run_process", map[string]any{"project": rawProjectID, "argv": []string{"printf", "%s\n", text}}, id), c.Name+" run_process")
		// The caller gets its own output back; only what is kept is redacted.
		if !strings.Contains(string(r.Output["stdout"]), c.Secret) {
			t.Fatalf("%s: run_process did not print the planted text: %s", c.Name, r.Output["stdout"])
		}
		// A background job's record (jobs.db) and its recorded call. Its
		// command prints nothing: a job's output files are the process's
		// own output, kept unredacted for the caller to read back.
		job := map[string]any{"project": rawProjectID, "session_id": id, "command": ": '" + text + "'"}
		if purpose := "x_" + c.Planted; len(purpose) <= command.MaxPurposeChars {
			job["purpose"] = purpose
		}
		must(t, s.call(t, "run_job", job, id), c.Name+" run_job")
		// A Project Goal's objective and a session message (workflow.db).
		must(t, s.call(t, "create_goal", map[string]any{"project": rawProjectID, "title": fmt.Sprintf("planted %d", i),
			"objective": text}, ""), c.Name+" create_goal")
		must(t, s.call(t, "post_session_message", map[string]any{"session_id": id, "kind": "note", "message": text}, ""), c.Name+" post_session_message")
		// An Agent Task's body and its attempt's completion summary (tasks.db).
		var task struct {
			ID string `json:"task_id"`
		}
		json.Unmarshal(must(t, s.call(t, "create_agent_task", map[string]any{"project": rawProjectID, "title": fmt.Sprintf("planted %d", i),
			"body": text}, ""), c.Name+" create_agent_task").Output["task"], &task)
		var attempt struct {
			ID    string `json:"attempt_id"`
			Fence int64  `json:"fence"`
		}
		json.Unmarshal(must(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": id, "task_id": task.ID}, ""),
			c.Name+" start_agent_task_attempt").Output["attempt"], &attempt)
		must(t, s.call(t, "complete_agent_task_attempt", map[string]any{"session_id": id, "attempt_id": attempt.ID, "fence": attempt.Fence,
			"outcome": "done", "summary": text, "completion_key": "planted"}, ""), c.Name+" complete_agent_task_attempt")
	}
	s.stop(t)
	stopped = true

	var files []string
	filepathWalk(t, data, func(path string, b []byte) {
		files = append(files, filepath.Base(path))
		for _, c := range redacttest.Credentials {
			if bytes.Contains(b, []byte(c.Secret)) {
				t.Errorf("%s holds the planted %s credential", filepath.Base(path), c.Name)
			}
		}
	})
	for _, db := range []string{"workflow.db", "memory.db", "evidence.db", "audit.db", "jobs.db", "tasks.db"} {
		found := false
		for _, f := range files {
			found = found || strings.HasPrefix(f, db)
		}
		if !found {
			t.Errorf("no %s in the data directory %v: the scan covered nothing of it", db, files)
		}
	}
	if logged.b.Len() == 0 {
		t.Fatal("nothing was logged: the log scan covered nothing")
	}
	for _, c := range redacttest.Credentials {
		if bytes.Contains(logged.b.Bytes(), []byte(c.Secret)) {
			t.Errorf("the log holds the planted %s credential", c.Name)
		}
	}
}
