package run_test

import (
	"context"
	"encoding/json"
	"github.com/webcodex/webcodex/internal/workspace"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

type env struct {
	*kerneltest.Env
	svc *workflow.Service
	m   *jobs.Manager
}

// newEnv runs the tools as the server does: every run supervised by a job
// manager (with the default sync grace, longer than any run here).
func newEnv(t *testing.T) *env { return newEnvWith(t, true, jobs.Options{}) }

func newEnvWith(t *testing.T, withJobs bool, o jobs.Options) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := workflowdb.Open(context.Background(), filepath.Join(dir, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	p := kerneltest.TempProject(t, map[string]string{"sub/dir/file.txt": "x\n"})
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	tools := &run.Tools{Runners: workspace.LocalOnly(&runner.Local{})}
	if withJobs {
		tools.Jobs = newManager(t, dir, o)
	}
	run.Register(reg, tools)
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	return &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, m: tools.Jobs}
}

func (e *env) session(mode string, ctx map[string]any) string {
	e.T.Helper()
	args := map[string]any{"instruction": "run things"}
	if mode != "" {
		args["mode"] = mode
	}
	id := kerneltest.OK[sessions.WorkOutput](e.T, e.Call("work_on_project", args)).SessionID
	if ctx != nil {
		ctx["session_id"] = id
		kerneltest.OK[sessions.ContextOutput](e.T, e.Call("update_session_context", ctx))
	}
	return id
}

// failedExecution decodes the execution carried by a failed result.
func failedExecution(t *testing.T, res kernel.Result) run.Output {
	t.Helper()
	var out struct {
		Execution run.Output `json:"execution"`
	}
	json.Unmarshal(kerneltest.OutputBytes(t, res), &out)
	return out.Execution
}

func TestRunProcess(t *testing.T) {
	e := newEnv(t)
	out := kerneltest.OK[run.Output](t, e.Call("run_process", map[string]any{"argv": []string{"sh", "-c", "pwd; echo warn >&2"}, "cwd": "sub"}))
	if out.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(out.Stdout.Text), "/sub") || out.Stderr.Text != "warn\n" || out.Cwd != "sub" || !out.Expectation.Matched {
		t.Fatalf("output %+v", out)
	}
	// A failing command fails the call but still reports the execution.
	res := e.Call("run_process", map[string]any{"argv": []string{"sh", "-c", "echo boom; exit 4"}})
	kerneltest.Fails(t, res, failure.CommandFailed)
	if ex := failedExecution(t, res); ex.ExitCode != 4 || ex.Stdout.Text != "boom\n" {
		t.Fatalf("failed execution %+v", ex)
	}
	// Expectations never change the result (TestExpectationNeverRewritesTheResult).
	// Timeouts are never a match, even for observe.
	res = e.Call("run_process", map[string]any{"argv": []string{"sleep", "5"}, "timeout_seconds": 1, "result_expectation": "observe"})
	kerneltest.Fails(t, res, failure.TimedOut)
	if ex := failedExecution(t, res); ex.Ending != runner.TimedOut || !ex.KilledGroup {
		t.Fatalf("timeout execution %+v", ex)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.Project.Root, "out")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tool string
		args map[string]any
		want failure.Kind
	}{
		{"ErrEmptyArgv", "run_process", map[string]any{"argv": []string{}}, failure.InvalidArguments},
		{"ErrEmptyProgram", "run_process", map[string]any{"argv": []string{""}}, failure.InvalidArguments},
		{"ErrMissingBinary", "run_process", map[string]any{"argv": []string{"no-such-binary-xyz"}}, failure.NotStarted},
		{"ErrShellTooLong", "run_shell", map[string]any{"command": strings.Repeat("x", command.MaxShellBytes+1)}, failure.InvalidArguments},
		{"ErrCwdTraversal", "run_process", map[string]any{"argv": []string{"true"}, "cwd": "../x"}, failure.InvalidArguments},
		{"ErrCwdSymlinkEscape", "run_process", map[string]any{"argv": []string{"true"}, "cwd": "out"}, failure.PermissionDenied},
		{"ErrCwdMissing", "run_process", map[string]any{"argv": []string{"true"}, "cwd": "nope"}, failure.InvalidArguments},
		{"ErrShellUnsupported", "run_shell", map[string]any{"command": "true", "shell": "zsh"}, failure.InvalidArguments},
		{"ErrTimeoutZero", "run_process", map[string]any{"argv": []string{"true"}, "timeout_seconds": 0}, failure.InvalidArguments},
		{"ErrTimeoutNegative", "run_process", map[string]any{"argv": []string{"true"}, "timeout_seconds": -1}, failure.InvalidArguments},
		{"ErrTimeoutTooLong", "run_process", map[string]any{"argv": []string{"true"}, "timeout_seconds": 86401}, failure.InvalidArguments},
		{"ErrInterpreter", "run_script", map[string]any{"interpreter": "perl", "script": "print 1"}, failure.InvalidArguments},
		{"ErrReservedEnv", "run_process", map[string]any{"argv": []string{"true"}, "env": map[string]string{"WEBCODEX_TOKEN": "x"}}, failure.InvalidArguments},
		{"ErrExpectation", "run_process", map[string]any{"argv": []string{"true"}, "result_expectation": "maybe"}, failure.InvalidArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kerneltest.Fails(t, e.Call(tc.tool, tc.args), tc.want)
		})
	}
}

