package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/tools/validate"
)

// JobsDir is the directory of job output files in the data directory.
const JobsDir = "jobs"

// newJobs builds the job manager over jobs.db and <data>/jobs with its
// OnFinished hook, marks the jobs a previous server left unfinished as
// lost, and catches up the validation evidence a crash left unrecorded.
//
// The hook (validate.Evidence) turns a terminal background validation job
// into validation evidence in the sessions its call was recorded in, once
// each, when the job ends — no tool that observes the job records it. It
// is stored on a for the validation tools (a.validation).
func newJobs(ctx context.Context, a *App) (*jobs.Manager, error) {
	ev := &validate.Evidence{Sessions: a.Sessions}
	m, err := jobs.NewManager(jobs.Options{
		Store: a.Stores.Jobs, Host: a.Runner, Dir: filepath.Join(a.Config.DataDir, JobsDir), Logger: a.Log,
		SyncGrace: time.Duration(a.Config.JobSyncGrace), Concurrency: a.Config.JobConcurrency,
		RunningPerOwner: a.Config.JobRunningPerOwner, QueuedPerOwner: a.Config.JobQueuePerOwner, OnFinished: ev.JobFinished,
		// Survivors of a crash are killed unless another server may be
		// running them.
		KillSurvivors: !a.Stores.Workflow.Shared(),
		// A remote runner's job waits for its runner as long as a
		// detached process does.
		RunnerGrace: a.Hub.ReattachWindow(),
		// Replicas on one database leave each other's jobs alone while
		// the other is alive.
		Replica: a.Stores.ReplicaID(), Alive: a.Stores.alive(),
		// and wake each other's waits on their jobs.
		Changes: a.jobChanges(),
	})
	if err != nil {
		return nil, err
	}
	ev.Jobs = m
	a.validation = ev
	lost, err := m.Recover(ctx)
	if err != nil {
		return nil, err
	}
	if len(lost) > 0 {
		a.Log.Warn("jobs left running by a previous server are lost", "jobs", len(lost))
	}
	// A crash between a job's terminal record and its evidence left the
	// event unappended; it is appended now (once: under the job's marker).
	if err := ev.CatchUp(ctx); err != nil {
		a.Log.Warn("validation evidence of finished jobs not all recorded", "err", err)
	}
	return m, nil
}

// jobChanges is the jobs' Notifier of state changes committed by any
// replica (the listener's topic of jobspg.Channel), or nil on a data
// directory.
func (a *App) jobChanges() jobs.Notifier {
	if a.listener == nil {
		return nil
	}
	return a.listener.Topic(jobspg.Channel)
}
