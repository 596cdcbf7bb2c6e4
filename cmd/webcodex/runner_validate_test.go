package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scriptDirsIn lists run_script's private directories under tmp.
func scriptDirsIn(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "webcodex-script-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeFiles writes name → body under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// callRaw calls tool and decodes its whole answer (error detail included)
// into out, returning the answer's bytes.
func callRaw(t *testing.T, base, tool string, args, out any) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || json.Unmarshal(data, out) != nil {
		t.Fatalf("%s: %v %s", tool, err, data)
	}
	return data
}

// validationSummary is the part of validation_summary these tests read.
type validationSummary struct {
	Runs   int `json:"runs"`
	Latest []struct {
		Tool     string   `json:"tool"`
		Verdict  string   `json:"verdict"`
		Passed   int      `json:"passed"`
		Failed   int      `json:"failed"`
		Failures []string `json:"failures"`
		Resolved []string `json:"resolved"`
		JobID    string   `json:"job_id"`
	} `json:"latest"`
	Unresolved []json.RawMessage `json:"unresolved"`
}

func validationState(t *testing.T, base, session string) validationSummary {
	t.Helper()
	var sum validationSummary
	call(t, base, "validation_summary", map[string]any{"session_id": session, "project": remoteProject}, &sum)
	return sum
}

// runnerValidation is the part of a validation result these tests read.
type runnerValidation struct {
	Verdict  string   `json:"verdict"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures"`
	Resolved []string `json:"resolved"`
	Sandbox  string   `json:"sandbox"`
}

