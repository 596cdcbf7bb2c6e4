package jobs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/runner"
)

// long bounds every wait in these tests; nothing asserts a duration.
const long = 60 * time.Second

var acc = jobs.Access{Project: "agent:local:t", Fingerprint: "fp-owner"}

type env struct {
	t     testing.TB
	data  string
	work  string
	store *jobsdb.Store
	m     *jobs.Manager
}

func newEnv(t testing.TB, o jobs.Options) *env {
	t.Helper()
	data := t.TempDir()
	st, err := jobsdb.Open(context.Background(), filepath.Join(data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	o.Store, o.Host, o.Dir = st, &runner.Local{}, filepath.Join(data, "jobs")
	m, err := jobs.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, data: data, work: t.TempDir(), store: st, m: m}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close manager: %v", err)
		}
		st.Close()
	})
	return e
}

func (e *env) spec(script string) jobs.StartSpec {
	return jobs.StartSpec{
		Project: acc.Project, Principal: acc.Fingerprint, Tool: "run_job", Cwd: ".",
		Background: true, Run: runner.Spec{Argv: []string{"sh", "-c", script}, Dir: e.work, Timeout: long},
	}
}

func (e *env) start(script string) jobs.Job {
	e.t.Helper()
	j, err := e.m.Start(context.Background(), e.spec(script))
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) wait(id string) jobs.Job {
	e.t.Helper()
	j, err := e.m.Wait(context.Background(), id, long)
	if err != nil {
		e.t.Fatal(err)
	}
	if !j.State.Terminal() {
		e.t.Fatalf("job %s still %s after %s", id, j.State, long)
	}
	return j
}

// waitOutput observes a job until its stdout holds want.
func (e *env) waitOutput(id, want string) { e.t.Helper(); e.waitStream(id, jobs.Stdout, want) }

// waitStream observes a job until stream s holds want.
func (e *env) waitStream(id string, s jobs.Stream, want string) {
	e.t.Helper()
	deadline := time.Now().Add(long)
	for time.Now().Before(deadline) {
		_, c, err := e.m.Read(context.Background(), acc, id, s, nil, jobs.MaxReadBytes)
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.Contains(c.Text, want) {
			return
		}
		zero := int64(0)
		e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{id}, Wait: time.Second,
			Cursors: map[string]jobs.Cursors{id: {Stdout: &zero, Stderr: &zero}}})
	}
	e.t.Fatalf("job %s never printed %q on %s", id, want, s)
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("error %v, want kind %s", err, k)
	}
}

func TestRunSyncInline(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	spec := e.spec("echo hi; echo warn >&2; exit 3")
	spec.Background = false
	spec.AcceptedExitCodes = []int{3}
	j, res, err := e.m.RunSync(context.Background(), spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.Stdout.Text != "hi\n" || res.Stderr.Text != "warn\n" || res.ExitCode != 3 {
		t.Fatalf("result %+v", res)
	}
	// An accepted exit code meets the expectation but is not a success:
	// the state stays the run's real outcome.
	if j.State != jobs.Failed || j.Background || *j.ExitCode != 3 || !*j.Matched || j.StdoutBytes != 3 {
		t.Fatalf("job %+v", j)
	}
	// The output was answered inline: no files remain.
	if _, err := os.Stat(filepath.Join(e.data, "jobs", j.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("inline run left its output directory: %v", err)
	}
	// Nor a record: a synchronous run that started at once is made
	// durable only when it is handed off to the background (the caller's
	// workflow ledger already holds tool_call_started), which saves two
	// durable commits per inline run.
	if _, err := e.store.Get(context.Background(), j.ID); failure.KindOf(err) != failure.JobNotFound {
		t.Fatalf("inline run left a record: %v", err)
	}
}

// TestQueuedSyncRunIsDurable: a synchronous run that has to queue gets its
// record at once (it may wait for a slot longer than any grace), and keeps
// it when it is then answered inline.
func TestQueuedSyncRunIsDurable(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 1})
	blocker := e.start("sleep 0.3")
	spec := e.spec("echo hi")
	spec.Background = false
	j, res, err := e.m.RunSync(context.Background(), spec, 0)
	if err != nil || res == nil || res.Stdout.Text != "hi\n" {
		t.Fatalf("queued sync run: %+v %v", res, err)
	}
	got, err := e.store.Get(context.Background(), j.ID)
	if err != nil || got.State != jobs.Succeeded || got.Background {
		t.Fatalf("stored %+v %v", got, err)
	}
	e.wait(blocker.ID)
}

