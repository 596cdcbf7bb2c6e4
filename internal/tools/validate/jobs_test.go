package validate_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/jobctl"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
	"github.com/webcodex/webcodex/internal/workspace"
)

// jobEnv is a kernel with the validation and job tools over a job manager,
// all stored under one data directory so that it can be restarted.
type jobEnv struct {
	*kerneltest.Env
	data string
	opts jobs.Options
	svc  *workflow.Service
	m    *jobs.Manager
	vt   *validate.Tools
	ev   *validate.Evidence
	id   string
	stop func()
	// noHook opens the manager without its OnFinished hook (a server that
	// crashed between a job's terminal record and its evidence).
	noHook bool
	// finished, when set, receives each job after the hook returned.
	finished chan jobs.Job
	// host, when set, runs the children (default: an unconfined Local).
	host *runner.Local
}

// slowCalcTest fails TestAdd and outlives a short sync grace.
const slowCalcTest = `package calc

import (
	"testing"
	"time"
)

func TestAdd(t *testing.T) {
	time.Sleep(400 * time.Millisecond)
	if Add(2, 2) != 4 {
		t.Fatal("2+2")
	}
}

func TestZero(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("0+0")
	}
}
`

func newJobEnv(t *testing.T, o jobs.Options) *jobEnv {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	return newJobEnvFiles(t, o, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": slowCalcTest})
}

func newJobEnvFiles(t *testing.T, o jobs.Options, files map[string]string) *jobEnv {
	t.Helper()
	return newJobEnvOn(t, o, files, nil)
}

// newJobEnvOn is newJobEnvFiles whose children run on the host that
// host, when not nil, returns for the env's data directory.
func newJobEnvOn(t *testing.T, o jobs.Options, files map[string]string, host func(data string) *runner.Local) *jobEnv {
	t.Helper()
	p := kerneltest.TempProject(t, files)
	e := &jobEnv{data: t.TempDir(), opts: o}
	if host != nil {
		e.host = host(e.data)
	}
	e.open(t, p)
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "make the tests pass"})).SessionID
	t.Cleanup(func() { e.stop() })
	return e
}

// open starts (or restarts) the stores, the manager and the kernel.
func (e *jobEnv) open(t *testing.T, p project.Project) {
	t.Helper()
	ctx := context.Background()
	st, err := workflowdb.Open(ctx, filepath.Join(e.data, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jobsdb.Open(ctx, filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	// Wired as internal/app wires it: the evidence hook on the manager,
	// recovery, then the catch-up.
	e.svc = workflow.NewService(st, nil)
	e.ev = &validate.Evidence{Sessions: e.svc}
	host := e.host
	if host == nil {
		host = &runner.Local{}
	}
	o := e.opts
	o.Store, o.Host, o.Dir = js, host, filepath.Join(e.data, "jobs")
	if !e.noHook {
		ev, finished := e.ev, e.finished
		o.OnFinished = func(ctx context.Context, j jobs.Job) {
			ev.JobFinished(ctx, j)
			if finished != nil {
				finished <- j
			}
		}
	}
	m, err := jobs.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	e.ev.Jobs, e.m = m, m
	if _, err := m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if !e.noHook {
		if err := e.ev.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	e.vt = &validate.Tools{Runners: workspace.LocalOnly(host), Sessions: e.svc, Jobs: m, Evidence: e.ev}
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: e.svc})
	validate.Register(reg, e.vt)
	jobctl.Register(reg, &jobctl.Tools{Jobs: m})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: e.svc})
	e.Env = &kerneltest.Env{T: t, Kernel: k, Project: p}
	e.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Close(ctx)
		js.Close()
		st.Close()
	}
}

func (e *jobEnv) restart() {
	e.T.Helper()
	e.stop()
	e.open(e.T.(*testing.T), e.Project)
}

func (e *jobEnv) events() []workflow.Event {
	e.T.Helper()
	evs, err := e.svc.Store().Events(context.Background(), e.id, 0)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []workflow.Event
	for _, ev := range evs {
		if ev.Kind == workflow.EventValidationRecorded {
			out = append(out, ev)
		}
	}
	return out
}

func (e *jobEnv) wait(id string) jobs.Job {
	e.T.Helper()
	j, err := e.m.Wait(context.Background(), id, time.Minute)
	if err != nil || !j.State.Terminal() {
		e.T.Fatalf("job %s: %v %s", id, err, j.State)
	}
	return j
}

// handoff starts a go_test that outlives the sync grace and returns its
// running result.
func (e *jobEnv) handoff() validate.Output {
	e.T.Helper()
	out := kerneltest.OK[validate.Output](e.T, e.Call("go_test", map[string]any{"session_id": e.id}))
	if out.State != jobs.Running || out.JobID == "" || out.Verdict != "" {
		e.T.Fatalf("handoff result: %+v", out)
	}
	return out
}

