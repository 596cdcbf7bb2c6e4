package jobs_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/runner"
)

// calls records OnFinished calls.
type calls struct {
	mu   sync.Mutex
	jobs map[string][]jobs.Job
}

func (c *calls) hook(_ context.Context, j jobs.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs == nil {
		c.jobs = map[string][]jobs.Job{}
	}
	c.jobs[j.ID] = append(c.jobs[j.ID], j)
}

func (c *calls) of(id string) []jobs.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jobs[id]
}

// once checks that the hook got exactly one call for id, with the
// committed record in state st.
func (c *calls) once(t *testing.T, st *jobsdb.Store, id string, state jobs.State, reason string) {
	t.Helper()
	got := c.of(id)
	if len(got) != 1 {
		t.Fatalf("job %s: %d OnFinished calls, want 1", id, len(got))
	}
	rec, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].State != state || got[0].Reason != reason || rec.State != state || !got[0].FinishedAt.Equal(rec.FinishedAt) {
		t.Fatalf("job %s: hook got %s/%s, record %s/%s, want %s/%s", id, got[0].State, got[0].Reason, rec.State, rec.Reason, state, reason)
	}
}

func TestOnFinishedOncePerTerminalState(t *testing.T) {
	c := &calls{}
	e := newEnv(t, jobs.Options{Concurrency: 1, OnFinished: c.hook})
	ctx := context.Background()

	ok := e.start("exit 0")
	e.wait(ok.ID)
	c.once(t, e.store, ok.ID, jobs.Succeeded, "")
	bad := e.start("exit 3")
	e.wait(bad.ID)
	c.once(t, e.store, bad.ID, jobs.Failed, "")

	running := e.start("echo up; sleep 30")
	queued := e.start("true")
	e.waitOutput(running.ID, "up")
	if _, _, err := e.m.Stop(ctx, acc, queued.ID); err != nil {
		t.Fatal(err)
	}
	c.once(t, e.store, queued.ID, jobs.Stopped, jobs.ReasonStopJob)
	if _, _, err := e.m.Stop(ctx, acc, running.ID); err != nil {
		t.Fatal(err)
	}
	c.once(t, e.store, running.ID, jobs.Stopped, jobs.ReasonStopJob)
	// Stopping a terminal job commits nothing and calls nothing.
	if _, was, err := e.m.Stop(ctx, acc, running.ID); err != nil || !was {
		t.Fatalf("second stop: %v %v", was, err)
	}
	c.once(t, e.store, running.ID, jobs.Stopped, jobs.ReasonStopJob)

	// A start failure has a record: failed, not_started.
	spec := e.spec("")
	spec.Run.Argv = []string{filepath.Join(e.work, "no-such-program")}
	nr, err := e.m.Start(ctx, spec)
	wantKind(t, err, failure.NotStarted)
	c.once(t, e.store, nr.ID, jobs.Failed, jobs.ReasonNotStarted)

	// A run answered inline has no record and no call.
	inline := e.spec("echo hi")
	inline.Background = false
	j, res, err := e.m.RunSync(ctx, inline, 0)
	if err != nil || res == nil {
		t.Fatalf("inline: %v %v", res, err)
	}
	if n := len(c.of(j.ID)); n != 0 {
		t.Fatalf("inline run: %d OnFinished calls", n)
	}

	// Shutdown: a running job is lost (server_shutdown), once.
	last := e.start("echo up; sleep 30")
	e.waitOutput(last.ID, "up")
	cctx, cancel := context.WithTimeout(ctx, long)
	defer cancel()
	if err := e.m.Close(cctx); err != nil {
		t.Fatal(err)
	}
	c.once(t, e.store, last.ID, jobs.Lost, jobs.ReasonServerShutdown)
}

func TestOnFinishedForRecordsLostAtRecovery(t *testing.T) {
	data := t.TempDir()
	st, err := jobsdb.Open(context.Background(), filepath.Join(data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A record a dead server left running.
	orphan := jobs.Job{ID: jobs.NewID(), Project: acc.Project, Principal: acc.Fingerprint, Tool: "run_job", Program: "sh",
		Cwd: ".", Background: true, State: jobs.Running, Expectation: jobs.ExpectSuccess, CreatedAt: time.Now().UTC(), StartedAt: time.Now().UTC()}
	if err := st.Create(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	c := &calls{}
	m, err := jobs.NewManager(jobs.Options{Store: st, Host: &runner.Local{}, Dir: filepath.Join(data, "jobs"), OnFinished: c.hook})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if lost, err := m.Recover(context.Background()); err != nil || len(lost) != 1 {
		t.Fatalf("recover: %v %v", lost, err)
	}
	c.once(t, st, orphan.ID, jobs.Lost, jobs.ReasonServerRestart)
	if again, err := m.Recover(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("second recover: %v %v", again, err)
	}
	c.once(t, st, orphan.ID, jobs.Lost, jobs.ReasonServerRestart)
}

// TestReadsReportTerminalAfterOnFinished: every read that reports a job
// terminal returns after its hook did, so what the hook records is there
// when a caller learns the job ended.
func TestReadsReportTerminalAfterOnFinished(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	e := newEnv(t, jobs.Options{OnFinished: func(context.Context, jobs.Job) {
		close(entered)
		<-release
		returned.Store(true)
	}})
	j := e.start("true")
	<-entered // the terminal record is committed; the hook is running
	ctx := context.Background()
	reads := map[string]func() (jobs.State, error){
		"Get":  func() (jobs.State, error) { g, err := e.m.Get(ctx, acc, j.ID); return g.State, err },
		"Wait": func() (jobs.State, error) { g, err := e.m.Wait(ctx, j.ID, long); return g.State, err },
		"List": func() (jobs.State, error) {
			l, _, err := e.m.List(ctx, acc, jobs.ListFilter{})
			if err != nil || len(l) != 1 {
				return "", err
			}
			return l[0].State, nil
		},
		"Observe": func() (jobs.State, error) {
			o, _, err := e.m.Observe(ctx, acc, jobs.ObserveRequest{IDs: []string{j.ID}})
			if err != nil {
				return "", err
			}
			return o[0].Job.State, nil
		},
	}
	type result struct {
		name    string
		state   jobs.State
		err     error
		hookRet bool
	}
	out := make(chan result, len(reads))
	var started sync.WaitGroup
	for name, read := range reads {
		started.Add(1)
		go func() {
			started.Done()
			st, err := read()
			out <- result{name, st, err, returned.Load()}
		}()
	}
	started.Wait()
	close(release)
	for range reads {
		r := <-out
		if r.err != nil || r.state != jobs.Succeeded || !r.hookRet {
			t.Errorf("%s: state %s, err %v, after the hook returned: %v", r.name, r.state, r.err, r.hookRet)
		}
	}
}
