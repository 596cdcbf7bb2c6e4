package sessionshell_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/tools/sessionshell"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
	"github.com/webcodex/webcodex/internal/workspace"
)

type env struct {
	*kerneltest.Env
	svc *workflow.Service
	m   *shell.Manager
	db  string
}

func getenv(k string) string {
	switch k {
	case "PATH", "HOME":
		return os.Getenv(k)
	case "WEBCODEX_TOKEN":
		return "server-secret"
	}
	return ""
}

func newEnv(t testing.TB, files map[string]string) *env {
	t.Helper()
	db := filepath.Join(t.TempDir(), "workflow.db")
	st, err := workflowdb.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	m := shell.NewManager(shell.Options{Getenv: getenv, ResyncWait: 400 * time.Millisecond})
	t.Cleanup(func() { m.Close() })
	p := kerneltest.TempProject(t, files)
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	sessionshell.Register(reg, workspace.Resolver{Local: workspace.Local{Host: &runner.Local{}, Shells: m}})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	return &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, m: m, db: db}
}

func (e *env) start(mode workflow.Mode) string {
	e.T.Helper()
	args := map[string]any{"instruction": "work"}
	if mode != "" {
		args["mode"] = mode
	}
	return kerneltest.OK[sessions.WorkOutput](e.T, e.Call("work_on_project", args)).SessionID
}

func (e *env) open(sess string, args map[string]any) sessionshell.OpenOutput {
	e.T.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["session_id"] = sess
	return kerneltest.OK[sessionshell.OpenOutput](e.T, e.Call("open_session_shell", args))
}

func (e *env) exec(sess, id, command string) sessionshell.ExecOutput {
	e.T.Helper()
	return kerneltest.OK[sessionshell.ExecOutput](e.T, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": command}))
}

// execution decodes the partial execution a failed exec carries.
func execution(t testing.TB, res kernel.Result) sessionshell.ExecOutput {
	t.Helper()
	var out struct {
		Execution sessionshell.ExecOutput `json:"execution"`
	}
	if err := json.Unmarshal(kerneltest.OutputBytes(t, res), &out); err != nil {
		t.Fatal(err)
	}
	return out.Execution
}

func needBash(t testing.TB) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
}

func TestLifecycle(t *testing.T) {
	needBash(t)
	e := newEnv(t, map[string]string{"sub/f.txt": "x"})
	sess := e.start("")
	o := e.open(sess, map[string]any{"cwd": "sub", "shell": "bash"})
	if o.Shell.Cwd != "sub" || o.Shell.Shell != "bash" || o.Shell.State != "ready" || o.CwdSource != "explicit" || o.ShellSource != "explicit" || o.Shell.SessionID != sess {
		t.Fatalf("open: %+v", o)
	}
	id := o.Shell.ShellID
	out := e.exec(sess, id, "cd .. && export WC_X=1; ls sub")
	if out.ExitCode != 0 || out.Stdout.Text != "f.txt\n" || out.Cwd != "." || out.Ending != sessionshell.EndingExited || out.ShellState != "ready" {
		t.Fatalf("exec: %+v", out)
	}
	out = e.exec(sess, id, "echo $WC_X; pwd")
	if out.Stdout.Text != "1\n"+e.Project.Root+"\n" {
		t.Fatalf("state: %+v", out)
	}
	// Expectations.
	res := e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "echo no >&2; false"})
	kerneltest.Fails(t, res, failure.CommandFailed)
	if ex := execution(t, res); ex.ExitCode != 1 || ex.Stderr.Text != "no\n" || ex.ShellState != "ready" {
		t.Fatalf("failed execution: %+v", ex)
	}
	// An expected failure is still a failure (TestExpectationNeverRewritesTheResult).
	res = e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "false", "result_expectation": "failure"})
	kerneltest.Fails(t, res, failure.CommandFailed)
	if ex := execution(t, res); !ex.Expectation.Matched || ex.ExitCode != 1 {
		t.Fatalf("expected failure: %+v", ex)
	}
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "true", "timeout_seconds": 0}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": strings.Repeat("x", shell.MaxCommandBytes+1)}), failure.InvalidArguments)
	// One shell per session.
	kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": sess}), failure.Conflict)

	st := kerneltest.OK[sessionshell.ShellView](t, e.Call("session_shell_status", map[string]any{"session_id": sess, "shell_id": id}))
	if st.State != "ready" || st.CommandsRun != 4 || st.Cwd != "sub" {
		t.Fatalf("status: %+v", st)
	}
	cl := kerneltest.OK[sessionshell.CloseOutput](t, e.Call("close_session_shell", map[string]any{"session_id": sess, "shell_id": id}))
	if !cl.Changed || cl.Shell.State != "closed" || cl.Shell.EndedAt == "" {
		t.Fatalf("close: %+v", cl)
	}
	cl = kerneltest.OK[sessionshell.CloseOutput](t, e.Call("close_session_shell", map[string]any{"session_id": sess, "shell_id": id}))
	if cl.Changed || cl.Shell.State != "closed" {
		t.Fatalf("second close: %+v", cl)
	}
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "true"}), failure.ShellClosed)
	// A new shell may be opened; the closed id stays closed.
	e.open(sess, nil)
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "true"}), failure.ShellClosed)
}

