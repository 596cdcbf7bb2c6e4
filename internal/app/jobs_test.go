//go:build unix

package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestJobsAcrossRestart: a job running at shutdown has its process group
// killed and is recorded lost (server_shutdown); after a restart the record
// and its last output are still readable.
func TestJobsAcrossRestart(t *testing.T) {
	data, proj := t.TempDir(), t.TempDir()
	s := startApp(t, data, "demo="+proj)
	const p = "agent:local:demo"
	r := must(t, s.call(t, "run_job", map[string]any{"project": p, "command": "echo $$ > pid; echo partial; sleep 60"}, ""), "run_job")
	var started struct {
		Job struct {
			JobID string `json:"job_id"`
		} `json:"job"`
	}
	json.Unmarshal(r.Output["job"], &started.Job)
	id := started.Job.JobID
	if !strings.HasPrefix(id, "wc_job_") {
		t.Fatalf("run_job output %s", r.Output["job"])
	}
	zero := map[string]any{id: map[string]any{"stdout": 0}}
	for {
		r = must(t, s.call(t, "observe_jobs", map[string]any{"project": p, "job_ids": []string{id}, "wait_seconds": 30, "cursors": zero}, ""), "observe_jobs")
		if strings.Contains(string(r.Output["jobs"]), "partial") {
			break
		}
	}
	b, _ := os.ReadFile(filepath.Join(proj, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	s.stop(t)
	if pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Fatalf("the job's process %d outlived the server", pid)
	}
	if st, err := os.Stat(filepath.Join(data, "jobs", id)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("job output directory: %v %v", st, err)
	}

	s = startApp(t, data, "demo="+proj)
	defer s.stop(t)
	r = must(t, s.call(t, "read_job_tail", map[string]any{"project": p, "job_id": id}, ""), "read_job_tail")
	var tail struct {
		State string `json:"state"`
		Text  string `json:"text"`
	}
	raw, _ := json.Marshal(r.Output)
	json.Unmarshal(raw, &tail)
	if tail.State != "lost" || tail.Text != "partial\n" {
		t.Fatalf("after restart: %s", raw)
	}
	r = must(t, s.call(t, "list_jobs", map[string]any{"project": p}, ""), "list_jobs")
	if !strings.Contains(string(r.Output["jobs"]), `"reason":"server_shutdown"`) {
		t.Fatalf("list after restart: %s", r.Output["jobs"])
	}
}
