package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/jobs"
)

// JobsDir is the directory of job output files in the data directory.
const JobsDir = "jobs"

// newJobs builds the job manager over jobs.db and <data>/jobs, and marks
// the jobs a previous server left unfinished as lost.
func newJobs(ctx context.Context, a *App) (*jobs.Manager, error) {
	m, err := jobs.NewManager(jobs.Options{
		Store: a.Stores.Jobs, Host: a.Runner, Dir: filepath.Join(a.Config.DataDir, JobsDir), Logger: a.Log,
		SyncGrace: time.Duration(a.Config.JobSyncGrace), Concurrency: a.Config.JobConcurrency,
	})
	if err != nil {
		return nil, err
	}
	lost, err := m.Recover(ctx)
	if err != nil {
		return nil, err
	}
	if len(lost) > 0 {
		a.Log.Warn("jobs left running by a previous server are lost", "jobs", len(lost))
	}
	return m, nil
}