func TestReadOnlySessionIsDenied(t *testing.T) {
	e := newEnv(t, nil)
	ro := e.start(workflow.ModeReadOnly)
	kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": ro}), failure.SessionGuardDenied)
	if e.m.Live() != 0 {
		t.Fatal("a read_only session opened a shell")
	}
	// A session switched to read_only after opening cannot execute,
	// but can still look at and close its sessionshell.
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": sess, "instruction": "look only", "mode": "read_only"}))
	marker := filepath.Join(e.Project.Root, "ran")
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "touch " + marker}), failure.SessionGuardDenied)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a read_only session executed")
	}
	kerneltest.OK[sessionshell.ShellView](t, e.Call("session_shell_status", map[string]any{"session_id": sess, "shell_id": id}))
	if cl := kerneltest.OK[sessionshell.CloseOutput](t, e.Call("close_session_shell", map[string]any{"session_id": sess, "shell_id": id})); !cl.Changed {
		t.Fatalf("close: %+v", cl)
	}
	s, _ := e.svc.Get(context.Background(), sess)
	if s.Counters.GuardDenials < 1 {
		t.Fatalf("guard denial not recorded: %+v", s.Counters)
	}
}

func TestShellOfAnotherSessionIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.start(""), e.start("")
	id := e.open(a, nil).Shell.ShellID
	marker := filepath.Join(e.Project.Root, "ran")
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": b, "shell_id": id, "command": "touch " + marker}), failure.PermissionDenied)
	kerneltest.Fails(t, e.Call("session_shell_status", map[string]any{"session_id": b, "shell_id": id}), failure.PermissionDenied)
	kerneltest.Fails(t, e.Call("close_session_shell", map[string]any{"session_id": b, "shell_id": id}), failure.PermissionDenied)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("another session's call ran a command")
	}
	if st := kerneltest.OK[sessionshell.ShellView](t, e.Call("session_shell_status", map[string]any{"session_id": a, "shell_id": id})); st.State != "ready" || st.CommandsRun != 0 {
		t.Fatalf("owner's shell changed: %+v", st)
	}
}

func TestSessionDefaultsAreInherited(t *testing.T) {
	needBash(t)
	e := newEnv(t, map[string]string{"cmd/tool/main.go": "package main\n", "file.txt": "x"})
	sess := e.start("")
	kerneltest.OK[sessions.ContextOutput](t, e.Call("update_session_context", map[string]any{"session_id": sess, "default_cwd": "cmd/tool", "default_shell": "bash"}))
	o := e.open(sess, nil)
	if o.Shell.Cwd != "cmd/tool" || o.Shell.Shell != "bash" || o.CwdSource != "session_default" || o.ShellSource != "session_default" {
		t.Fatalf("inherited: %+v", o)
	}
	out := e.exec(sess, o.Shell.ShellID, `pwd; echo "bash=${BASH_VERSION:+yes}"`)
	if out.Stdout.Text != filepath.Join(e.Project.Root, "cmd", "tool")+"\nbash=yes\n" {
		t.Fatalf("exec: %q", out.Stdout.Text)
	}
	// Changing the defaults never moves an open sessionshell.
	kerneltest.OK[sessions.ContextOutput](t, e.Call("update_session_context", map[string]any{"session_id": sess}))
	if out := e.exec(sess, o.Shell.ShellID, "pwd"); out.Cwd != "cmd/tool" {
		t.Fatalf("moved: %+v", out)
	}
	kerneltest.OK[sessionshell.CloseOutput](t, e.Call("close_session_shell", map[string]any{"session_id": sess, "shell_id": o.Shell.ShellID}))

	// A default_cwd that does not exist (or is a file) fails before
	// start, without falling back to the root.
	for _, bad := range []string{"gone/away", "file.txt"} {
		kerneltest.OK[sessions.ContextOutput](t, e.Call("update_session_context", map[string]any{"session_id": sess, "default_cwd": bad}))
		kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": sess}), failure.InvalidExecutionContext)
		if e.m.Live() != 0 {
			t.Fatalf("%s: a shell was started", bad)
		}
	}
	// An explicit cwd still works, and a bad explicit one is the
	// caller's error.
	kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": sess, "cwd": "../x"}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": sess, "cwd": "gone"}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("open_session_shell", map[string]any{"session_id": sess, "shell": "zsh"}), failure.InvalidArguments)
	if o := e.open(sess, map[string]any{"cwd": "cmd"}); o.Shell.Cwd != "cmd" || o.Shell.Shell != "sh" || o.ShellSource != "default" {
		t.Fatalf("explicit: %+v", o)
	}
}