func TestSyncGraceHandoff(t *testing.T) {
	e := newEnv(t, jobs.Options{SyncGrace: 200 * time.Millisecond})
	marker := filepath.Join(e.work, "ran")
	spec := e.spec("echo once >> " + marker + "; echo started; sleep 1; echo done")
	spec.Background = false
	j, res, err := e.m.RunSync(context.Background(), spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res != nil || j.State != jobs.Running || !j.Background {
		t.Fatalf("not handed off: %+v %+v", j, res)
	}
	obs, woke, err := e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait, WakeOn: jobs.WakeTerminal})
	if err != nil {
		t.Fatal(err)
	}
	if woke != jobs.WokeCondition || obs[0].Job.State != jobs.Succeeded || obs[0].Stdout.Text != "started\ndone\n" {
		t.Fatalf("observed %s %+v", woke, obs[0])
	}
	b, _ := os.ReadFile(marker)
	if string(b) != "once\n" {
		t.Fatalf("the command ran %d times", strings.Count(string(b), "once"))
	}
	// A handed-off job keeps its output.
	_, c, err := e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	if err != nil || c.Text != "started\ndone\n" || !c.Retained {
		t.Fatalf("tail %+v %v", c, err)
	}
}

func TestObserveWakesOnTerminal(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	j := e.start("sleep 0.2; echo out")
	// The wait bound is the maximum; the call returns when the job ends.
	obs, woke, err := e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait, WakeOn: jobs.WakeAllTerminal})
	if err != nil {
		t.Fatal(err)
	}
	if woke != jobs.WokeCondition || !obs[0].Job.State.Terminal() {
		t.Fatalf("woke %s with %+v", woke, obs[0].Job)
	}
	// Cursors: the next read from next_cursor is empty, and a terminal
	// job does not make the caller wait.
	next := obs[0].Stdout.NextCursor
	obs, woke, err = e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait,
		Cursors: map[string]jobs.Cursors{j.ID: {Stdout: &next}}})
	if err != nil || obs[0].Stdout.Text != "" || obs[0].Stdout.More || woke != jobs.WokeCondition {
		t.Fatalf("re-observe %s %+v %v", woke, obs, err)
	}
}

func TestObserveWakesOnOutput(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	release := filepath.Join(e.work, "release")
	j := e.start("echo first; while [ ! -f " + release + " ]; do sleep 0.02; done; echo second")
	e.waitOutput(j.ID, "first")
	_, c, _ := e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	cur := c.NextCursor
	go func() {
		time.Sleep(100 * time.Millisecond)
		os.WriteFile(release, nil, 0o600)
	}()
	obs, woke, err := e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait,
		Cursors: map[string]jobs.Cursors{j.ID: {Stdout: &cur}}})
	if err != nil || woke != jobs.WokeCondition || obs[0].Stdout.Text != "second\n" || obs[0].Stdout.Cursor != cur {
		t.Fatalf("observe %s %+v %v", woke, obs, err)
	}
}

// TestObserveWaitingGauge: Waiting (a /metrics gauge) counts an observe
// in its bounded wait, and only while it lasts.
func TestObserveWaitingGauge(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	release := filepath.Join(e.work, "release")
	j := e.start("echo first; while [ ! -f " + release + " ]; do sleep 0.02; done; echo second")
	e.waitOutput(j.ID, "first")
	_, c, _ := e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	cur := c.NextCursor
	var inWait int64
	_, woke, err := e.m.Observe(context.Background(), acc, jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait,
		Cursors: map[string]jobs.Cursors{j.ID: {Stdout: &cur}}, BeforeWait: func() error {
			inWait = e.m.Waiting()
			return os.WriteFile(release, nil, 0o600)
		}})
	if err != nil || woke != jobs.WokeCondition {
		t.Fatalf("observe %s %v", woke, err)
	}
	if inWait != 1 || e.m.Waiting() != 0 {
		t.Errorf("Waiting() = %d during the wait, %d after, want 1 and 0", inWait, e.m.Waiting())
	}
}

func TestConcurrencyLimit(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 2, RunningPerOwner: 2})
	var ids []string
	for i := range 3 {
		f := filepath.Join(e.work, "go"+strconv.Itoa(i))
		j := e.start("echo started; while [ ! -f " + f + " ]; do sleep 0.02; done")
		ids = append(ids, j.ID)
		want := jobs.Running
		if i == 2 {
			want = jobs.Queued
		}
		if j.State != want {
			t.Fatalf("job %d is %s, want %s", i, j.State, want)
		}
	}
	e.waitOutput(ids[0], "started")
	e.waitOutput(ids[1], "started")
	if j, _ := e.m.Get(context.Background(), acc, ids[2]); j.State != jobs.Queued || !j.StartedAt.IsZero() {
		t.Fatalf("third job is %s while two run", j.State)
	}
	os.WriteFile(filepath.Join(e.work, "go0"), nil, 0o600)
	if j := e.wait(ids[0]); j.State != jobs.Succeeded {
		t.Fatalf("first job %s", j.State)
	}
	e.waitOutput(ids[2], "started")
	os.WriteFile(filepath.Join(e.work, "go1"), nil, 0o600)
	os.WriteFile(filepath.Join(e.work, "go2"), nil, 0o600)
	for _, id := range ids[1:] {
		if j := e.wait(id); j.State != jobs.Succeeded {
			t.Fatalf("job %s %s", id, j.State)
		}
	}
}

