package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/retention"
)

// RetentionStatus is the retention part of /api/status: the policies in
// force and the purger's most recent runs.
type RetentionStatus struct {
	// Policies are the [retention] keys set, as "key=value".
	Policies []string `json:"policies"`
	// Runs are the most recent purges (at most retention.MaxRuns),
	// oldest first.
	Runs []retention.Run `json:"runs"`
}

// EvidencePurger is the evidence journal's payload purge (decision 0086),
// which both journals offer.
type EvidencePurger interface {
	PurgeNext(ctx context.Context, policy string, cutoff time.Time, from uint64, batch int) (evidence.PurgeSummary, error)
	PendingPurge(ctx context.Context, cutoff time.Time) (int64, error)
}

// retentionTargets are the targets of policy r on st, whose job output is
// under dataDir's jobs directory, and on the evidence journal ev (nil:
// none opened, and evidence_payload_days is not enforced).
func retentionTargets(r RetentionConfig, st *Stores, ev EvidencePurger, dataDir string) []retention.Target {
	var out []retention.Target
	if ev != nil && r.EvidencePayloadDays != nil {
		// One journal batch per call (one writer transaction with its
		// purge log row), so that the purger's bounds and batch counts
		// hold. next is the run's cursor, one past the last index purged;
		// a batch that purges nothing (the run's end) or fails resets it.
		// The purger calls a target's Purge one at a time.
		var next uint64
		out = append(out, retention.Target{Store: "evidence", Policy: "evidence_payload_days", Age: r.age(*r.EvidencePayloadDays),
			Purger: retention.Funcs{
				PurgeFunc: func(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
					s, err := ev.PurgeNext(ctx, "evidence_payload_days", cutoff, next, batch)
					next = 0
					if s.Range != nil {
						next = s.Range.Last + 1
					}
					return retention.Count{Items: s.Purged}, err
				},
				PendingFunc: func(ctx context.Context, cutoff time.Time) (retention.Count, error) {
					n, err := ev.PendingPurge(ctx, cutoff)
					return retention.Count{Items: n}, err
				}}})
	}
	if r.JobOutputDays != nil {
		reach := outputReach(st, dataDir)
		out = append(out, retention.Target{Store: "jobs", Policy: "job_output_days", Age: r.age(*r.JobOutputDays),
			Purger: retention.Funcs{
				PurgeFunc: func(ctx context.Context, cutoff time.Time, batch int) (retention.Count, error) {
					c, err := jobs.PurgeOutput(ctx, st.Jobs, reach, cutoff, batch)
					return outputCount(c), err
				},
				PendingFunc: func(ctx context.Context, cutoff time.Time) (retention.Count, error) {
					c, err := jobs.PendingOutput(ctx, st.Jobs, reach, cutoff)
					return outputCount(c), err
				}}})
	}
	if r.SessionEventsDays != nil {
		p := st.Workflow
		out = append(out, retention.Target{Store: "workflow", Policy: "session_events_days", Age: r.age(*r.SessionEventsDays),
			Purger: retention.Funcs{PurgeFunc: p.PurgeClosedEvents, PendingFunc: p.CountClosedEvents}})
	}
	if r.JobOutputBytesPerProject != nil {
		reach, bound := outputReach(st, dataDir), *r.JobOutputBytesPerProject
		out = append(out, retention.Target{Store: "jobs", Policy: "job_output_bytes_per_project",
			Purger: retention.Funcs{
				PurgeFunc: func(ctx context.Context, now time.Time, batch int) (retention.Count, error) {
					c, err := jobs.PurgeOutputOverBytes(ctx, st.Jobs, reach, bound, now, batch)
					return outputCount(c), err
				},
				PendingFunc: func(ctx context.Context, now time.Time) (retention.Count, error) {
					c, err := jobs.PendingOutputOverBytes(ctx, st.Jobs, reach, bound, now)
					return outputCount(c), err
				}}})
	}
	if p, ok := st.Audit.(audit.EventPurger); ok && r.AuditEventsDays != nil {
		out = append(out, retention.Target{Store: "audit", Policy: "audit_events_days", Age: r.age(*r.AuditEventsDays),
			Purger: retention.Funcs{PurgeFunc: p.PurgeEventsBefore, PendingFunc: p.CountEventsBefore}})
	}
	return out
}

// outputReach is the job output this process's retention reaches
// (decision 0090): its own jobs' and gone replicas' whose files are under
// dataDir's jobs directory. An offline command on a database is no
// replica (ReplicaID "") and reaches the gone replicas' jobs.
func outputReach(st *Stores, dataDir string) jobs.OutputReach {
	return jobs.OutputReach{Dir: filepath.Join(dataDir, JobsDir), Replica: st.ReplicaID(), Alive: st.alive()}
}

// outputCount counts a job output purge: a job's output is one item; the
// jobs left to other replicas or unreachable are skipped.
func outputCount(c jobs.OutputPurge) retention.Count {
	return retention.Count{Items: c.Jobs, Owners: c.Jobs, Bytes: c.Bytes, Skipped: c.Elsewhere + c.Unreachable}
}

// age is n of the policy's units: n days, or n units when a test set
// unit (export_test.go's ShortenRetention).
func (r RetentionConfig) age(n int) time.Duration {
	if r.unit > 0 {
		return time.Duration(n) * r.unit
	}
	return retention.Days(n)
}

// passInterval is how long the background purger waits between passes:
// retention.Interval unless a test set interval.
func (r RetentionConfig) passInterval() time.Duration {
	if r.interval > 0 {
		return r.interval
	}
	return retention.Interval
}

// NewPurger is the purger of cfg's [retention] policy on st and the
// evidence journal ev (nil: evidence payloads are not purged); log may be
// nil. With no policy set it has no targets and purges nothing.
func NewPurger(cfg Config, st *Stores, ev EvidencePurger, log *slog.Logger) *retention.Purger {
	return retention.New(retentionTargets(cfg.Retention, st, ev, cfg.DataDir), log, nil)
}

// startRetention starts the background purger (decision 0087); Close
// stops it before the stores close.
func (a *App) startRetention() {
	var ev EvidencePurger
	if a.Evidence != nil {
		ev = a.Evidence
	}
	a.purger = NewPurger(a.Config, a.Stores, ev, a.Log)
	ctx, stop := context.WithCancel(context.Background())
	a.stopPurge, a.purgeDone = stop, make(chan struct{})
	go func() { defer close(a.purgeDone); a.purger.Loop(ctx, a.Config.Retention.passInterval()) }()
	if n := a.purger.Targets(); n > 0 {
		a.Log.Info("start: retention", "policies", a.Config.Retention.policies(), "interval", a.Config.Retention.passInterval())
	}
}

// stopRetention stops the purger and waits for it: a batch in progress
// is rolled back, and the next start's pass purges it again.
func (a *App) stopRetention() {
	if a.stopPurge != nil {
		a.stopPurge()
		<-a.purgeDone
	}
}

func (a *App) retentionStatus() RetentionStatus {
	st := RetentionStatus{Policies: a.Config.Retention.policies(), Runs: []retention.Run{}}
	if a.purger != nil {
		st.Runs = append(st.Runs, a.purger.Runs()...)
	}
	return st
}

// RetentionPolicies are the [retention] keys cfg sets, as "key=value".
func RetentionPolicies(cfg Config) []string { return cfg.Retention.policies() }

// RetentionFirstPass is closed once the background purger's first pass,
// run at start, ended.
func (a *App) RetentionFirstPass() <-chan struct{} { return a.purger.FirstPass() }