func TestLedgerHoldsNoCommandText(t *testing.T) {
	e := newEnv(t, nil)
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	const unique = "wc-unique-3c1f9a7e"
	e.exec(sess, id, "echo "+unique+"; echo "+unique+" >&2; V="+unique)
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "echo " + unique + "; exit 4"}), failure.CommandFailed)
	_, evs, err := e.svc.Summary(context.Background(), sess, workflow.SummaryMax)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(evs)
	if strings.Contains(string(raw), unique) {
		t.Fatalf("command text or output reached the ledger:\n%s", raw)
	}
	var execs []workflow.Event
	for _, ev := range evs {
		if ev.Kind == workflow.EventToolCallFinished && ev.Tool == "session_shell_exec" {
			execs = append(execs, ev)
		}
	}
	if len(execs) != 2 {
		t.Fatalf("%d exec events", len(execs))
	}
	f := execs[0].Facts
	if f["shell_id"] != id || f["action"] != "exec" || f["exit_code"] != "0" || f["ending"] != "exited" || f["state"] != "ready" || f["reset_required"] != "false" {
		t.Fatalf("facts: %v", f)
	}
	f = execs[1].Facts
	if f["exit_code"] != "4" || f["shell_exited"] != "true" || f["state"] != "lost" || execs[1].ErrorKind != string(failure.CommandFailed) {
		t.Fatalf("facts: %v %s", f, execs[1].ErrorKind)
	}
	// Nor is it anywhere in the database files.
	files, _ := filepath.Glob(e.db + "*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), unique) {
			t.Fatalf("%s holds the command text", filepath.Base(name))
		}
	}
	if len(files) == 0 {
		t.Fatal("no database files")
	}
}

func TestTimeoutsThroughTheKernel(t *testing.T) {
	e := newEnv(t, nil)
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	res := e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "sleep 30", "timeout_seconds": 1})
	kerneltest.Fails(t, res, failure.TimedOut)
	if ex := execution(t, res); !ex.TimedOut || ex.ShellState != "ready" {
		t.Fatalf("resync: %+v", ex)
	}
	if out := e.exec(sess, id, "echo alive"); out.Stdout.Text != "alive\n" {
		t.Fatalf("after timeout: %+v", out)
	}
	res = e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "echo part; trap '' INT; sleep 30", "timeout_seconds": 1})
	kerneltest.Fails(t, res, failure.ShellResetRequired)
	if ex := execution(t, res); !ex.TimedOut || ex.ShellState != "lost" || ex.Stdout.Text != "part\n" {
		t.Fatalf("reset: %+v", ex)
	}
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "true"}), failure.ShellResetRequired)
	st := kerneltest.OK[sessionshell.ShellView](t, e.Call("session_shell_status", map[string]any{"session_id": sess, "shell_id": id}))
	if st.State != "lost" || st.EndReason != shell.EndResyncFailed {
		t.Fatalf("status: %+v", st)
	}
	_, evs, _ := e.svc.Summary(context.Background(), sess, workflow.SummaryMax)
	found := false
	for _, ev := range evs {
		if ev.Tool == "session_shell_exec" && ev.Facts["reset_required"] == "true" && ev.Facts["timed_out"] == "true" {
			found = true
		}
	}
	if !found {
		t.Fatal("no reset_required fact in the ledger")
	}
	// The session opens a fresh sessionshell.
	e.open(sess, nil)
}