func TestValidationHandoffBecomesEvidenceOnce(t *testing.T) {
	e := newJobEnv(t, jobs.Options{SyncGrace: 50 * time.Millisecond})
	out := e.handoff()
	if n := len(e.events()); n != 0 {
		t.Fatalf("evidence before the job ended: %d", n)
	}
	j := e.wait(out.JobID)
	if j.Validation == nil || j.Validation.Tool != "go_test" || j.Validation.ScopeID != out.ScopeID || !slices.Contains(j.Validation.Sessions, e.id) {
		t.Fatalf("job metadata: %+v", j.Validation)
	}
	// The hook recorded it when the job ended (Wait returns after it).
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d validation events once the job ended, want 1", n)
	}
	// Many observers at once, through every path, racing repeated hook
	// deliveries and start catch-ups: still exactly one event.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 4 {
			case 0:
				e.Call("observe_jobs", map[string]any{"job_ids": []string{out.JobID}})
			case 1:
				e.Call("validation_summary", map[string]any{"session_id": e.id})
			case 2:
				e.ev.JobFinished(context.Background(), j)
			default:
				e.ev.CatchUp(context.Background())
			}
		}()
	}
	wg.Wait()
	evs := e.events()
	if len(evs) != 1 {
		t.Fatalf("%d validation events, want 1", len(evs))
	}
	v := evs[0].Validation
	if v.JobID != out.JobID || v.Verdict != workflow.VerdictFailed || v.Failed != 1 || v.Passed != 1 ||
		!slices.Contains(v.Failures, "example.com/calc.TestAdd") || !v.Complete || v.ScopeID != out.ScopeID {
		t.Fatalf("evidence: %+v", v)
	}
	if !evs[0].At.Equal(j.FinishedAt) {
		t.Fatalf("event at %v, job finished at %v", evs[0].At, j.FinishedAt)
	}
	sess, _ := e.svc.Get(context.Background(), e.id)
	if !slices.Equal(sess.JobMarkers, []string{out.JobID}) {
		t.Fatalf("markers: %v", sess.JobMarkers)
	}
	sum := kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if sum.Runs != 1 || len(sum.Unresolved) != 1 {
		t.Fatalf("summary: %+v", sum)
	}

	// A restart over the same data: still exactly one.
	e.restart()
	kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	e.Call("observe_jobs", map[string]any{"job_ids": []string{out.JobID}})
	e.Call("list_jobs", map[string]any{})
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d validation events after restart, want 1", n)
	}

	// A later background pass of the same scope resolves the failure.
	e.Write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	out2 := e.handoff()
	e.wait(out2.JobID)
	sum = kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	evs = e.events()
	if len(evs) != 2 || evs[1].Validation.Verdict != workflow.VerdictPassed ||
		!slices.Equal(evs[1].Validation.Resolved, []string{"example.com/calc.TestAdd"}) || len(sum.Unresolved) != 0 {
		t.Fatalf("pass after handoff: %+v, unresolved %v", evs[len(evs)-1].Validation, sum.Unresolved)
	}
}

// TestUnobservedValidationJobBecomesEvidence: a validation handed off to
// the background becomes evidence when it ends, with no tool observing it;
// observing it afterwards, by every path, adds nothing.
func TestUnobservedValidationJobBecomesEvidence(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := &jobEnv{data: t.TempDir(), opts: jobs.Options{SyncGrace: 50 * time.Millisecond}, finished: make(chan jobs.Job, 4)}
	e.open(t, kerneltest.TempProject(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": slowCalcTest}))
	t.Cleanup(func() { e.stop() })
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "make the tests pass"})).SessionID
	out := e.handoff()
	j := <-e.finished // the hook returned; nothing observed the job
	if j.ID != out.JobID || j.State != jobs.Failed || !j.Background {
		t.Fatalf("hook got %+v", j)
	}
	evs := e.events()
	if len(evs) != 1 {
		t.Fatalf("%d validation events after the job ended unobserved, want 1", len(evs))
	}
	v := evs[0].Validation
	if v.JobID != out.JobID || v.Verdict != workflow.VerdictFailed || v.Failed != 1 || v.Passed != 1 || !v.Complete ||
		!slices.Equal(v.Failures, []string{"example.com/calc.TestAdd"}) || !evs[0].At.Equal(j.FinishedAt) {
		t.Fatalf("evidence: %+v at %v (job finished %v)", v, evs[0].At, j.FinishedAt)
	}
	kerneltest.OK[jobctl.ObserveOutput](t, e.Call("observe_jobs", map[string]any{"job_ids": []string{out.JobID}}))
	e.Call("list_jobs", map[string]any{})
	e.Call("read_job_tail", map[string]any{"job_id": out.JobID})
	kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d validation events after observing, want 1", n)
	}
}