// The structured validation tools and run_script run on the runner: go
// test of a real module there, recorded in the session as validation
// evidence (a failing run, then a passing one that resolves it); a script
// written to a private file in the runner's own temporary directory,
// never the server's, and removed when it ends.
func TestRunnerRunsValidationAndScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	f := newRunnerFixture(t)
	cfg, err := os.ReadFile(f.toml)
	if err != nil {
		t.Fatal(err)
	}
	// A resource the runner announces; it is never connected to.
	cfg = append(cfg, "\n[ssh.resources.db]\nhost = \"db.invalid\"\nuser = \"deploy\"\nidentity_file = \"/nonexistent/id\"\nknown_hosts_file = \"/nonexistent/known_hosts\"\n"...)
	if err := os.WriteFile(f.toml, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// The runner's temporary directory is not the server's (which was
	// fixed when the server started): a script file made by the server
	// would not land here.
	runnerTmp, runnerCache := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", runnerTmp)
	t.Setenv("XDG_CACHE_HOME", runnerCache)
	startRunner(t, f.srv.base, f.toml, f.token)
	ctx := context.Background()
	// As on a server, the user's cache directory stays writable under
	// the runner's sandbox (go's build cache).
	probe := filepath.Join(runnerCache, "probe")
	if r, err := callTool(ctx, f.srv.base, "run_process", map[string]any{"project": remoteProject, "argv": []string{"touch", probe}}, ""); err != nil || !r.Success {
		t.Fatalf("writing the runner's cache directory: %v %+v", err, r.Error)
	}
	if _, err := os.Stat(probe); err != nil {
		t.Fatal(err)
	}

	writeFiles(t, f.dir, map[string]string{
		"go.mod":            "module example.com/demo\n\ngo 1.21\n",
		"calc/calc.go":      "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"0+0\")\n\t}\n}\n",
	})
	var start struct {
		SessionID string `json:"session_id"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "fix Add on the runner"}, &start)
	goTest := func() toolResult {
		t.Helper()
		r, err := callTool(ctx, f.srv.base, "go_test", map[string]any{"project": remoteProject, "session_id": start.SessionID,
			"packages": []string{"./calc"}, "uncached": true}, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var whole struct {
		Output struct {
			Validation runnerValidation `json:"validation"`
		} `json:"output"`
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	raw := callRaw(t, f.srv.base, "go_test", map[string]any{"project": remoteProject, "session_id": start.SessionID,
		"packages": []string{"./calc"}, "uncached": true}, &whole)
	if v := whole.Output.Validation; whole.Error.Kind != "validation_failed" || v.Verdict != "failed" || v.Failed != 1 || v.Passed != 1 || len(v.Failures) != 1 ||
		!strings.Contains(v.Failures[0], "TestAdd") || v.Sandbox != "workspace-write" {
		t.Fatalf("the failing run's validation: %+v (%s)", v, raw)
	}

	writeFiles(t, f.dir, map[string]string{"calc/calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"})
	passing := goTest()
	var v runnerValidation
	if !passing.Success || json.Unmarshal(passing.Output, &v) != nil || v.Verdict != "passed" || v.Passed != 2 || v.Failed != 0 ||
		len(v.Resolved) != 1 || !strings.Contains(v.Resolved[0], "TestAdd") || v.Sandbox != "workspace-write" {
		t.Fatalf("go_test after the fix: %+v %s", passing.Error, passing.Output)
	}
	// The session's evidence holds both runs, as for a local project.
	if sum := validationState(t, f.srv.base, start.SessionID); sum.Runs != 2 || len(sum.Unresolved) != 0 || len(sum.Latest) != 1 ||
		sum.Latest[0].Verdict != "passed" || sum.Latest[0].Tool != "go_test" || len(sum.Latest[0].Resolved) != 1 {
		t.Fatalf("validation_summary after the fix: %+v", sum)
	}
	ev, err := callTool(ctx, f.srv.base, "session_summary", map[string]any{"session_id": start.SessionID}, "")
	if err != nil || !ev.Success || strings.Count(string(ev.Output), `"go_test"`) < 2 {
		t.Fatalf("the session does not record both go_test runs: %v %s", err, ev.Output)
	}

	checkScriptsOnRunner(t, f.srv.base, start.SessionID, runnerTmp)
	runs := 2
	if _, err := exec.LookPath("pytest"); err == nil {
		checkPytestOnRunner(t, f, start.SessionID, runnerTmp)
		runs++
	}

	// Bad inputs: nothing starts.
	// A script over what a start carries through a runner.
	big := "touch too-big-ran\n" + strings.Repeat("#", 16<<10)
	r, err := callTool(ctx, f.srv.base, "run_script", map[string]any{"project": remoteProject, "interpreter": "sh", "script": big}, "")
	if err != nil || r.Success || r.Error.Kind != "invalid_arguments" || !strings.Contains(r.Error.Message, "16384") || !strings.Contains(r.Error.Message, "runner box") {
		t.Fatalf("an oversized script through the runner: %v %+v", err, r)
	}
	// A cwd that is not a directory on the runner: checked there, and
	// refused as for a local project, before anything starts.
	for _, cwd := range []string{"no/such/dir", "go.mod", "../outside"} {
		nocwd, err := callTool(ctx, f.srv.base, "go_test", map[string]any{"project": remoteProject, "cwd": cwd}, "")
		if err != nil || nocwd.Success || nocwd.Error.Kind != "invalid_arguments" {
			t.Fatalf("go_test in cwd %s on the runner: %v %+v", cwd, err, nocwd)
		}
	}
	// With an SSH resource selected, run_script and the validation tools
	// fail before anything starts, never on the runner's host instead.
	up, err := callTool(ctx, f.srv.base, "update_session_context", map[string]any{"session_id": start.SessionID, "resource": "db"}, "")
	if err != nil || !up.Success {
		t.Fatalf("selecting the resource: %v %+v", err, up.Error)
	}
	for tool, args := range map[string]map[string]any{
		"run_script": {"interpreter": "sh", "script": "touch resource-ran"},
		"go_test":    {"packages": []string{"./calc"}},
		"run_tests":  {"runner": "node"},
	} {
		args["project"], args["session_id"] = remoteProject, start.SessionID
		r, err := callTool(ctx, f.srv.base, tool, args, "")
		if err != nil || r.Success || r.Error.Kind != "resource_not_allowed" {
			t.Fatalf("%s with a resource selected: %v %+v", tool, err, r)
		}
	}
	for _, name := range []string{"too-big-ran", "resource-ran"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a refused run_script ran (%s): %v", name, err)
		}
	}
	if d := scriptDirsIn(t, runnerTmp); len(d) != 0 {
		t.Fatalf("script directories left on the runner: %v", d)
	}
	var jobs struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	call(t, f.srv.base, "list_jobs", map[string]any{"project": remoteProject}, &jobs)
	if len(jobs.Jobs) != 0 {
		t.Fatalf("jobs left by the runs and the refusals: %s", fmt.Sprint(jobs.Jobs))
	}
	if sum := validationState(t, f.srv.base, start.SessionID); sum.Runs != runs {
		t.Fatalf("the refusals changed the session's evidence: %d runs, want %d", sum.Runs, runs)
	}
}

// checkScriptsOnRunner runs scripts (sh, and python3 when there is one)
// through the runner: each file is made in the runner's temporary
// directory, never the server's, privately, and is gone when the call
// returns.
func checkScriptsOnRunner(t *testing.T, base, session, runnerTmp string) {
	t.Helper()
	ctx := context.Background()
	interpreters := map[string]string{"sh": `echo "$0"; ls -ld "$0" "$(dirname "$0")"; echo "args=$*"`}
	if _, err := exec.LookPath("python3"); err == nil {
		interpreters["python3"] = "import os, stat, sys\nprint(sys.argv[0])\nfor p in (sys.argv[0], os.path.dirname(sys.argv[0])):\n    print(stat.filemode(os.stat(p).st_mode), p)\nprint('args=' + ' '.join(sys.argv[1:]))\n"
	}
	for interp, script := range interpreters {
		r, err := callTool(ctx, base, "run_script", map[string]any{"project": remoteProject, "session_id": session,
			"interpreter": interp, "script": script, "args": []string{"one", "two"}}, "")
		var out struct {
			Stdout struct {
				Text string `json:"text"`
			} `json:"stdout"`
			Sandbox string `json:"sandbox"`
		}
		if err != nil || !r.Success || json.Unmarshal(r.Output, &out) != nil {
			t.Fatalf("run_script %s through the runner: %v %+v %s", interp, err, r.Error, r.Output)
		}
		lines := strings.Split(strings.TrimSpace(out.Stdout.Text), "\n")
		if len(lines) != 4 || lines[3] != "args=one two" || out.Sandbox != "workspace-write" {
			t.Fatalf("run_script %s output: %+v", interp, out)
		}
		file := lines[0]
		if filepath.Dir(filepath.Dir(file)) != runnerTmp || !strings.HasPrefix(filepath.Base(filepath.Dir(file)), "webcodex-script-") {
			t.Fatalf("run_script %s ran %s, not a file in the runner's temporary directory %s", interp, file, runnerTmp)
		}
		modes := map[string]bool{}
		for _, l := range lines[1:3] {
			switch {
			case strings.HasPrefix(l, "-rw------- ") && strings.HasSuffix(l, " "+file):
				modes["file"] = true
			case strings.HasPrefix(l, "drwx------ ") && strings.HasSuffix(l, " "+filepath.Dir(file)):
				modes["dir"] = true
			}
		}
		if !modes["file"] || !modes["dir"] {
			t.Fatalf("run_script %s's file is not private:\n%s", interp, out.Stdout.Text)
		}
		if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("run_script %s's directory outlived the run: %v", interp, err)
		}
	}
	if d := scriptDirsIn(t, runnerTmp); len(d) != 0 {
		t.Fatalf("script directories left on the runner: %v", d)
	}
}

// checkPytestOnRunner runs pytest through the runner: it writes its junit
// report in a private directory on the runner; the report comes back to
// be parsed here, and the directory (its bytecode too) goes when the run
// ends; nothing is written in the project.
func checkPytestOnRunner(t *testing.T, f *runnerFixture, session, runnerTmp string) {
	t.Helper()
	writeFiles(t, f.dir, map[string]string{"py/test_calc.py": "def test_ok():\n    assert 1 + 1 == 2\n\n\ndef test_bad():\n    assert 1 + 1 == 3\n"})
	var pt struct {
		Output struct {
			Validation struct {
				runnerValidation
				Parser string `json:"parser"`
			} `json:"validation"`
		} `json:"output"`
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	raw := callRaw(t, f.srv.base, "run_tests", map[string]any{"project": remoteProject, "session_id": session, "runner": "pytest", "cwd": "py"}, &pt)
	if v := pt.Output.Validation; pt.Error.Kind != "validation_failed" || v.Parser != "junit_xml/v1" || v.Passed != 1 || v.Failed != 1 ||
		len(v.Failures) != 1 || !strings.Contains(v.Failures[0], "test_bad") {
		t.Fatalf("run_tests pytest through the runner: %s", raw)
	}
	if m, _ := filepath.Glob(filepath.Join(runnerTmp, "webcodex-private-*")); len(m) != 0 {
		t.Fatalf("pytest's private directory outlived the run on the runner: %v", m)
	}
	for _, name := range []string{"py/__pycache__", "py/junit.xml", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("pytest through the runner left %s in the project: %v", name, err)
		}
	}
}

// A validation and a script still running after the sync grace continue
// on the runner as background jobs: the validation becomes evidence when
// it ends (parsed here from the output the runner streamed), and a script
// file is removed when its job ends, by itself or by stop_job.
func TestRunnerHandsOffValidationAndScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	// Every run outlives this grace: each waits for a file the test
	// writes after the handoff.
	t.Setenv("WEBCODEX_JOB_SYNC_GRACE", "10ms")
	t.Setenv("WEBCODEX_JOB_CONCURRENCY", "8") // one owner runs all four at once (8 less the reserved slots)
	f := newRunnerFixture(t)
	runnerTmp := t.TempDir()
	t.Setenv("TMPDIR", runnerTmp)
	startRunner(t, f.srv.base, f.toml, f.token)
	release := filepath.Join(f.dir, "release")
	writeFiles(t, f.dir, map[string]string{
		"go.mod": "module example.com/demo\n\ngo 1.21\n",
		"slow/slow_test.go": "package slow\n\nimport (\n\t\"os\"\n\t\"testing\"\n\t\"time\"\n)\n\n" +
			"func TestWaits(t *testing.T) {\n\tfor {\n\t\tif _, err := os.Stat(\"../release\"); err == nil {\n\t\t\tbreak\n\t\t}\n\t\ttime.Sleep(20 * time.Millisecond)\n\t}\n}\n\n" +
			"func TestFails(t *testing.T) { t.Fatal(\"no\") }\n",
	})
	var start struct {
		SessionID string `json:"session_id"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "slow tests on the runner"}, &start)

	var handed struct {
		State string `json:"state"`
		JobID string `json:"job_id"`
	}
	call(t, f.srv.base, "go_test", map[string]any{"project": remoteProject, "session_id": start.SessionID, "packages": []string{"./slow"}, "uncached": true}, &handed)
	if handed.State != "running" || handed.JobID == "" {
		t.Fatalf("go_test was not handed off: %+v", handed)
	}
	// pytest too, when there is one: its report comes back when its job
	// ends, for the evidence.
	var pyHanded struct {
		State string `json:"state"`
		JobID string `json:"job_id"`
	}
	_, pyErr := exec.LookPath("pytest")
	if pyErr == nil {
		writeFiles(t, f.dir, map[string]string{"py/test_wait.py": "import os\nimport time\n\n\ndef test_waits():\n" +
			"    while not os.path.exists('../release'):\n        time.sleep(0.02)\n\n\ndef test_fails():\n    assert False\n"})
		call(t, f.srv.base, "run_tests", map[string]any{"project": remoteProject, "session_id": start.SessionID, "runner": "pytest", "cwd": "py"}, &pyHanded)
		if pyHanded.State != "running" || pyHanded.JobID == "" {
			t.Fatalf("run_tests pytest was not handed off: %+v", pyHanded)
		}
	}
	var script struct {
		State string `json:"state"`
		JobID string `json:"job_id"`
	}
	call(t, f.srv.base, "run_script", map[string]any{"project": remoteProject, "interpreter": "sh",
		"script": "while [ ! -e release ]; do sleep 0.02; done; echo released"}, &script)
	var stopped struct {
		JobID string `json:"job_id"`
	}
	call(t, f.srv.base, "run_script", map[string]any{"project": remoteProject, "interpreter": "sh", "script": "exec sleep 600"}, &stopped)
	if script.State != "running" || script.JobID == "" || stopped.JobID == "" {
		t.Fatalf("run_script was not handed off: %+v %+v", script, stopped)
	}
	if d := scriptDirsIn(t, runnerTmp); len(d) != 2 {
		t.Fatalf("%d script directories on the runner while two scripts run: %v", len(d), d)
	}
	// stop_job reaches the runner's process; its script goes with it.
	call(t, f.srv.base, "stop_job", map[string]any{"project": remoteProject, "job_id": stopped.JobID}, &struct{}{})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var seen struct {
		Jobs []struct {
			Job struct {
				ID    string `json:"job_id"`
				State string `json:"state"`
			} `json:"job"`
		} `json:"jobs"`
	}
	ids := []string{handed.JobID, script.JobID, stopped.JobID}
	if pyErr == nil {
		ids = append(ids, pyHanded.JobID)
	}
	call(t, f.srv.base, "observe_jobs", map[string]any{"project": remoteProject, "job_ids": ids, "wait_seconds": 100, "wake_on": "all_terminal"}, &seen)
	states := map[string]string{}
	for _, j := range seen.Jobs {
		states[j.Job.ID] = j.Job.State
	}
	if states[handed.JobID] != "failed" || states[script.JobID] != "succeeded" || states[stopped.JobID] != "stopped" ||
		(pyErr == nil && states[pyHanded.JobID] != "failed") {
		t.Fatalf("the jobs' ends: %+v", states)
	}
	if d := scriptDirsIn(t, runnerTmp); len(d) != 0 {
		t.Fatalf("script directories left on the runner after the jobs ended: %v", d)
	}
	if m, _ := filepath.Glob(filepath.Join(runnerTmp, "webcodex-private-*")); len(m) != 0 {
		t.Fatalf("a private directory outlived its job on the runner: %v", m)
	}
	// The handed-off validations are evidence in the session, each
	// recorded under its job.
	sum := validationState(t, f.srv.base, start.SessionID)
	byJob := map[string]int{}
	for i, l := range sum.Latest {
		byJob[l.JobID] = i
	}
	want := 1
	if pyErr == nil {
		want = 2
		i, ok := byJob[pyHanded.JobID]
		if l := sum.Latest[i]; !ok || l.Tool != "run_tests" || l.Verdict != "failed" || l.Passed != 1 || l.Failed != 1 ||
			len(l.Failures) != 1 || !strings.Contains(l.Failures[0], "test_fails") {
			t.Fatalf("the handed-off pytest's evidence: %+v", sum)
		}
	}
	i, ok := byJob[handed.JobID]
	if l := sum.Latest[i]; sum.Runs != want || len(sum.Latest) != want || !ok || l.Verdict != "failed" ||
		l.Passed != 1 || l.Failed != 1 || len(l.Failures) != 1 || !strings.Contains(l.Failures[0], "TestFails") {
		t.Fatalf("the handed-off validation's evidence: %+v", sum)
	}
}
