//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/runner"
)

// escapeScript starts a setsid, a double-forked and a nohup sleep and
// appends their pids to pidFile.
func escapeScript(pidFile string) string {
	q := "'" + pidFile + "'"
	return `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> ` + q + `; ` +
		`(sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> ` + q + `) & wait $!; ` +
		`nohup sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> ` + q
}

// readPids reads the pids a run wrote and kills them at cleanup in case
// the test fails (they are this test's own processes).
func readPids(t *testing.T, path string, want int) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file holds %q", f)
		}
		pids = append(pids, pid)
	}
	if len(pids) != want {
		t.Fatalf("%d pids in %s, want %d", len(pids), path, want)
	}
	t.Cleanup(func() {
		for _, pid := range runner.Live(pids) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// fifo makes a named pipe the run writes "ready" to; wait blocks until it
// did.
// scratch returns a fresh directory outside the test's data and project
// directories, and a data directory whose config.toml lets sandboxed runs
// write the scratch directory (where the test's processes report their
// pids).
func scratch(t *testing.T) (dir, data string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "webcodex-contain-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data = t.TempDir()
	conf := fmt.Sprintf("sandbox_extra_write = [%q]\n", dir)
	if err := os.WriteFile(filepath.Join(data, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// fifo makes a FIFO in dir and returns it with a wait that blocks until a
// writer has written "ready" and closed it.
func fifo(t *testing.T, dir string) (path string, wait func()) {
	t.Helper()
	path = filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		b, err := os.ReadFile(path) // opens when the writer does, ends at its close
		if err != nil || strings.TrimSpace(string(b)) != "ready" {
			t.Fatalf("ready pipe: %q %v", b, err)
		}
	}
}

// TestSIGTERMKillsEscapedDescendants: a real `webcodex serve` runs a job
// and a session shell that each leave a setsid, a double-forked and a
// nohup sleep; SIGTERM ends the server, and none of those processes
// survives it. The banner names the containment mechanism.
func TestSIGTERMKillsEscapedDescendants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	tmp, data := scratch(t)
	proj := t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	if mech := statusContainment(t, srv.base); mech != "cgroup" && mech != "subreaper" {
		t.Fatalf("/api/status containment %q", mech)
	}
	sess := field(t, mustCall(t, srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "contain"}), "session_id")

	jobPids, shellPids := filepath.Join(tmp, "job"), filepath.Join(tmp, "shell")
	ready, wait := fifo(t, tmp)
	job := field(t, mustCall(t, srv.base, "run_job", map[string]any{"project": "agent:local:demo", "session_id": sess,
		"command": escapeScript(jobPids) + "; echo ready > '" + ready + "'; sleep 1000"}), "job", "job_id")
	wait()
	shell := field(t, mustCall(t, srv.base, "open_session_shell", map[string]any{"session_id": sess}), "shell", "shell_id")
	mustCall(t, srv.base, "session_shell_exec", map[string]any{"session_id": sess, "shell_id": shell, "command": escapeScript(shellPids)})
	pids := append(readPids(t, jobPids, 3), readPids(t, shellPids, 3)...)
	if live := runner.Live(pids); len(live) != len(pids) {
		t.Fatalf("only %v of %v are running before the shutdown", live, pids)
	}

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not stop after SIGTERM")
	}
	if live := runner.Live(pids); len(live) > 0 {
		t.Fatalf("processes %v survived the server's shutdown", live)
	}
	for _, id := range []string{job, shell} {
		if sv := runner.Survivors(id); len(sv) > 0 {
			t.Fatalf("processes %v carrying marker %s survived", sv, id)
		}
	}
}

// TestCrashRestartKillsLostJobSurvivors: a server killed with SIGKILL while
// a job's setsid sleep runs leaves the sleep alive; the next start marks
// the job lost and kills the sleep (and the job's leader).
func TestCrashRestartKillsLostJobSurvivors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	tmp, data := scratch(t)
	proj := t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	pidFile := filepath.Join(tmp, "pids")
	ready, wait := fifo(t, tmp)
	job := field(t, mustCall(t, srv.base, "run_job", map[string]any{"project": "agent:local:demo",
		"command": "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '" + pidFile + "'; echo $$ >> '" + pidFile + "'; echo ready > '" + ready + "'; sleep 1000"}), "job", "job_id")
	wait()
	pids := readPids(t, pidFile, 2)
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	if live := runner.Live(pids); len(live) != 2 {
		t.Fatalf("the job's processes should outlive a SIGKILLed server, live: %v of %v", live, pids)
	}

	srv2 := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	if live := runner.Live(pids); len(live) > 0 {
		t.Fatalf("processes %v of the lost job survived the restart", live)
	}
	if sv := runner.Survivors(job); len(sv) > 0 {
		t.Fatalf("processes %v carrying the job's marker survived the restart", sv)
	}
	srv2.cmd.Process.Signal(syscall.SIGTERM)
	<-srv2.done
	st, err := jobsdb.Open(context.Background(), filepath.Join(data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j, err := st.Get(context.Background(), job)
	if err != nil || j.State != jobs.Lost || j.Reason != jobs.ReasonServerRestart || !j.KilledGroup || j.Process == nil || j.Process.PID != pids[1] {
		t.Fatalf("recovered job %+v %v", j, err)
	}
}

// statusContainment reads the containment mechanism from /api/status.
func statusContainment(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Containment string `json:"containment"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Containment
}
