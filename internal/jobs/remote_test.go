package jobs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/runner"
)

// The remote runner is faked here: these tests are about the records (the
// runner's side and the wire have their own tests, and an end-to-end test
// kills a real server under a real runner).

// remoteProc is a process on the fake runner.
type remoteProc struct {
	stdout  io.Writer
	once    sync.Once
	done    chan struct{}
	res     runner.Result
	err     error
	stopped chan struct{}
}

func newRemoteProc(stdout io.Writer) *remoteProc {
	return &remoteProc{stdout: stdout, done: make(chan struct{}), stopped: make(chan struct{}, 1)}
}

func (p *remoteProc) end(res runner.Result, err error) {
	p.once.Do(func() { p.res, p.err = res, err; close(p.done) })
}
func (p *remoteProc) Done() <-chan struct{} { return p.done }
func (p *remoteProc) Wait(ctx context.Context) (runner.Result, error) {
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return runner.Result{}, ctx.Err()
	}
}
func (p *remoteProc) Snapshot() (runner.Output, runner.Output) {
	return runner.Output{}, runner.Output{}
}
func (p *remoteProc) Stop() {
	select {
	case p.stopped <- struct{}{}:
	default:
	}
}
func (p *remoteProc) Sandbox() runner.Mode      { return runner.WorkspaceWrite }
func (p *remoteProc) PID() int                  { return 9 }
func (p *remoteProc) Identity() runner.Identity { return runner.Identity{} }

// fakeRunner is a runner.Reattacher.
type fakeRunner struct {
	id       string
	mu       sync.Mutex
	procs    map[string]*remoteProc
	attached map[string]runner.Attach
	released []string
}

func newFakeRunner(id string) *fakeRunner {
	return &fakeRunner{id: id, procs: map[string]*remoteProc{}, attached: map[string]runner.Attach{}}
}

func (r *fakeRunner) ID() string { return r.id }

func (r *fakeRunner) Start(_ context.Context, s runner.Spec) (runner.Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := newRemoteProc(s.Stdout)
	r.procs[s.RunID] = p
	return p, nil
}

func (r *fakeRunner) Adopt(_ context.Context, runID string, a runner.Attach) (runner.Process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := newRemoteProc(a.Stdout)
	r.procs[runID] = p
	r.attached[runID] = a
	return p, nil
}

func (r *fakeRunner) Release(runID string) {
	r.mu.Lock()
	r.released = append(r.released, runID)
	r.mu.Unlock()
}

func (r *fakeRunner) proc(id string) *remoteProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[id]
}

func (r *fakeRunner) releasedIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.released)
}

// startRemote starts a background job on r.
func startRemote(t *testing.T, e *env, r *fakeRunner) jobs.Job {
	t.Helper()
	s := e.spec("unused: the fake runner runs nothing")
	s.Host = r
	j, err := e.m.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if j.Runner != r.id {
		t.Fatalf("the record does not name its runner: %+v", j)
	}
	return j
}

// restarted is a second Manager over e's store and files: the server
// after a crash.
func restarted(t *testing.T, e *env, grace time.Duration) *jobs.Manager {
	t.Helper()
	st, err := jobsdb.Open(context.Background(), filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.NewManager(jobs.Options{Store: st, Host: &runner.Local{}, Dir: filepath.Join(e.data, "jobs"), RunnerGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close(context.Background())
		st.Close()
	})
	lost, err := m.Recover(context.Background())
	if err != nil || len(lost) != 0 {
		t.Fatalf("recover marked a remote runner's job lost: %+v %v", lost, err)
	}
	return m
}

// TestReconcileAdoptsWhatTheRunnerHolds: after a restart, a remote job
// the runner still holds is adopted: its output continues after the bytes
// the file holds and its exit is recorded; a process no record claims is
// released.
func TestReconcileAdoptsWhatTheRunnerHolds(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	r := newFakeRunner("box")
	j := startRemote(t, e, r)
	fmt.Fprint(r.proc(j.ID).stdout, "one\n")

	m2 := restarted(t, e, time.Minute)
	if got, _ := m2.Get(context.Background(), acc, j.ID); got.State != jobs.Running {
		t.Fatalf("the record before its runner connects: %+v", got)
	}
	r2 := newFakeRunner("box")
	if err := m2.Reconcile(context.Background(), r2, []string{j.ID, "wc_job_orphan"}); err != nil {
		t.Fatal(err)
	}
	a, ok := r2.attached[j.ID]
	if !ok || a.StdoutOffset != 4 || a.StderrOffset != 0 {
		t.Fatalf("the adoption: %+v %t", a, ok)
	}
	if got := r2.releasedIDs(); !slices.Equal(got, []string{"wc_job_orphan"}) {
		t.Fatalf("released %v, want the orphan only", got)
	}
	fmt.Fprint(a.Stdout, "two\n")
	r2.proc(j.ID).end(runner.Result{ExitCode: 0, Ending: runner.Exited}, nil)
	got, err := m2.Wait(context.Background(), j.ID, long)
	if err != nil || got.State != jobs.Succeeded || got.StdoutBytes != 8 {
		t.Fatalf("the adopted job: %+v %v", got, err)
	}
	b, err := os.ReadFile(m2.OutputPath(j.ID, jobs.Stdout))
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("the adopted job's output: %q %v", b, err)
	}
	if !slices.Contains(r2.releasedIDs(), j.ID) {
		t.Fatal("the runner was not told to release the recorded process")
	}
}