func TestShellAndScript(t *testing.T) {
	e := newEnv(t)
	out := kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"command": "echo $((2+3)); echo \"$X\"", "env": map[string]string{"X": "y"}}))
	if out.Stdout.Text != "5\ny\n" {
		t.Fatalf("shell: %q", out.Stdout.Text)
	}
	out = kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"command": "echo ${BASH_VERSION:+bash}", "shell": "bash"}))
	if out.Stdout.Text != "bash\n" {
		t.Fatalf("bash: %q", out.Stdout.Text)
	}
	out = kerneltest.OK[run.Output](t, e.Call("run_script", map[string]any{"interpreter": "sh", "script": "echo \"$1-$2\"\n", "args": []string{"a", "b"}}))
	if out.Stdout.Text != "a-b\n" {
		t.Fatalf("script: %q", out.Stdout.Text)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir())); err != nil {
		t.Fatal(err)
	}
}

func TestExecutionDefaults(t *testing.T) {
	e := newEnv(t)
	id := e.session("", map[string]any{"default_cwd": "sub/dir", "default_shell": "bash"})
	out := kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"session_id": id, "command": "pwd; echo ${BASH_VERSION:+bash}"}))
	if !strings.Contains(out.Stdout.Text, "/sub/dir\nbash\n") || out.Cwd != "sub/dir" {
		t.Fatalf("inherited: %q cwd %s", out.Stdout.Text, out.Cwd)
	}
	// run_process inherits the cwd; an explicit cwd wins.
	out = kerneltest.OK[run.Output](t, e.Call("run_process", map[string]any{"session_id": id, "argv": []string{"pwd"}, "cwd": "sub"}))
	if out.Cwd != "sub" {
		t.Fatalf("explicit cwd lost: %s", out.Cwd)
	}
	// A recorder never supplies defaults.
	out = kerneltest.OK[run.Output](t, e.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "run_process",
		Arguments: json.RawMessage(`{"project":"` + e.Project.ID + `","argv":["pwd"]}`), RecordingSessionID: id,
		Principal: auth.LocalUser(), Source: kernel.SourceInternal}))
	if out.Cwd != "." {
		t.Fatalf("recorder supplied a default cwd: %s", out.Cwd)
	}
	// A default that no longer exists fails before start, no fallback.
	os.RemoveAll(filepath.Join(e.Project.Root, "sub"))
	kerneltest.Fails(t, e.Call("run_process", map[string]any{"session_id": id, "argv": []string{"touch", "marker"}}), failure.InvalidExecutionContext)
	if _, err := os.Stat(filepath.Join(e.Project.Root, "marker")); err == nil {
		t.Fatal("ran in the project root after the default cwd failed")
	}
}

func TestReadOnlySessionCannotRun(t *testing.T) {
	e := newEnv(t)
	id := e.session("read_only", nil)
	kerneltest.Fails(t, e.Call("run_shell", map[string]any{"session_id": id, "command": "touch x"}), failure.SessionGuardDenied)
	if _, err := os.Stat(filepath.Join(e.Project.Root, "x")); err == nil {
		t.Fatal("ran in a read_only session")
	}
}

func TestLedgerHoldsNoCommandText(t *testing.T) {
	e := newEnv(t)
	id := e.session("", nil)
	const marker = "unique-marker-93f1"
	kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"session_id": id, "command": "echo " + marker, "purpose": "diagnostic"}))
	evs, err := e.svc.Store().Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	if strings.Contains(string(b), marker) {
		t.Fatalf("ledger holds command text or output: %s", b)
	}
	last := evs[len(evs)-1]
	if last.Facts["program"] != "sh" || last.Facts["exit_code"] != "0" || last.Facts["purpose"] != "diagnostic" || last.Facts["expectation_matched"] != "true" {
		t.Fatalf("facts %v", last.Facts)
	}
}
