package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// jobView is the part of an observe_jobs entry these tests read.
type jobView struct {
	Job struct {
		JobID    string `json:"job_id"`
		State    string `json:"state"`
		Reason   string `json:"reason"`
		ExitCode *int   `json:"exit_code"`
		Runner   string `json:"runner"`
	} `json:"job"`
	Stdout struct {
		Text string `json:"text"`
	} `json:"stdout"`
}

// observeJob observes one job of the runner project, waiting up to wait
// seconds for wakeOn.
func observeJob(t *testing.T, base, id, wakeOn string, wait int) jobView {
	t.Helper()
	var out struct {
		Jobs []jobView `json:"jobs"`
	}
	call(t, base, "observe_jobs", map[string]any{"project": remoteProject, "job_ids": []string{id}, "wait_seconds": wait, "wake_on": wakeOn}, &out)
	if len(out.Jobs) != 1 {
		t.Fatalf("observe_jobs %s: %+v", id, out)
	}
	return out.Jobs[0]
}

// waitOutput observes job id until its stdout holds want.
func waitOutput(t *testing.T, base, id, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v := observeJob(t, base, id, "change", 5)
		if strings.Contains(v.Stdout.Text, want) {
			return
		}
		if v.Job.State != "running" || time.Now().After(deadline) {
			t.Fatalf("job %s never printed %q: %+v", id, want, v)
		}
	}
}

// TestRunnerJobsOutliveAServerKill: kill -9 of the server while two jobs
// run on a runner. One finishes while the server is down, the other after
// it is back. The restarted server reconciles them from the runner's
// inventory: both terminal states arrive with all their output, each byte
// once, and nothing acknowledged is lost.
func TestRunnerJobsOutliveAServerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerJobsOutliveAServerKill)
}

func runnerJobsOutliveAServerKill(t *testing.T, transport string) {
	f := newRunnerFixture(t)
	r := startRunner(t, f.srv.base, f.toml, f.token, "--transport", transport)
	start := func(gate string, code int) string {
		var out struct {
			Job struct {
				JobID string `json:"job_id"`
			} `json:"job"`
		}
		cmd := "echo before; while [ ! -f " + gate + " ]; do sleep 0.05; done; echo after; exit " + string(rune('0'+code))
		call(t, f.srv.base, "run_job", map[string]any{"project": remoteProject, "command": cmd}, &out)
		return out.Job.JobID
	}
	early, late := start("gate-early", 3), start("gate-late", 0)
	waitOutput(t, f.srv.base, early, "before")
	waitOutput(t, f.srv.base, late, "before")

	addr := strings.TrimPrefix(f.srv.base, "http://")
	f.srv.cmd.Process.Kill()
	<-f.srv.done
	// While the server is down, the early job ends on the runner.
	if err := os.WriteFile(filepath.Join(f.dir, "gate-early"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--data-dir", f.data, "--listen", addr)
	r.waitConnected(t) // the runner is back, with its inventory

	got := observeJob(t, srv.base, early, "terminal", 60)
	if got.Job.State != "failed" || got.Job.ExitCode == nil || *got.Job.ExitCode != 3 || got.Stdout.Text != "before\nafter\n" {
		t.Fatalf("the job that ended while the server was down: %+v", got)
	}
	if got.Job.Runner != "box" {
		t.Fatalf("the job's record does not name its runner: %+v", got.Job)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "gate-late"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got = observeJob(t, srv.base, late, "terminal", 60)
	if got.Job.State != "succeeded" || got.Stdout.Text != "before\nafter\n" {
		t.Fatalf("the job that ended after the restart: %+v", got)
	}

	// The runner released both: a further restart of the runner finds
	// nothing to lose, and the records stay as they are.
	ctx := context.Background()
	res, err := callTool(ctx, srv.base, "list_runners", map[string]any{}, "")
	if err != nil || !res.Success || !strings.Contains(string(res.Output), `"active_processes":0`) {
		t.Fatalf("list_runners after both jobs ended: %v %+v %s", err, res.Error, res.Output)
	}
}

// TestRunnerJobContinuesAcrossACutConnection: the connection to the runner
// is cut while a job runs there. The request in flight ends
// outcome_unknown; the job does not: the runner reconnects, the server
// attaches to the process again from the bytes it holds, and the job ends
// with all its output, each byte once.
func TestRunnerJobContinuesAcrossACutConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	f := newRunnerFixture(t)
	proxy := startCutProxy(t, strings.TrimPrefix(f.srv.base, "http://"), "cut-here.txt", false)
	r := startRunner(t, "http://"+proxy.ln.Addr().String(), f.toml, f.token)
	var job struct {
		Job struct {
			JobID string `json:"job_id"`
		} `json:"job"`
	}
	call(t, f.srv.base, "run_job", map[string]any{"project": remoteProject,
		"command": "echo before; while [ ! -f gate ]; do sleep 0.05; done; echo after"}, &job)
	waitOutput(t, f.srv.base, job.Job.JobID, "before")

	res, err := callTool(context.Background(), f.srv.base, "read_files", map[string]any{"project": remoteProject,
		"files": []any{map[string]any{"path": "cut-here.txt"}}}, "")
	if err != nil || res.Success || res.Error.Kind != "outcome_unknown" {
		t.Fatalf("a read whose connection was cut: %v %+v", err, res)
	}
	r.waitConnected(t) // through the proxy again
	if v := observeJob(t, f.srv.base, job.Job.JobID, "change", 0); v.Job.State != "running" {
		t.Fatalf("the job after the cut: %+v", v)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := observeJob(t, f.srv.base, job.Job.JobID, "terminal", 60)
	if got.Job.State != "succeeded" || got.Stdout.Text != "before\nafter\n" {
		t.Fatalf("the job that ran across the cut: %+v", got)
	}
}
