//go:build unix

package jobs_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/runner"
)

func TestStopIgnoringSIGTERM(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	pidFile := filepath.Join(e.work, "pid")
	j := e.start("trap '' TERM; echo $$ > " + pidFile + "; echo ready; sleep 30")
	e.waitOutput(j.ID, "ready")
	pid := readPID(t, pidFile)

	other := jobs.Access{Project: acc.Project, Fingerprint: "fp-other"}
	_, _, err := e.m.Stop(context.Background(), other, j.ID)
	wantKind(t, err, failure.JobAuthorityDenied)
	_, _, err = e.m.Stop(context.Background(), jobs.Access{Project: "agent:local:else", Fingerprint: acc.Fingerprint}, j.ID)
	wantKind(t, err, failure.JobProjectMismatch)
	_, _, err = e.m.Stop(context.Background(), acc, jobs.NewID())
	wantKind(t, err, failure.JobNotFound)
	_, _, err = e.m.Stop(context.Background(), acc, "wc_job_nothex")
	wantKind(t, err, failure.InvalidArguments)

	got, was, err := e.m.Stop(context.Background(), acc, j.ID)
	if err != nil || was {
		t.Fatal(err, was)
	}
	if got.State != jobs.Stopped || got.Reason != jobs.ReasonStopJob || !got.KilledGroup || got.Signal != "killed" {
		t.Fatalf("stopped job %+v", got)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("the SIGTERM-ignoring child survived stop_job")
	}
	again, was, err := e.m.Stop(context.Background(), acc, j.ID)
	if err != nil || !was || again.State != jobs.Stopped || !again.FinishedAt.Equal(got.FinishedAt) {
		t.Fatalf("second stop changed something: %+v %v %v", again, was, err)
	}
}

// TestRecoverAfterCrash simulates a server that died with a job running: a
// second manager over the same database (its own connection, as a new
// process would open) recovers while the first is abandoned.
func TestRecoverAfterCrash(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	pidFile := filepath.Join(e.work, "pid")
	j := e.start("echo $$ > " + pidFile + "; echo partial; echo err >&2; sleep 60")
	e.waitOutput(j.ID, "partial")
	e.waitStream(j.ID, jobs.Stderr, "err")
	pid := readPID(t, pidFile)

	st2, err := jobsdb.Open(context.Background(), filepath.Join(e.data, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	m2, err := jobs.NewManager(jobs.Options{Store: st2, Host: &runner.Local{}, Dir: filepath.Join(e.data, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := m2.Recover(context.Background())
	if err != nil || len(lost) != 1 || lost[0].ID != j.ID {
		t.Fatalf("recover: %+v %v", lost, err)
	}
	got, err := m2.Get(context.Background(), acc, j.ID)
	if err != nil || got.State != jobs.Lost || got.Reason != jobs.ReasonServerRestart || got.StdoutBytes != int64(len("partial\n")) {
		t.Fatalf("recovered %+v %v", got, err)
	}
	_, c, err := m2.Read(context.Background(), acc, j.ID, jobs.Stdout, nil, 0)
	if err != nil || c.Text != "partial\n" {
		t.Fatalf("last known output %+v %v", c, err)
	}
	_, c, _ = m2.Read(context.Background(), acc, j.ID, jobs.Stderr, nil, 0)
	if c.Text != "err\n" {
		t.Fatalf("stderr %q", c.Text)
	}
	// The abandoned process is killed; its old supervisor's late report
	// does not overwrite the recovered record.
	syscall.Kill(-pid, syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = m2.Get(context.Background(), acc, j.ID)
	if got.State != jobs.Lost || got.Reason != jobs.ReasonServerRestart {
		t.Fatalf("a late supervisor rewrote the record: %+v", got)
	}
	// A second recovery finds nothing.
	if again, err := m2.Recover(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("second recover %+v %v", again, err)
	}
	if err := m2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownMarksLost(t *testing.T) {
	e := newEnv(t, jobs.Options{Concurrency: 1})
	pidFile := filepath.Join(e.work, "pid")
	j := e.start("echo $$ > " + pidFile + "; echo up; sleep 60")
	queued := e.start("echo never")
	e.waitOutput(j.ID, "up")
	pid := readPID(t, pidFile)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("shutdown left the job's process running")
	}
	for _, id := range []string{j.ID, queued.ID} {
		got, err := e.store.Get(context.Background(), id)
		if err != nil || got.State != jobs.Lost || got.Reason != jobs.ReasonServerShutdown {
			t.Fatalf("after shutdown: %+v %v", got, err)
		}
	}
	_, err := e.m.Start(context.Background(), e.spec("true"))
	wantKind(t, err, failure.Unavailable)
}
