// Evidence: the validation_recorded events of a run answered inline, and
// the jobs hook (Evidence) that turns terminal background validation jobs
// into evidence once per session under their job markers.

package validate

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/testreport"
	"github.com/webcodex/webcodex/internal/workflow"
)

// evidence builds the validation record of a run for session sid, with the
// earlier failures of its scope there that this run proves passing. A
// result replayed from the runner's cache proves nothing new (go replays
// only passes, and a failure since came from something it does not
// track), so it resolves nothing.
func evidence(ctx context.Context, sessions *workflow.Service, sid string, m jobs.ValidationMeta, rep testreport.Report, out Output) *workflow.Validation {
	var resolved []string
	if m.Expectation == "success" && out.Verdict.Resolves() && sessions != nil {
		passing := map[string]bool{}
		for _, c := range rep.Cases {
			if c.Outcome == testreport.Passed && !c.Cached {
				passing[c.ID] = true
			}
		}
		if len(passing) > 0 {
			if evs, err := sessions.Store().Events(ctx, sid, 0); err == nil {
				for id := range workflow.UnresolvedIn(workflow.Validations(evs), out.ScopeID) {
					if passing[id] {
						resolved = append(resolved, id)
					}
				}
			}
			slices.Sort(resolved)
		}
	}
	var messages []workflow.FailureMessage
	for _, m := range rep.FailureMessages {
		messages = append(messages, workflow.FailureMessage{ID: m.ID, Message: m.Message})
	}
	return &workflow.Validation{
		Tool: m.Tool, ScopeID: out.ScopeID, Packages: slices.Clone(m.Packages), Filter: m.Filter, Parser: out.Parser,
		Passed: out.Passed, Failed: out.Failed, Skipped: out.Skipped, Failures: slices.Clone(out.Failures),
		FailuresTotal: out.FailuresTotal, FailuresTruncated: out.FailuresTruncated, FailureMessages: messages, Resolved: resolved,
		CachedPackages: slices.Clone(out.CachedPackages), CachedTotal: out.CachedTotal,
		Complete: out.Complete, Problems: slices.Clone(out.Problems), CountCheck: out.CountCheck, Verdict: out.Verdict,
		Expectation: m.Expectation, ExpectationMatched: out.Expectation.Matched, ExitCode: out.ExitCode, DurationMS: out.DurationMS,
	}
}

// record attaches the evidence of a run answered inline to every session
// the call is recorded in and returns the resolved failures of the first.
func (t *Tools) record(ctx context.Context, inv *kernel.Invocation, m jobs.ValidationMeta, rep testreport.Report, out Output) (first []string) {
	for i, sid := range inv.RecordedIn() {
		v := evidence(ctx, t.Sessions, sid, m, rep, out)
		if i == 0 {
			first = v.Resolved
		}
		inv.Attach(sid, workflow.Event{Kind: workflow.EventValidationRecorded, Tool: m.Tool, Validation: v})
	}
	return first
}

// Evidence turns terminal background validation jobs into validation
// evidence: it is the jobs.Options.OnFinished hook of the runtime's job
// manager (wired in internal/app), so a validation handed off to the
// background becomes evidence when it ends, whether or not anyone observes
// it. One Evidence serves one runtime: set Jobs to the manager it is the
// hook of before the manager's Recover, and give the same Evidence to the
// validation tools.
type Evidence struct {
	Sessions *workflow.Service
	Jobs     *jobs.Manager

	// mu serializes terminal reconciliation in this runtime, from the
	// candidate snapshot through the marker/event commit, so that an older
	// snapshot never evicts a marker established from a newer one.
	mu sync.Mutex
}

// JobFinished is the jobs.Options.OnFinished hook: a terminal background
// validation job becomes one validation_recorded event in each session its
// call was recorded in (see Reconcile), at most once each. Other jobs are
// ignored: a run answered inline was recorded by its call. Best effort: a
// failure leaves the evidence to CatchUp at the next start.
func (ev *Evidence) JobFinished(ctx context.Context, j jobs.Job) {
	if !j.State.Terminal() || !j.Background || j.Validation == nil {
		return
	}
	for _, sid := range j.Validation.Sessions {
		ev.Reconcile(ctx, sid, j.ID)
	}
}

// CatchUp reconciles every session named by a retained terminal background
// validation job. Called at start after the manager's Recover, it turns
// into evidence the jobs whose hook a crash cut short (their terminal
// record was committed, their event not yet appended); jobs already
// evidence are left as they are.
func (ev *Evidence) CatchUp(ctx context.Context) error {
	if ev.Jobs == nil || ev.Sessions == nil {
		return nil
	}
	js, err := ev.Jobs.FinishedValidations(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for _, j := range js {
		for _, sid := range j.Validation.Sessions {
			if seen[sid] {
				continue
			}
			seen[sid] = true
			if _, err := ev.Reconcile(ctx, sid, ""); err != nil && failure.KindOf(err) != failure.UnknownSessionID {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Resolved returns the failures the evidence of job id resolved in session
// sid (nil when it is not evidence there).
func (ev *Evidence) Resolved(ctx context.Context, sid, id string) []string {
	evs, err := ev.Sessions.Store().Events(ctx, sid, 0)
	if err != nil {
		return nil
	}
	for _, e := range evs {
		if e.Kind == workflow.EventValidationRecorded && e.Validation != nil && e.Validation.JobID == id {
			return e.Validation.Resolved
		}
	}
	return nil
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
// reconcilers (the hook, CatchUp) append once and a restart does not
// append again. Eviction (only when the set is full) removes only markers
// absent from the current snapshot, which this runtime acquires and
// commits under one lock. The event's time is the job's finished_at; nothing is re-run and
// no output is stored but the failure messages the record keeps.
func (ev *Evidence) Reconcile(ctx context.Context, sid, only string) ([]string, error) {
	if ev.Jobs == nil || ev.Sessions == nil {
		return nil, nil
	}
	if only != "" {
		// The common case costs one header read: already evidence.
		sess, err := ev.Sessions.Get(ctx, sid)
		if err != nil {
			return nil, err
		}
		if !sess.Mutable() || slices.Contains(sess.JobMarkers, only) {
			return nil, nil
		}
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	cands, err := ev.Jobs.ValidationCandidates(ctx, sid, workflow.MaxJobMarkers)
	if err != nil {
		return nil, err
	}
	sess, err := ev.Sessions.Get(ctx, sid)
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
		rep, out := evaluateJob(ev.Jobs, j, nil)
		v := evidence(ctx, ev.Sessions, sid, *j.Validation, rep, out)
		v.JobID = j.ID
		event := workflow.Event{Kind: workflow.EventValidationRecorded, Tool: v.Tool, At: j.FinishedAt, Synthetic: !j.FinishedAt.IsZero(), Validation: v}
		skipped := false
		updated, _, err := ev.Sessions.Store().Update(ctx, sid, func(s *workflow.Session) ([]workflow.Event, error) {
			if !s.Mutable() || slices.Contains(s.JobMarkers, j.ID) {
				skipped = true
				return nil, errAlreadyEvidence
			}
			s.JobMarkers = addMarker(s.JobMarkers, j.ID, snapshot)
			return []workflow.Event{event}, nil
		})
		if skipped {
			if sess, err = ev.Sessions.Get(ctx, sid); err != nil {
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
