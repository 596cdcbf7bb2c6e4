package validate_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/workflow"
)

// A module and its test whose fixes are edits of the same size: Python,
// and pytest's assertion rewriter, trust a cached .pyc whose source has
// the size and the modification time (in whole seconds) it was compiled
// from, so such an edit within the same second ran the old code.
const (
	staleCalc       = "def add(a, b):\n    return a - b\n"
	staleCalcFixed  = "def add(a, b):\n    return a + b\n"
	staleTest       = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
	staleTestBroken = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 5\n"
)

func requirePytest(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Skip("pytest not on PATH (install python3-pytest)")
	}
}

// rewriteSameSecond replaces a project file with content of the same size
// and gives it back its modification time, as an edit made within the
// second of the previous run leaves it (deterministically, whatever the
// clock does meanwhile).
func rewriteSameSecond(t *testing.T, root, rel, content string) {
	t.Helper()
	abs := filepath.Join(root, rel)
	st, err := os.Stat(abs)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != st.Size() {
		t.Fatalf("%s: the rewrite is %d bytes, the file %d: not a same-size edit", rel, len(content), st.Size())
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(abs, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// plantBytecode runs pytest in root as an agent's own run_shell would
// (the environment every child gets, outside validation), so the project
// holds the caches Python and pytest's rewriter write beside the sources.
// It returns the cache files with their sizes and modification times.
func plantBytecode(t *testing.T, root string) map[string]string {
	t.Helper()
	cmd := exec.Command("pytest", "-q", "-p", "no:cacheprovider")
	cmd.Dir = root
	cmd.Env = runner.ChildEnv(os.Getenv, nil)
	out, _ := cmd.CombinedOutput() // the test fails: that is the point
	caches := pycacheFiles(t, root)
	var module, rewritten bool
	for name := range caches {
		module = module || strings.HasPrefix(name, "calc.")
		rewritten = rewritten || (strings.HasPrefix(name, "test_calc.") && strings.Contains(name, "-pytest-"))
	}
	if !module || !rewritten {
		t.Fatalf("pytest left no module and rewritten-test caches in the project: %v\n%s", caches, out)
	}
	return caches
}

// pycacheFiles lists root's __pycache__ by name, each with its size and
// modification time.
func pycacheFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "__pycache__"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[ent.Name()] = fmt.Sprintf("%d bytes, modified %s", info.Size(), info.ModTime())
	}
	return out
}

// staleBytecodeScenario is the reproduction: pytest caches from an
// earlier run at the failing version, a same-size fix of the module in
// the same second, then a same-size break of the test in the same second.
// Every run_tests must report the code on disk, not the cached one.
func staleBytecodeScenario(t *testing.T, call func(string, map[string]any) kernel.Result, session, root string) {
	t.Helper()
	planted := plantBytecode(t, root)
	args := map[string]any{"session_id": session, "runner": "pytest"}

	res := call("run_tests", args)
	kerneltest.Fails(t, res, failure.ValidationFailed)
	if out := evidence(t, res); out.Failed != 1 || out.Passed != 0 || !slices.Contains(out.Failures, "test_calc.test_add") {
		t.Fatalf("failing version: %+v", out)
	}

	rewriteSameSecond(t, root, "calc.py", staleCalcFixed)
	res = call("run_tests", args)
	if !res.Success {
		t.Fatalf("the fixed module ran from stale bytecode: %+v", evidence(t, res))
	}
	if out := evidence(t, res); out.Verdict != workflow.VerdictPassed || out.Passed != 1 || out.Failed != 0 ||
		!slices.Equal(out.Resolved, []string{"test_calc.test_add"}) {
		t.Fatalf("fixed module: %+v", out)
	}

	rewriteSameSecond(t, root, "test_calc.py", staleTestBroken)
	res = call("run_tests", args)
	if res.Success {
		t.Fatalf("the broken test ran from pytest's stale rewritten bytecode: %+v", evidence(t, res))
	}
	kerneltest.Fails(t, res, failure.ValidationFailed)
	if out := evidence(t, res); out.Failed != 1 || out.Passed != 0 {
		t.Fatalf("broken test: %+v", out)
	}

	// Validation compiled elsewhere: the project's caches are as the
	// agent's own run left them.
	if got := pycacheFiles(t, root); !maps.Equal(got, planted) {
		t.Fatalf("validation wrote into the project's __pycache__:\nplanted %v\nnow     %v", planted, got)
	}
}

// TestPytestNeverRunsStaleBytecode runs the reproduction without a job
// manager, and checks the run's own bytecode directory is gone after each
// call (the OS temporary directory is the test's own).
func TestPytestNeverRunsStaleBytecode(t *testing.T) {
	requirePytest(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := newEnv(t, map[string]string{"calc.py": staleCalc, "test_calc.py": staleTest})
	staleBytecodeScenario(t, e.Call, e.id, e.Project.Root)
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("a run left its directory behind: %v", ents)
	}
}

// TestPytestJobNeverRunsStaleBytecode runs the reproduction through the
// job manager (as the server does), each run answered inline, and checks
// nothing of it is left in the jobs directory.
func TestPytestJobNeverRunsStaleBytecode(t *testing.T) {
	requirePytest(t)
	e := newJobEnvFiles(t, jobs.Options{SyncGrace: time.Minute}, map[string]string{"calc.py": staleCalc, "test_calc.py": staleTest})
	staleBytecodeScenario(t, e.Call, e.id, e.Project.Root)
	if ents, _ := os.ReadDir(filepath.Join(e.data, "jobs")); len(ents) != 0 {
		t.Fatalf("inline job output kept: %v", ents)
	}
}

// TestPytestHandoffRemovesItsBytecode: a run handed to the background
// compiles into its own directory (the test proves it exists while it
// runs) and the job removes it when it ends; its report stays.
func TestPytestHandoffRemovesItsBytecode(t *testing.T) {
	requirePytest(t)
	e := newJobEnvFiles(t, jobs.Options{SyncGrace: 50 * time.Millisecond}, map[string]string{
		"test_prefix.py": "import os\nimport sys\nimport time\n\n\ndef test_prefix():\n    time.sleep(0.4)\n" +
			"    assert sys.pycache_prefix and os.path.isdir(sys.pycache_prefix)\n" +
			"    assert os.path.relpath(sys.pycache_prefix, os.getcwd()).startswith('..' + os.sep)\n",
	})
	out := kerneltest.OK[validate.Output](t, e.Call("run_tests", map[string]any{"session_id": e.id, "runner": "pytest"}))
	if out.State != jobs.Running || out.JobID == "" {
		t.Fatalf("handoff: %+v", out)
	}
	j := e.wait(out.JobID)
	if j.State != jobs.Succeeded {
		t.Fatalf("the bytecode directory was not the run's own: %+v", j)
	}
	dir := e.m.JobDir(out.JobID)
	if _, err := os.Stat(filepath.Join(dir, "junit.xml")); err != nil {
		t.Fatalf("report: %v", err)
	}
	// The job removes it once terminal, just after the record says so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, ent := range ents {
			names = append(names, ent.Name())
		}
		if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "pycache") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's bytecode outlived it: %v", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPytestConfinedJobNeverRunsStaleBytecode runs the reproduction as
// the server does, confined: workspace-write with the data directory
// denied but the job's own directory granted (its report, its bytecode).
func TestPytestConfinedJobNeverRunsStaleBytecode(t *testing.T) {
	requirePytest(t)
	if runner.LandlockABI() < 1 {
		t.Skip("no Landlock: children cannot be confined here")
	}
	e := newJobEnvOn(t, jobs.Options{SyncGrace: time.Minute}, map[string]string{"calc.py": staleCalc, "test_calc.py": staleTest},
		func(data string) *runner.Local {
			p := &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{data}}
			t.Cleanup(p.Close)
			return &runner.Local{Policy: p}
		})
	call := func(tool string, args map[string]any) kernel.Result {
		res := e.Call(tool, args)
		if out := evidence(t, res); out.Sandbox != runner.WorkspaceWrite {
			t.Fatalf("sandbox in force: %q", out.Sandbox)
		}
		return res
	}
	staleBytecodeScenario(t, call, e.id, e.Project.Root)
}
