package run_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/run"
)

func newManager(t *testing.T, dir string, o jobs.Options) *jobs.Manager {
	t.Helper()
	js, err := jobsdb.Open(context.Background(), filepath.Join(dir, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	o.Store, o.Host, o.Dir = js, &runner.Local{}, filepath.Join(dir, "jobs")
	m, err := jobs.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Close(ctx)
		js.Close()
	})
	return m
}

func (e *env) access() jobs.Access {
	return jobs.Access{Project: e.Project.ID, Fingerprint: auth.LocalUser().AuthorityFingerprint()}
}

// waitTerminal observes a job until it is terminal and returns it with
// its whole stdout.
func (e *env) waitTerminal(id string) jobs.Observation {
	e.T.Helper()
	zero := int64(0)
	obs, _, err := e.m.Observe(context.Background(), e.access(), jobs.ObserveRequest{IDs: []string{id}, Wait: jobs.MaxObserveWait,
		WakeOn: jobs.WakeTerminal, Cursors: map[string]jobs.Cursors{id: {Stdout: &zero}}})
	if err != nil {
		e.T.Fatal(err)
	}
	if !obs[0].Job.State.Terminal() {
		e.T.Fatalf("job %s still %s", id, obs[0].Job.State)
	}
	return obs[0]
}

// TestWithoutJobManager: without a manager a run is waited for to its end,
// with the same results.
func TestWithoutJobManager(t *testing.T) {
	e := newEnvWith(t, false, jobs.Options{})
	out := kerneltest.OK[run.Output](t, e.Call("run_shell", map[string]any{"command": "echo hi"}))
	if out.Stdout.Text != "hi\n" || out.State != jobs.Succeeded || out.JobID != "" {
		t.Fatalf("output %+v", out)
	}
	kerneltest.Fails(t, e.Call("run_process", map[string]any{"argv": []string{"false"}}), failure.CommandFailed)
	kerneltest.Fails(t, e.Call("run_process", map[string]any{"argv": []string{"no-such-binary-xyz"}}), failure.NotStarted)
}

// TestInlineRunIsAJob: a run answered inline is supervised by the job
// manager (it reports the job state) but leaves no job record and names no
// job id: a record is made durable only when a run is handed off (or
// queued), which keeps two durable commits off every inline run. The
// workflow ledger's tool_call_started still records the attempt.
func TestInlineRunIsAJob(t *testing.T) {
	e := newEnv(t)
	out := kerneltest.OK[run.Output](t, e.Call("run_process", map[string]any{"argv": []string{"echo", "x"}}))
	if out.State != jobs.Succeeded || out.JobID != "" || out.Cursors != nil || out.Hint != "" {
		t.Fatalf("output %+v", out)
	}
	if list, _, err := e.m.List(context.Background(), e.access(), jobs.ListFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("inline run left records: %+v %v", list, err)
	}
	res := e.Call("run_process", map[string]any{"argv": []string{"sh", "-c", "exit 5"}})
	kerneltest.Fails(t, res, failure.CommandFailed)
	if ex := failedExecution(t, res); ex.State != jobs.Failed || ex.ExitCode != 5 || ex.JobID != "" {
		t.Fatalf("failed execution %+v", ex)
	}
}

// TestHandoff: a run outliving the sync grace is the same process,
// continued as a background job; it is never run twice, and its
// expectation is classified when it ends.
func TestHandoff(t *testing.T) {
	e := newEnvWith(t, true, jobs.Options{SyncGrace: 200 * time.Millisecond})
	out := kerneltest.OK[run.Output](t, e.Call("run_script", map[string]any{"interpreter": "sh",
		"script": "echo once >> ran.txt\necho before\nsleep 1\necho after\nexit 3\n", "result_expectation": "failure"}))
	if out.State != jobs.Running || out.JobID == "" || out.ExitCode != -1 || out.Ending != "" || out.Stdout.Text != "before\n" ||
		out.Cursors == nil || *out.Cursors.Stdout != int64(len("before\n")) || out.Expectation.Matched {
		t.Fatalf("handoff %+v", out)
	}
	o := e.waitTerminal(out.JobID)
	if o.Job.State != jobs.Failed || *o.Job.ExitCode != 3 || !*o.Job.Matched || o.Stdout.Text != "before\nafter\n" || !o.Job.Background {
		t.Fatalf("finished %+v", o)
	}
	if b, _ := os.ReadFile(filepath.Join(e.Project.Root, "ran.txt")); string(b) != "once\n" {
		t.Fatalf("ran.txt %q: not exactly one execution", b)
	}
}

// TestQueuedScriptHandoff: a run_script queued behind the concurrency
// limit is handed off before it starts; its script file outlives the call
// until the job has run.
func TestQueuedScriptHandoff(t *testing.T) {
	e := newEnvWith(t, true, jobs.Options{SyncGrace: 200 * time.Millisecond, Concurrency: 1})
	release := filepath.Join(e.Project.Root, "release")
	blocker, err := e.m.Start(context.Background(), jobs.StartSpec{Project: e.Project.ID, Principal: e.access().Fingerprint, Tool: "test",
		Run: runner.Spec{Argv: []string{"sh", "-c", "while [ ! -f " + release + " ]; do sleep 0.02; done"}, Dir: e.Project.Root}})
	if err != nil {
		t.Fatal(err)
	}
	out := kerneltest.OK[run.Output](t, e.Call("run_script", map[string]any{"interpreter": "sh", "script": "echo from-script\n"}))
	if out.State != jobs.Queued {
		t.Fatalf("handoff %+v", out)
	}
	os.WriteFile(release, nil, 0o600)
	e.waitTerminal(blocker.ID)
	o := e.waitTerminal(out.JobID)
	if o.Job.State != jobs.Succeeded || o.Stdout.Text != "from-script\n" {
		t.Fatalf("queued script %+v", o)
	}
}

func kernelCall(e *env, tool, args string) kernel.Call {
	args = `{"project":"` + e.Project.ID + `",` + args[1:]
	return kernel.Call{Tool: tool, Arguments: json.RawMessage(args), Principal: auth.LocalUser(), Source: kernel.SourceInternal}
}
