package jobctl_test

import (
	"context"
	"encoding/json"
	"github.com/webcodex/webcodex/internal/workspace"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/jobctl"
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

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := workflowdb.Open(context.Background(), filepath.Join(dir, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	js, err := jobsdb.Open(context.Background(), filepath.Join(dir, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.NewManager(jobs.Options{Store: js, Host: &runner.Local{}, Dir: filepath.Join(dir, "jobs"), SyncGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Close(ctx)
		js.Close()
	})
	svc := workflow.NewService(st, nil)
	p := kerneltest.TempProject(t, map[string]string{"sub/f.txt": "x\n"})
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	run.Register(reg, &run.Tools{Runners: workspace.LocalOnly(&runner.Local{}), Jobs: m})
	jobctl.Register(reg, &jobctl.Tools{Jobs: m})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	return &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, m: m}
}

func (e *env) session() string {
	return kerneltest.OK[sessions.WorkOutput](e.T, e.Call("work_on_project", map[string]any{"instruction": "jobs"})).SessionID
}

func (e *env) observe(args map[string]any) jobctl.ObserveOutput {
	e.T.Helper()
	return kerneltest.OK[jobctl.ObserveOutput](e.T, e.Call("observe_jobs", args))
}

// TestSyncHandoffThroughTools: a run_shell that outlives the grace returns
// running with a job_id; observe_jobs sees it finish with its output; the
// command ran exactly once.
func TestSyncHandoffThroughTools(t *testing.T) {
	e := newEnv(t)
	out := kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"command": "echo once >> ran.txt; echo begin; sleep 1; echo done"}))
	if out.State != jobs.Running || out.JobID == "" || out.Cursors == nil || out.ExitCode != -1 || out.Hint == "" {
		t.Fatalf("handoff %+v", out)
	}
	obs := e.observe(map[string]any{"job_ids": []string{out.JobID}, "wait_seconds": 100, "wake_on": "terminal",
		"cursors": map[string]any{out.JobID: map[string]any{"stdout": 0}}})
	o := obs.Jobs[0]
	if o.Job.State != jobs.Succeeded || *o.Job.ExitCode != 0 || o.Stdout.Text != "begin\ndone\n" || !o.Job.Background || o.Job.Tool != "run_shell" {
		t.Fatalf("observed %+v", o)
	}
	b, _ := os.ReadFile(filepath.Join(e.Project.Root, "ran.txt"))
	if string(b) != "once\n" {
		t.Fatalf("ran.txt = %q: the command did not run exactly once", b)
	}
}