// TestCrashBeforeEvidenceIsCaughtUpAtStart: a server that committed a
// validation job's terminal record but died before its hook appended the
// evidence (here: a manager without the hook) leaves no event; the next
// start appends it, once, and later starts add nothing.
func TestCrashBeforeEvidenceIsCaughtUpAtStart(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	e := &jobEnv{data: t.TempDir(), opts: jobs.Options{SyncGrace: 50 * time.Millisecond}, noHook: true}
	e.open(t, kerneltest.TempProject(t, map[string]string{"go.mod": goMod, "calc.go": calc, "calc_test.go": slowCalcTest}))
	t.Cleanup(func() { e.stop() })
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "make the tests pass"})).SessionID
	out := e.handoff()
	j := e.wait(out.JobID)
	kerneltest.OK[jobctl.ObserveOutput](t, e.Call("observe_jobs", map[string]any{"job_ids": []string{out.JobID}}))
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d validation events without the hook, want 0", n)
	}
	e.noHook = false
	e.restart()
	evs := e.events()
	if len(evs) != 1 || evs[0].Validation.JobID != out.JobID || evs[0].Validation.Verdict != workflow.VerdictFailed || !evs[0].At.Equal(j.FinishedAt) {
		t.Fatalf("caught-up evidence: %+v", evs)
	}
	e.restart()
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d validation events after a second start, want 1", n)
	}
}

func TestStoppedValidationJobIsAnEvidenceGap(t *testing.T) {
	e := newJobEnv(t, jobs.Options{SyncGrace: 50 * time.Millisecond})
	e.Write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	out := e.handoff()
	acc := jobs.Access{Project: e.Project.ID, Fingerprint: auth.LocalUser().AuthorityFingerprint()}
	if _, _, err := e.m.Stop(context.Background(), acc, out.JobID); err != nil {
		t.Fatal(err)
	}
	kerneltest.OK[validate.SummaryOutput](t, e.Call("validation_summary", map[string]any{"session_id": e.id}))
	evs := e.events()
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	v := evs[0].Validation
	if v.Verdict != workflow.VerdictEvidenceGap || v.Complete || v.ExpectationMatched || v.JobID != out.JobID {
		t.Fatalf("stopped job evidence: %+v", v)
	}
}

func TestInlineValidationWithJobsRecordsOnce(t *testing.T) {
	e := newJobEnv(t, jobs.Options{SyncGrace: time.Minute})
	res := e.Call("go_test", map[string]any{"session_id": e.id})
	out := evidence(t, res)
	if out.Verdict != workflow.VerdictFailed || out.JobID != "" || out.State != jobs.Failed {
		t.Fatalf("inline: %+v", out)
	}
	// An inline run was answered with its evidence; a later summary adds
	// nothing, and it left no job record or output files.
	e.Call("validation_summary", map[string]any{"session_id": e.id})
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d events", n)
	}
	acc := jobs.Access{Project: e.Project.ID, Fingerprint: auth.LocalUser().AuthorityFingerprint()}
	if list, _, _ := e.m.List(context.Background(), acc, jobs.ListFilter{}); len(list) != 0 {
		t.Fatalf("records: %+v", list)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.data, "jobs")); len(ents) != 0 {
		t.Fatalf("inline job output kept: %v", ents)
	}
}

func TestPytestHandoffParsesTheReportInTheJobDir(t *testing.T) {
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Skip("pytest not on PATH")
	}
	e := newJobEnvFiles(t, jobs.Options{SyncGrace: 50 * time.Millisecond}, map[string]string{
		"test_x.py": "import time\n\ndef test_ok():\n    time.sleep(0.4)\n\ndef test_bad():\n    assert 1 == 2\n",
	})
	out := kerneltest.OK[validate.Output](t, e.Call("run_tests", map[string]any{"session_id": e.id, "runner": "pytest"}))
	if out.State != jobs.Running || out.JobID == "" {
		t.Fatalf("handoff: %+v", out)
	}
	j := e.wait(out.JobID)
	if j.Validation == nil || j.Validation.ReportFile != "junit.xml" {
		t.Fatalf("metadata: %+v", j.Validation)
	}
	kerneltest.OK[jobctl.ObserveOutput](t, e.Call("observe_jobs", map[string]any{"job_ids": []string{out.JobID}}))
	evs := e.events()
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	v := evs[0].Validation
	if v.Verdict != workflow.VerdictFailed || v.Passed != 1 || v.Failed != 1 || v.Parser == "" || v.JobID != out.JobID {
		t.Fatalf("pytest evidence: %+v", v)
	}
}