func TestStopQueuedJob(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 1})
	marker := filepath.Join(e.work, "ran")
	first := e.start("sleep 30")
	queued := e.start("touch " + marker)
	if queued.State != jobs.Queued {
		t.Fatalf("second job %s", queued.State)
	}
	j, was, err := e.m.Stop(context.Background(), acc, queued.ID)
	if err != nil || was || j.State != jobs.Stopped || j.ExitCode != nil {
		t.Fatalf("stop queued: %+v %v %v", j, was, err)
	}
	if _, _, err := e.m.Stop(context.Background(), acc, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a stopped queued job ran")
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	j := e.start("true")
	e.wait(j.ID)
	nine := make([]string, 9)
	for i := range nine {
		nine[i] = jobs.NewID()
	}
	neg := int64(-1)
	cases := []struct {
		name string
		req  jobs.ObserveRequest
		want failure.Kind
	}{
		{"ErrNoIDs", jobs.ObserveRequest{}, failure.InvalidArguments},
		{"ErrNineIDs", jobs.ObserveRequest{IDs: nine}, failure.InvalidArguments},
		{"ErrWaitTooLong", jobs.ObserveRequest{IDs: []string{j.ID}, Wait: jobs.MaxObserveWait + time.Second}, failure.InvalidArguments},
		{"ErrNegativeWait", jobs.ObserveRequest{IDs: []string{j.ID}, Wait: -time.Second}, failure.InvalidArguments},
		{"ErrWakeOn", jobs.ObserveRequest{IDs: []string{j.ID}, WakeOn: "soon"}, failure.InvalidArguments},
		{"ErrDuplicate", jobs.ObserveRequest{IDs: []string{j.ID, j.ID}}, failure.InvalidArguments},
		{"ErrNegativeCursor", jobs.ObserveRequest{IDs: []string{j.ID}, Cursors: map[string]jobs.Cursors{j.ID: {Stdout: &neg}}}, failure.InvalidArguments},
		{"ErrStrayCursor", jobs.ObserveRequest{IDs: []string{j.ID}, Cursors: map[string]jobs.Cursors{jobs.NewID(): {}}}, failure.InvalidArguments},
		{"ErrTooManyBytes", jobs.ObserveRequest{IDs: []string{j.ID}, MaxBytes: jobs.MaxReadBytes + 1}, failure.InvalidArguments},
		{"ErrUnknownJob", jobs.ObserveRequest{IDs: []string{jobs.NewID()}}, failure.JobNotFound},
		{"ErrMalformedID", jobs.ObserveRequest{IDs: []string{"job-1"}}, failure.InvalidArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.m.Observe(context.Background(), acc, tc.req)
			wantKind(t, err, tc.want)
		})
	}
	_, _, err := e.m.Observe(context.Background(), jobs.Access{Project: acc.Project, Fingerprint: "fp-other"}, jobs.ObserveRequest{IDs: []string{j.ID}})
	wantKind(t, err, failure.JobAuthorityDenied)
	_, _, err = e.m.Read(context.Background(), acc, j.ID, "stdin", nil, 0)
	wantKind(t, err, failure.InvalidArguments)
	_, _, err = e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, &neg, 0)
	wantKind(t, err, failure.InvalidArguments)
	// A missing program: nothing ran, and the caller learns it.
	spec := e.spec("")
	spec.Run.Argv = []string{"no-such-program-xyz"}
	got, err := e.m.Start(context.Background(), spec)
	wantKind(t, err, failure.NotStarted)
	if got.State != jobs.Failed || got.Reason != jobs.ReasonNotStarted {
		t.Fatalf("not-started job %+v", got)
	}
}