func TestRunJob(t *testing.T) {
	e := newEnv(t)
	sid := e.session()
	const marker = "secret-marker-51c2"
	res := kerneltest.OK[jobctl.RunOutput](t, e.Call("run_job", map[string]any{"session_id": sid, "command": "echo " + marker + "; echo e >&2; exit 2",
		"cwd": "sub", "result_expectation": "failure", "purpose": "test"}))
	id := res.Job.JobID
	if res.Job.SessionID != sid || res.Job.Cwd != "sub" || res.Job.Program != "sh" || !res.Job.Background {
		t.Fatalf("run_job %+v", res.Job)
	}
	obs := e.observe(map[string]any{"job_ids": []string{id}, "wait_seconds": 100, "wake_on": "all_terminal"})
	j := obs.Jobs[0].Job
	if j.State != jobs.Failed || *j.ExitCode != 2 || !*j.ExpectationMatch || obs.Woke != "condition" {
		t.Fatalf("job %+v", j)
	}
	tail := kerneltest.OK[jobctl.TailOutput](t, e.Call("read_job_tail", map[string]any{"job_id": id, "stream": "stderr"}))
	if tail.Text != "e\n" || tail.State != jobs.Failed || tail.Stream != jobs.Stderr {
		t.Fatalf("tail %+v", tail)
	}
	tail = kerneltest.OK[jobctl.TailOutput](t, e.Call("read_job_tail", map[string]any{"job_id": id, "cursor": 7, "max_bytes": 5}))
	if tail.Text != "marke" || tail.Cursor != 7 || tail.NextCursor != 12 || !tail.More {
		t.Fatalf("cursor tail %+v", tail)
	}
	list := kerneltest.OK[jobctl.ListOutput](t, e.Call("list_jobs", map[string]any{}))
	if list.Total != 1 || list.Jobs[0].JobID != id {
		t.Fatalf("list %+v", list)
	}
	// The ledger has facts, never command text or output.
	evs, err := e.svc.Store().Events(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	if strings.Contains(string(b), marker) {
		t.Fatalf("ledger holds command text or output: %s", b)
	}
	last := evs[len(evs)-1]
	if last.Tool != "run_job" || last.Facts["job_id"] != id || last.Facts["job_state"] != "running" {
		t.Fatalf("facts %v", last.Facts)
	}
}

func TestStopJob(t *testing.T) {
	e := newEnv(t)
	id := kerneltest.OK[jobctl.RunOutput](t, e.Call("run_job", map[string]any{"command": "trap '' TERM; echo ready; sleep 30"})).Job.JobID
	// Without cursors a wait ends on new output; from cursor 0 any output
	// counts.
	cur := map[string]any{id: map[string]any{"stdout": 0}}
	obs := e.observe(map[string]any{"job_ids": []string{id}, "wait_seconds": 100, "cursors": cur})
	for !strings.Contains(obs.Jobs[0].Stdout.Text, "ready") {
		obs = e.observe(map[string]any{"job_ids": []string{id}, "wait_seconds": 100, "cursors": cur})
	}
	if obs.Jobs[0].Job.State != jobs.Running {
		t.Fatalf("job %s before stop", obs.Jobs[0].Job.State)
	}
	other := auth.Principal{Kind: auth.KindAPIToken, ID: "tok", Owner: "someone-else", Scopes: []auth.Scope{auth.ScopeAdmin}}
	kerneltest.Fails(t, e.CallAs(other, "stop_job", map[string]any{"job_id": id}), failure.JobAuthorityDenied)
	kerneltest.Fails(t, e.CallAs(other, "observe_jobs", map[string]any{"job_ids": []string{id}}), failure.JobAuthorityDenied)
	kerneltest.Fails(t, e.CallAs(other, "read_job_tail", map[string]any{"job_id": id}), failure.JobAuthorityDenied)
	if l := kerneltest.OK[jobctl.ListOutput](t, e.CallAs(other, "list_jobs", map[string]any{})); l.Total != 0 {
		t.Fatalf("another owner lists %d jobs", l.Total)
	}
	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "r", Owner: auth.DefaultOwner, Scopes: []auth.Scope{auth.ScopeProjectRead}}
	kerneltest.Fails(t, e.CallAs(reader, "stop_job", map[string]any{"job_id": id}), failure.InsufficientScope)

	st := kerneltest.OK[jobctl.StopOutput](t, e.Call("stop_job", map[string]any{"job_id": id}))
	if st.AlreadyTerminal || st.Job.State != jobs.Stopped || st.Job.Reason != jobs.ReasonStopJob {
		t.Fatalf("stop %+v", st)
	}
	again := kerneltest.OK[jobctl.StopOutput](t, e.Call("stop_job", map[string]any{"job_id": id}))
	if !again.AlreadyTerminal || again.Job.State != jobs.Stopped || !again.Job.FinishedAt.Equal(st.Job.FinishedAt) {
		t.Fatalf("second stop %+v", again)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	id := kerneltest.OK[jobctl.RunOutput](t, e.Call("run_job", map[string]any{"command": "true"})).Job.JobID
	nine := make([]string, 9)
	for i := range nine {
		nine[i] = jobs.NewID()
	}
	cases := []struct {
		name string
		tool string
		args map[string]any
		want failure.Kind
	}{
		{"ErrObserveNoIDs", "observe_jobs", map[string]any{"job_ids": []string{}}, failure.InvalidArguments},
		{"ErrObserveNineIDs", "observe_jobs", map[string]any{"job_ids": nine}, failure.InvalidArguments},
		{"ErrObserveWaitTooLong", "observe_jobs", map[string]any{"job_ids": []string{id}, "wait_seconds": 101}, failure.InvalidArguments},
		{"ErrObserveUnknown", "observe_jobs", map[string]any{"job_ids": []string{jobs.NewID()}}, failure.JobNotFound},
		{"ErrStopUnknown", "stop_job", map[string]any{"job_id": jobs.NewID()}, failure.JobNotFound},
		{"ErrStopMalformed", "stop_job", map[string]any{"job_id": "12"}, failure.InvalidArguments},
		{"ErrTailStream", "read_job_tail", map[string]any{"job_id": id, "stream": "stdin"}, failure.InvalidArguments},
		{"ErrTailTooMuch", "read_job_tail", map[string]any{"job_id": id, "max_bytes": jobs.MaxReadBytes + 1}, failure.InvalidArguments},
		{"ErrListLimit", "list_jobs", map[string]any{"limit": 101}, failure.InvalidArguments},
		{"ErrRunJobEmpty", "run_job", map[string]any{"command": ""}, failure.InvalidArguments},
		{"ErrRunJobTimeout", "run_job", map[string]any{"command": "true", "timeout_seconds": 0}, failure.InvalidArguments},
		{"ErrRunJobCwd", "run_job", map[string]any{"command": "true", "cwd": "../x"}, failure.InvalidArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kerneltest.Fails(t, e.Call(tc.tool, tc.args), tc.want)
		})
	}
	// A job of another project is refused.
	j, err := e.m.Get(context.Background(), jobs.Access{Project: e.Project.ID, Fingerprint: auth.LocalUser().AuthorityFingerprint()}, id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.m.Get(context.Background(), jobs.Access{Project: "agent:local:other", Fingerprint: auth.LocalUser().AuthorityFingerprint()}, j.ID)
	if failure.KindOf(err) != failure.JobProjectMismatch {
		t.Fatalf("other project: %v", err)
	}
}

func TestReadOnlySessionCannotRunJob(t *testing.T) {
	e := newEnv(t)
	sid := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "look", "mode": "read_only"})).SessionID
	kerneltest.Fails(t, e.Call("run_job", map[string]any{"session_id": sid, "command": "touch x"}), failure.SessionGuardDenied)
	if _, err := os.Stat(filepath.Join(e.Project.Root, "x")); err == nil {
		t.Fatal("a read_only session started a job")
	}
}

