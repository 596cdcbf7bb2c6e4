package closeout

import (
	"slices"
	"sort"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// findings collects a closeout's hard blockers and advisories as each
// block of the snapshot is judged, in any order: sorted returns them
// sorted and without duplicates.
type findings struct {
	hard, adv []string
}

// taskEvents are the session's events without this tool's own telemetry,
// which is not task evidence: leaving it out keeps repeated closeouts
// byte-identical.
func taskEvents(all []workflow.Event) []workflow.Event {
	evs := make([]workflow.Event, 0, len(all))
	for _, e := range all {
		if e.Tool == FinishToolName && (e.Kind == workflow.EventToolCallStarted || e.Kind == workflow.EventToolCallFinished) {
			continue
		}
		evs = append(evs, e)
	}
	return evs
}

// judgeWorkspace is the workspace block of snap (nil when it was not
// taken or could not be) and the snapshot the handoff brief shows (nil
// without one); a conflicted worktree blocks, a dirty one is an advisory.
func (f *findings) judgeWorkspace(snap *snapshot, includeWorkspace bool) (Workspace, *handoff.WorkspaceSnapshot) {
	ws := Workspace{Status: NotRequested}
	var bws *handoff.WorkspaceSnapshot
	switch {
	case snap != nil:
		pl, cl := handoff.BoundPaths(snap.Paths, MaxWorkspacePaths), handoff.BoundPaths(snap.Conflicts, MaxWorkspacePaths)
		b := snap.brief()
		ws = Workspace{Status: Available, Branch: b.Branch, Head: b.Head, Dirty: &b.Dirty, Conflicted: &b.Conflicted,
			Ahead: &b.Ahead, Behind: &b.Behind, ChangedPaths: &pl, Conflicts: &cl}
		bws = b
		if b.Conflicted {
			f.hard = append(f.hard, BlockerWorkspaceConflict)
		}
		if b.Dirty {
			f.adv = append(f.adv, AdvisoryDirtyWorktree)
		}
	case includeWorkspace:
		ws.Status = Unavailable
		f.adv = append(f.adv, AdvisoryWorkspaceUnavailable)
	}
	return ws, bws
}

// sessionChanges are the paths the session changed, newest first, the seq
// of its last change (0 when none) and its tool failures by class.
func sessionChanges(evs []workflow.Event) (Changes, int64, ToolFailures) {
	var paths []string
	seen := map[string]bool{}
	var lastChange int64
	var tf ToolFailures
	for i := len(evs) - 1; i >= 0; i-- {
		e := &evs[i]
		switch e.Kind {
		case workflow.EventGuardDenied, workflow.EventValidationRecorded:
			classify(e, &tf)
		case workflow.EventToolCallFinished:
			if len(e.ChangedPaths) > 0 && lastChange == 0 {
				lastChange = e.Seq
			}
			for _, p := range e.ChangedPaths {
				if !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			}
			classify(e, &tf)
		}
	}
	return Changes{PathList: handoff.BoundPaths(paths, MaxChangedPaths), LastChangeSeq: lastChange}, lastChange, tf
}

// judgeValidation is the validation block (status is the feedback's
// validation status): an unresolved or current failing success run
// blocks; no run, no fresh pass or an evidence gap is an advisory.
func (f *findings) judgeValidation(includeValidation bool, status string, evs []workflow.Event, lastChange int64) Validation {
	val := Validation{Status: NotRequested, ReasonCode: "validation_not_requested",
		Resolved: Identities{Items: []string{}}, Unresolved: []workflow.UnresolvedFailure{}, Current: []Evidence{}}
	if includeValidation {
		val = validation(status, evs, lastChange)
		switch {
		case val.Status == handoff.ValidationUnavailable:
			f.adv = append(f.adv, AdvisoryValidationUnavailable)
		case val.HistoricalRuns == 0:
			f.adv = append(f.adv, AdvisoryValidationNotRun)
		case val.FreshPassSeq == 0 && lastChange > 0:
			f.adv = append(f.adv, AdvisoryNoValidationSinceLastChange)
		case val.FreshPassSeq == 0:
			f.adv = append(f.adv, AdvisoryNoPassingValidation)
		}
		if val.UnresolvedN > 0 || slices.ContainsFunc(val.Current, func(r Evidence) bool {
			return r.Verdict == string(workflow.VerdictFailed) && r.Expectation == "success"
		}) {
			f.hard = append(f.hard, BlockerUnresolvedValidationFailure)
		}
		if slices.ContainsFunc(val.Current, func(r Evidence) bool { return r.Verdict == string(workflow.VerdictEvidenceGap) }) {
			f.adv = append(f.adv, AdvisoryEvidenceGap)
		}
	} else {
		f.adv = append(f.adv, AdvisoryValidationNotRequested)
	}
	return val
}

// judgeJobs is the jobs block: a blocking job blocks, an active one or a
// job summary that could not be read is an advisory.
func (f *findings) judgeJobs(jobSnap *handoff.JobsSnapshot, jobsStatus string) Jobs {
	jb := Jobs{Status: jobsStatus}
	if jobSnap != nil {
		jb.Active, jb.Blocking = jobSnap.Active, jobSnap.Blocking
		if jb.Blocking > 0 {
			f.hard = append(f.hard, BlockerBlockingJobs)
		} else if jb.Active > 0 {
			f.adv = append(f.adv, AdvisoryActiveJobsPresent)
		}
	} else if jobsStatus == Unavailable {
		f.adv = append(f.adv, AdvisoryJobSummaryUnavailable)
	}
	return jb
}

// judgeSession adds the session-wide advisories: unexpected tool failures,
// calls of unknown outcome, a session that changed during the snapshot,
// and open collaboration on the board (c nil: unavailable).
func (f *findings) judgeSession(tf ToolFailures, unknown int, changed bool, c *handoff.GuidanceSnapshot) {
	if tf.Unexpected > 0 {
		f.adv = append(f.adv, AdvisoryUnexpectedToolFailures)
	}
	if unknown > 0 {
		f.adv = append(f.adv, AdvisoryOutcomeUnknownCalls)
	}
	if changed {
		f.adv = append(f.adv, AdvisorySessionChangedDuringSnapshot)
	}
	if c == nil {
		f.adv = append(f.adv, AdvisoryCollaborationUnavailable)
	} else {
		for _, a := range []struct {
			n    int
			code string
		}{{c.OpenTodos, AdvisoryOpenTodos}, {c.OpenQuestions, AdvisoryOpenQuestions},
			{c.OpenRisks, AdvisoryOpenRisks}, {c.UnresolvedAckRequired, AdvisoryUnresolvedAckRequired}} {
			if a.n > 0 {
				f.adv = append(f.adv, a.code)
			}
		}
	}
}

// sorted returns the hard blockers and advisories sorted, without
// duplicates, and never nil.
func (f *findings) sorted() (hard, adv []string) {
	hard, adv = f.hard, f.adv
	sort.Strings(hard)
	sort.Strings(adv)
	hard, adv = slices.Compact(hard), slices.Compact(adv)
	if hard == nil {
		hard = []string{}
	}
	if adv == nil {
		adv = []string{}
	}
	return hard, adv
}

// taskOutcome is the outcome of a closeout with these hard blockers and
// advisories: fail when anything blocks, else pass with a fresh passing
// validation, else warn; its reasons are all of them.
func taskOutcome(hard, adv []string, freshPass bool) TaskOutcome {
	o := TaskOutcome{Status: StatusWarn, Blocking: len(hard) > 0}
	reasons := append(append([]string{}, hard...), adv...)
	switch {
	case len(hard) > 0:
		o.Status = StatusFail
	case freshPass:
		o.Status = StatusPass
		reasons = append(reasons, ReasonFreshPassingValidation)
	}
	sort.Strings(reasons)
	o.Reasons = slices.Compact(reasons)
	return o
}
