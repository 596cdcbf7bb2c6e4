// Evidence: the validation_recorded events of a run answered inline, and
// the reconciliation that turns terminal background validation jobs into
// evidence once per session under their job markers.

package validate

import (
	"context"
	"slices"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/testreport"
	"github.com/webcodex/webcodex/internal/workflow"
)

// evidence builds the validation record of a run for session sid, with the
// earlier failures of its scope there that this run proves passing.
func (t *Tools) evidence(ctx context.Context, sid string, m jobs.ValidationMeta, rep testreport.Report, out Output) *workflow.Validation {
	var resolved []string
	if m.Expectation == "success" && out.Verdict.Resolves() && t.Sessions != nil {
		passing := map[string]bool{}
		for _, c := range rep.Cases {
			if c.Outcome == testreport.Passed {
				passing[c.ID] = true
			}
		}
		if len(passing) > 0 {
			if evs, err := t.Sessions.Store().Events(ctx, sid, 0); err == nil {
				for id := range workflow.UnresolvedIn(workflow.Validations(evs), out.ScopeID) {
					if passing[id] {
						resolved = append(resolved, id)
					}
				}
			}
			slices.Sort(resolved)
		}
	}
	return &workflow.Validation{
		Tool: m.Tool, ScopeID: out.ScopeID, Packages: slices.Clone(m.Packages), Filter: m.Filter, Parser: out.Parser,
		Passed: out.Passed, Failed: out.Failed, Skipped: out.Skipped, Failures: slices.Clone(out.Failures),
		FailuresTotal: out.FailuresTotal, FailuresTruncated: out.FailuresTruncated, Resolved: resolved,
		Complete: out.Complete, Problems: slices.Clone(out.Problems), CountCheck: out.CountCheck, Verdict: out.Verdict,
		Expectation: m.Expectation, ExpectationMatched: out.Expectation.Matched, ExitCode: out.ExitCode, DurationMS: out.DurationMS,
	}
}

// record attaches the evidence of a run answered inline to every session
// the call is recorded in and returns the resolved failures of the first.
func (t *Tools) record(ctx context.Context, inv *kernel.Invocation, m jobs.ValidationMeta, rep testreport.Report, out Output) (first []string) {
	for i, sid := range inv.RecordedIn() {
		v := t.evidence(ctx, sid, m, rep, out)
		if i == 0 {
			first = v.Resolved
		}
		inv.Attach(sid, workflow.Event{Kind: workflow.EventValidationRecorded, Tool: m.Tool, Validation: v})
	}
	return first
}

// ObserveTerminal materializes the evidence of the terminal background
// validation jobs among js in the sessions their calls were recorded in
// (observe_jobs, list_jobs and read_job_tail call it with what they
// return). Best effort: a failure leaves the evidence for a later observer.
func (t *Tools) ObserveTerminal(ctx context.Context, js []jobs.Job) {
	for _, j := range js {
		if !j.State.Terminal() || !j.Background || j.Validation == nil {
			continue
		}
		t.materialize(ctx, j, j.Validation.Sessions)
	}
}

// materialize records the evidence of terminal background job j in each
// of sids, at most once each, and returns the resolved failures of the
// first.
func (t *Tools) materialize(ctx context.Context, j jobs.Job, sids []string) (first []string) {
	for i, sid := range sids {
		res, _ := t.Reconcile(ctx, sid, j.ID)
		if i == 0 {
			first = res
		}
	}
	return first
}

// Reconcile materializes, in session sid, one validation_recorded event
// per terminal background validation job of its candidate snapshot (only
// job only, when set) that has not become evidence there yet, and returns
// the resolved failures of job only.
//
// The snapshot is the newest workflow.MaxJobMarkers terminal background
// jobs whose validation metadata names sid. A job becomes evidence under
// its exact id in the session's JobMarkers: the marker check, the marker
// insertion and the event append are one store mutation, so concurrent
// observers append once and a restart does not append again. Eviction
// (only when the set is full) removes only markers absent from the
// current snapshot, which this runtime acquires and commits under one
// lock. The event's time is the job's finished_at; nothing is re-run and
// no output is stored.
func (t *Tools) Reconcile(ctx context.Context, sid, only string) ([]string, error) {
	if t.Jobs == nil || t.Sessions == nil {
		return nil, nil
	}
	if only != "" {
		// The common case costs one header read: already evidence.
		sess, err := t.Sessions.Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		if !sess.Mutable() || slices.Contains(sess.JobMarkers, only) {
			return nil, nil
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cands, err := t.Jobs.ValidationCandidates(ctx, sid, workflow.MaxJobMarkers)
	if err != nil {
		return nil, err
	}
	sess, err := t.Sessions.Get(ctx, sid)
	if err != nil {
		return nil, err
	}
	snapshot := make(map[string]bool, len(cands))
	for _, j := range cands {
		snapshot[j.ID] = true
	}
	var resolved []string
	for i := len(cands) - 1; i >= 0; i-- { // oldest first
		j := cands[i]
		if (only != "" && j.ID != only) || slices.Contains(sess.JobMarkers, j.ID) {
			continue
		}
		if !sess.Mutable() {
			return nil, nil
		}
		rep, out := evaluateJob(t.Jobs, j, nil)
		v := t.evidence(ctx, sid, *j.Validation, rep, out)
		v.JobID = j.ID
		ev := workflow.Event{Kind: workflow.EventValidationRecorded, Tool: v.Tool, At: j.FinishedAt, Synthetic: !j.FinishedAt.IsZero(), Validation: v}
		skipped := false
		updated, _, err := t.Sessions.Store().Update(ctx, sid, func(s *workflow.Session) ([]workflow.Event, error) {
			if !s.Mutable() || slices.Contains(s.JobMarkers, j.ID) {
				skipped = true
				return nil, errAlreadyEvidence
			}
			s.JobMarkers = addMarker(s.JobMarkers, j.ID, snapshot)
			return []workflow.Event{ev}, nil
		})
		if skipped {
			if sess, err = t.Sessions.Get(ctx, sid); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		sess = updated
		if j.ID == only {
			resolved = v.Resolved
		}
	}
	return resolved, nil
}

var errAlreadyEvidence = failure.New(failure.Conflict, "the job is already evidence in this session")

// addMarker returns markers with id appended, bounded to
// workflow.MaxJobMarkers: when full, only markers of jobs absent from the
// current candidate snapshot are evicted.
func addMarker(markers []string, id string, snapshot map[string]bool) []string {
	out := slices.Clone(markers)
	if len(out) >= workflow.MaxJobMarkers {
		out = slices.DeleteFunc(out, func(m string) bool { return !snapshot[m] })
	}
	if len(out) >= workflow.MaxJobMarkers {
		// Unreachable while the snapshot holds at most MaxJobMarkers jobs
		// and id is one of them; keeps the bound regardless.
		out = out[len(out)-workflow.MaxJobMarkers+1:]
	}
	return append(out, id)
}