func TestList(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	a := e.start("true")
	b := e.start("sleep 30")
	inline := e.spec("true")
	inline.Background = false
	if _, _, err := e.m.RunSync(context.Background(), inline, 0); err != nil {
		t.Fatal(err)
	}
	e.wait(a.ID)
	js, total, err := e.m.List(context.Background(), acc, jobs.ListFilter{BackgroundOnly: true})
	if err != nil || total != 2 || len(js) != 2 || js[0].ID != b.ID || js[1].ID != a.ID {
		t.Fatalf("list %+v %d %v", js, total, err)
	}
	js, total, _ = e.m.List(context.Background(), acc, jobs.ListFilter{Active: true})
	if total != 1 || js[0].ID != b.ID {
		t.Fatalf("active %+v", js)
	}
	// A run answered inline that started at once leaves no record (it is
	// made durable only when handed off or queued), so "all" is the two
	// background jobs.
	if _, total, _ = e.m.List(context.Background(), acc, jobs.ListFilter{}); total != 2 {
		t.Fatalf("all: %d", total)
	}
	if _, total, _ = e.m.List(context.Background(), jobs.Access{Project: acc.Project, Fingerprint: "fp-other"}, jobs.ListFilter{}); total != 0 {
		t.Fatal("another owner sees jobs")
	}
}

// TestOutputCap: a job printing 1 GiB keeps MaxOutputFileBytes in its file
// and counts the rest.
func TestOutputCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB and pipes 1 GiB")
	}
	e := newEnv(t, jobs.Options{})
	j := e.start("head -c 1073741824 /dev/zero; echo end >&2")
	got := e.wait(j.ID)
	if got.State != jobs.Succeeded || got.StdoutBytes != jobs.MaxOutputFileBytes || got.StdoutDropped != 1<<30-jobs.MaxOutputFileBytes {
		t.Fatalf("job %+v", got)
	}
	st, err := os.Stat(filepath.Join(e.data, "jobs", j.ID, "stdout"))
	if err != nil || st.Size() != jobs.MaxOutputFileBytes || st.Mode().Perm() != 0o600 {
		t.Fatalf("stdout file %v %v", st, err)
	}
	if dst, _ := os.Stat(filepath.Join(e.data, "jobs", j.ID)); dst.Mode().Perm() != 0o700 {
		t.Fatalf("job directory mode %v", dst.Mode())
	}
	_, c, err := e.m.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 16)
	if err != nil || c.DroppedBytes != got.StdoutDropped || c.FileBytes != jobs.MaxOutputFileBytes || len(c.Text) != 16 {
		t.Fatalf("tail %+v %v", c, err)
	}
}

// TestPrune: beyond Retain terminal background jobs, the oldest records
// and their output directories go.
func TestPrune(t *testing.T) {
	e := newEnv(t, jobs.Options{Retain: 1})
	var ids []string
	for range 3 {
		j := e.start("echo x")
		e.wait(j.ID)
		ids = append(ids, j.ID)
	}
	if _, err := e.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		_, err := e.store.Get(context.Background(), id)
		_, serr := os.Stat(filepath.Join(e.data, "jobs", id))
		if kept := i == 2; kept != (err == nil) || kept != (serr == nil) {
			t.Fatalf("job %d: record %v, directory %v", i, err, serr)
		}
	}
}

// TestRecoverKillsSurvivors: a job whose server "crashed" (a second
// manager recovers while the first is abandoned) left a setsid sleep and
// its own leader running; Recover with KillSurvivors kills both, found by
// the identity the running record holds, and records killed_group.
func TestRecoverKillsSurvivors(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	pidFile := filepath.Join(e.work, "pids")
	j := e.start("setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + "; echo $$ >> " + pidFile + "; echo ready; sleep 1000")
	e.waitOutput(j.ID, "ready")
	rec, err := e.store.Get(context.Background(), j.ID)
	if err != nil || rec.Process == nil || rec.Process.Marker != j.ID || rec.Process.PID <= 0 || rec.Process.StartTicks == 0 {
		t.Fatalf("running record lacks the process identity: %+v %v", rec.Process, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	if len(pids) != 2 || pids[1] != rec.Process.PID {
		t.Fatalf("pids %v, leader %d", pids, rec.Process.PID)
	}
	// The crashed server can no longer write: its supervisor's late
	// terminal write fails (the record stays for Recover).
	e.store.Close()

	st2, err := jobsdb.Open(context.Background(), filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	m2, err := jobs.NewManager(jobs.Options{Store: st2, Host: &runner.Local{}, Dir: filepath.Join(e.data, "jobs"), KillSurvivors: true})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := m2.Recover(context.Background())
	if err != nil || len(lost) != 1 || lost[0].ID != j.ID || lost[0].State != jobs.Lost || !lost[0].KilledGroup {
		t.Fatalf("recover: %+v %v", lost, err)
	}
	if live := runner.Live(pids); len(live) > 0 {
		t.Fatalf("processes %v of the lost job survived recovery", live)
	}
	if sv := runner.Survivors(j.ID); len(sv) > 0 {
		t.Fatalf("processes %v carrying the job's marker survived", sv)
	}
}