// TestExpectationNeverRewritesTheJobState reproduces issue 11 item 6 for
// background runs: a job's state is its real outcome (succeeded only for
// exit 0) and expectation_matched says whether the declared expectation
// held — for run_job and for a run_process handed off after the grace.
func TestExpectationNeverRewritesTheJobState(t *testing.T) {
	e := newEnv(t)
	sid := e.session()
	terminal := func(id string) jobctl.View {
		t.Helper()
		return e.observe(map[string]any{"job_ids": []string{id}, "wait_seconds": 100, "wake_on": "all_terminal"}).Jobs[0].Job
	}
	ok := kerneltest.OK[jobctl.RunOutput](t, e.Call("run_job", map[string]any{"session_id": sid, "command": "exit 0", "result_expectation": "failure"}))
	if j := terminal(ok.Job.JobID); j.State != jobs.Succeeded || *j.ExitCode != 0 || j.Expectation != jobs.ExpectFailure || *j.ExpectationMatch {
		t.Fatalf("exit 0 expected to fail: %+v", j)
	}
	// Handed off after the 200 ms grace, with accepted_exit_codes.
	for _, tc := range []struct {
		code    int
		state   jobs.State
		matched bool
	}{{1, jobs.Failed, true}, {0, jobs.Succeeded, false}} {
		out := kerneltest.OK[run.Output](t, e.Call("run_process", map[string]any{"session_id": sid,
			"argv": []string{"sh", "-c", "sleep 1; exit " + strconv.Itoa(tc.code)}, "accepted_exit_codes": []int{1}}))
		if out.State != jobs.Running || out.JobID == "" {
			t.Fatalf("not handed off: %+v", out)
		}
		if j := terminal(out.JobID); j.State != tc.state || *j.ExitCode != tc.code || *j.ExpectationMatch != tc.matched {
			t.Fatalf("exit %d with accepted [1]: %+v", tc.code, j)
		}
	}
}