// TestReconcileMarksLostWhatTheRunnerDoesNotHold: a runner that connects
// without the job's process: the job is lost, reason runner_lost; another
// runner's job is untouched.
func TestReconcileMarksLostWhatTheRunnerDoesNotHold(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	box, other := newFakeRunner("box"), newFakeRunner("other")
	j, k := startRemote(t, e, box), startRemote(t, e, other)
	m2 := restarted(t, e, time.Minute)
	if err := m2.Reconcile(context.Background(), newFakeRunner("box"), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.Get(context.Background(), acc, j.ID); got.State != jobs.Lost || got.Reason != jobs.ReasonRunnerLost {
		t.Fatalf("a job its runner no longer holds: %+v", got)
	}
	if got, _ := m2.Get(context.Background(), acc, k.ID); got.State != jobs.Running {
		t.Fatalf("another runner's job changed: %+v", got)
	}
}

// TestARemoteJobWaitsForItsRunnerThenIsLost: a runner that never connects
// after a restart: its jobs are lost after the grace, reason runner_lost.
func TestARemoteJobWaitsForItsRunnerThenIsLost(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	j := startRemote(t, e, newFakeRunner("box"))
	m2 := restarted(t, e, 10*time.Millisecond)
	got, err := m2.Wait(context.Background(), j.ID, long)
	if err != nil || got.State != jobs.Lost || got.Reason != jobs.ReasonRunnerLost {
		t.Fatalf("a job whose runner stayed away: %+v %v", got, err)
	}
}

// TestARestartedRunnersJobIsLost: the runner reports its process gone
// with a restart: lost, reason runner_restart, never a success.
func TestARestartedRunnersJobIsLost(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	r := newFakeRunner("box")
	j := startRemote(t, e, r)
	r.proc(j.ID).end(runner.Result{}, fmt.Errorf("%w: gone", runner.ErrHostRestarted))
	got := e.wait(j.ID)
	if got.State != jobs.Lost || got.Reason != jobs.ReasonRunnerRestart {
		t.Fatalf("a job of a restarted runner: %+v", got)
	}
	if !slices.Contains(r.releasedIDs(), j.ID) {
		t.Fatal("the runner was not told to release the lost process")
	}
}

// TestCloseLeavesARemoteJobRunning: shutdown does not stop a remote
// runner's process nor finish its record: the next server adopts it.
func TestCloseLeavesARemoteJobRunning(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	r := newFakeRunner("box")
	j := startRemote(t, e, r)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.proc(j.ID).stopped:
		t.Fatal("shutdown stopped a remote runner's process")
	default:
	}
	got, err := e.store.Get(context.Background(), j.ID)
	if err != nil || got.State != jobs.Running {
		t.Fatalf("the record after shutdown: %+v %v", got, err)
	}
}

// TestAnAdoptedValidationGetsItsReport: the report a validation run
// collects continues into the job's directory after what the previous
// server received of it.
func TestAnAdoptedValidationGetsItsReport(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	r := newFakeRunner("box")
	s := e.spec("unused")
	s.Host = r
	s.Validation = &jobs.ValidationMeta{Tool: "run_tests", ScopeID: "s", Expectation: "success", ReportFile: "junit.xml"}
	j, err := e.m.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(e.m.JobDir(j.ID), "junit.xml")
	if err := os.WriteFile(report, []byte("<testsuite"), 0o600); err != nil {
		t.Fatal(err)
	}
	m2 := restarted(t, e, time.Minute)
	r2 := newFakeRunner("box")
	if err := m2.Reconcile(context.Background(), r2, []string{j.ID}); err != nil {
		t.Fatal(err)
	}
	a := r2.attached[j.ID]
	if a.Report == nil || a.ReportOffset != int64(len("<testsuite")) {
		t.Fatalf("the adoption's report: %+v", a)
	}
	fmt.Fprint(a.Report, "/>")
	r2.proc(j.ID).end(runner.Result{Ending: runner.Exited}, nil)
	if _, err := m2.Wait(context.Background(), j.ID, long); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(report); err != nil || string(b) != "<testsuite/>" {
		t.Fatalf("the report: %q %v", b, err)
	}
}