func TestBusyThroughTheKernel(t *testing.T) {
	e := newEnv(t, nil)
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	// The first command runs until the test opens its gate, after the
	// second was refused: however slow a call through the kernel is, the
	// shell is still busy when the second arrives.
	gate := filepath.Join(e.Project.Root, "gate")
	openGate := func() { os.WriteFile(gate, nil, 0o600) }
	t.Cleanup(openGate)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.exec(sess, id, "while [ ! -e '"+gate+"' ]; do sleep 0.01; done")
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := kerneltest.OK[sessionshell.ShellView](t, e.Call("session_shell_status", map[string]any{"session_id": sess, "shell_id": id}))
		if st.State == "busy" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never busy")
		}
		time.Sleep(2 * time.Millisecond)
	}
	kerneltest.Fails(t, e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": "true"}), failure.ShellBusy)
	openGate()
	wg.Wait()
}

// BenchmarkShellExec measures session_shell_exec of ":" through the whole
// kernel (authorization and durable ledger events included) against its
// baseline, run_shell of ":" (a fresh shell process per call) through the
// same kernel and session, alternated call by call; the ratio is
// session_shell_exec over run_shell.
func BenchmarkShellExec(b *testing.B) {
	e := newEnv(b, nil)
	run.Register(e.Kernel.Registry(), &run.Tools{Runners: workspace.LocalOnly(&runner.Local{})})
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	inShell, _ := json.Marshal(map[string]any{"session_id": sess, "shell_id": id, "command": ":", "project": e.Project.ID})
	fresh, _ := json.Marshal(map[string]any{"session_id": sess, "command": ":", "project": e.Project.ID})
	call := func(tool string, raw []byte) func() {
		return func() {
			if res := e.Raw(auth.LocalUser(), tool, raw); !res.Success {
				b.Fatalf("%s: %+v", tool, res.Error)
			}
		}
	}
	benchpair.Run(b, "run_shell", call("run_shell", fresh), "session_shell_exec", call("session_shell_exec", inShell))
}

// TestExpectationNeverRewritesTheResult reproduces issue 11 item 6 for
// session_shell_exec: exit 0 with result_expectation failure succeeds with
// the expectation not matched; exit 1 with failure fails with
// command_failed and the expectation matched. The ledger, read back from
// its SQLite store, records the real outcome and classifies it by the
// expectation.
func TestExpectationNeverRewritesTheResult(t *testing.T) {
	e := newEnv(t, nil)
	sess := e.start("")
	id := e.open(sess, nil).Shell.ShellID
	lastExec := func() workflow.Event {
		t.Helper()
		evs, err := e.svc.Store().Events(context.Background(), sess, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Kind == workflow.EventToolCallFinished && evs[i].Tool == "session_shell_exec" {
				return evs[i]
			}
		}
		t.Fatal("no session_shell_exec event")
		return workflow.Event{}
	}
	for _, tc := range []struct {
		command, expectation string
		code                 int
		success, matched     bool
		class                workflow.FailureClass
	}{
		{"true", "failure", 0, true, false, workflow.FailureActionable},
		{"false", "failure", 1, false, true, workflow.FailureNonActionable},
		{"false", "observe", 1, false, true, workflow.FailureNonActionable},
		{"true", "observe", 0, true, true, workflow.NoFailure},
		{"false", "success", 1, false, false, workflow.FailureActionable},
	} {
		res := e.Call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": tc.command, "result_expectation": tc.expectation})
		var out sessionshell.ExecOutput
		if tc.success {
			out = kerneltest.OK[sessionshell.ExecOutput](t, res)
		} else {
			kerneltest.Fails(t, res, failure.CommandFailed)
			out = execution(t, res)
		}
		if out.ExitCode != tc.code || out.Ending != sessionshell.EndingExited ||
			out.Expectation != (sessionshell.ExpectationResult{Declared: sessionshell.Expectation(tc.expectation), Matched: tc.matched}) {
			t.Fatalf("%s/%s: result %+v", tc.command, tc.expectation, out)
		}
		ev := lastExec()
		wantOutcome, wantKind := workflow.OutcomeOK, ""
		if !tc.success {
			wantOutcome, wantKind = workflow.OutcomeFailed, string(failure.CommandFailed)
		}
		if ev.Outcome != wantOutcome || ev.ErrorKind != wantKind || ev.Facts["exit_code"] != strconv.Itoa(tc.code) ||
			ev.Facts["expectation"] != tc.expectation || ev.Facts["expectation_matched"] != strconv.FormatBool(tc.matched) {
			t.Fatalf("%s/%s: ledger %s %s %v", tc.command, tc.expectation, ev.Outcome, ev.ErrorKind, ev.Facts)
		}
		if got := workflow.ClassifyFailure(ev); got != tc.class {
			t.Fatalf("%s/%s: classification %q, want %q", tc.command, tc.expectation, got, tc.class)
		}
	}
}