// TestAQueuedRemoteJobIsLostAtRestart: a job that never started on its
// runner has no process there to wait for: it is lost at the restart,
// reason server_restart, like a local one.
func TestAQueuedRemoteJobIsLostAtRestart(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 1})
	r := newFakeRunner("box")
	running, queued := startRemote(t, e, r), startRemote(t, e, r)
	if queued.State != jobs.Queued {
		t.Fatalf("the second job: %+v", queued)
	}
	st, err := jobsdb.Open(context.Background(), filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m2, err := jobs.NewManager(jobs.Options{Store: st, Host: &runner.Local{}, Dir: filepath.Join(e.data, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close(context.Background())
	lost, err := m2.Recover(context.Background())
	if err != nil || len(lost) != 1 || lost[0].ID != queued.ID || lost[0].Reason != jobs.ReasonServerRestart {
		t.Fatalf("recover: %+v %v", lost, err)
	}
	if got, _ := m2.Get(context.Background(), acc, running.ID); got.State != jobs.Running {
		t.Fatalf("the running remote job: %+v", got)
	}
}

// replicaManager is a Manager over e's store as replica id, another
// replica of the same deployment; alive answers which replicas serve.
func replicaManager(t *testing.T, e *env, id string, alive func(string) bool) *jobs.Manager {
	t.Helper()
	st, err := jobsdb.Open(context.Background(), filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.NewManager(jobs.Options{Store: st, Host: &runner.Local{}, Dir: filepath.Join(t.TempDir(), "jobs"), RunnerGrace: time.Minute,
		Replica: id, Alive: func(_ context.Context, r string) (bool, error) { return alive(r), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close(context.Background())
		st.Close()
	})
	return m
}

// TestReconcileLeavesALiveReplicasJobAndTakesOverAGoneOnes: a runner
// connected to several replicas greets replica B while replica A
// supervises one of its jobs. While A is alive B neither marks the job
// lost (the runner does not offer it: A streams it) nor releases it; once
// A is gone, B adopts it and the record names B, so that replica C, whose
// runner connection comes next, leaves it to B.
func TestReconcileLeavesALiveReplicasJobAndTakesOverAGoneOnes(t *testing.T) {
	var mu sync.Mutex
	up := map[string]bool{"rA": true, "rB": true, "rC": true}
	alive := func(r string) bool { mu.Lock(); defer mu.Unlock(); return up[r] }
	e := newEnv(t, jobs.Options{Replica: "rA", Alive: func(_ context.Context, r string) (bool, error) { return alive(r), nil }})
	j := startRemote(t, e, newFakeRunner("box"))

	b := replicaManager(t, e, "rB", alive)
	rb := newFakeRunner("box")
	if err := b.Reconcile(context.Background(), rb, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get(context.Background(), acc, j.ID); got.State != jobs.Running || got.Replica != "rA" {
		t.Fatalf("B changed live A's job: %+v", got)
	}
	if len(rb.attached) != 0 || len(rb.releasedIDs()) != 0 {
		t.Fatalf("B adopted %v or released %v of A's job", rb.attached, rb.releasedIDs())
	}

	mu.Lock()
	up["rA"] = false
	mu.Unlock()
	rb2 := newFakeRunner("box")
	if err := b.Reconcile(context.Background(), rb2, []string{j.ID}); err != nil {
		t.Fatal(err)
	}
	if _, ok := rb2.attached[j.ID]; !ok {
		t.Fatal("B did not adopt the job of A, which is gone")
	}
	if got, _ := b.Get(context.Background(), acc, j.ID); got.State != jobs.Running || got.Replica != "rB" {
		t.Fatalf("the job B took over: %+v", got)
	}

	c := replicaManager(t, e, "rC", alive)
	rc := newFakeRunner("box")
	if err := c.Reconcile(context.Background(), rc, []string{j.ID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(context.Background(), acc, j.ID); got.State != jobs.Running || got.Replica != "rB" || len(rc.attached) != 0 {
		t.Fatalf("C took B's job: %+v, attached %v", got, rc.attached)
	}
	rb2.proc(j.ID).end(runner.Result{ExitCode: 0, Ending: runner.Exited}, nil)
	if got, err := b.Wait(context.Background(), j.ID, long); err != nil || got.State != jobs.Succeeded || got.Replica != "rB" {
		t.Fatalf("the adopted job's end: %+v %v", got, err)
	}
}

// TestAnotherReplicasJobOutputNamesItsReplica: the output of a job that
// replica A supervises is in A's data directory; read through replica B,
// the chunk is empty, not retained, and names A, while A reads it.
func TestAnotherReplicasJobOutputNamesItsReplica(t *testing.T) {
	alive := func(string) bool { return true }
	e := newEnv(t, jobs.Options{Replica: "rA", Alive: func(context.Context, string) (bool, error) { return true, nil }})
	r := newFakeRunner("box")
	j := startRemote(t, e, r)
	fmt.Fprint(r.proc(j.ID).stdout, "on A\n")
	b := replicaManager(t, e, "rB", alive)
	_, c, err := b.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	if err != nil || c.Retained || c.Text != "" || c.Replica != "rA" {
		t.Fatalf("B's read of A's job: %+v %v", c, err)
	}
	_, c, err = e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	if err != nil || !c.Retained || c.Text != "on A\n" || c.Replica != "" {
		t.Fatalf("A's read of its job: %+v %v", c, err)
	}
}
