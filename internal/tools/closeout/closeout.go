// Package closeout registers the two read-only views of one Workflow
// Session that close a stretch of work: session_handoff_summary, the
// recovery brief for a new window, a new agent or a human receiver, and
// finish_coding_task, the deterministic closeout snapshot with a
// task_outcome.
//
// Both read the session header, its retained events and (when a Job
// manager is wired) the caller's Job aggregate, and both may read the
// workspace through one snapshot (workspace.go): at most one bounded,
// read-only `git status --porcelain=v2 --branch` in the project root per
// call. Neither runs shells or validation, appends a business event or
// closes the session; both work on closed sessions. A snapshot fence of two
// dimensions, the session's events_observed and its board's
// message_observation_revision (read together in one store snapshot,
// before and after gathering), reports a concurrent change of either as
// session_changed_during_snapshot. The board's open collaboration counts
// come from the first of those snapshots.
package closeout

import (
	"context"
	"encoding/base64"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Tool names.
const (
	HandoffToolName = "session_handoff_summary"
	FinishToolName  = "finish_coding_task"
)

// Tools holds the dependencies of both tools. Jobs may be nil: the handoff
// brief then reports the Job summary as unavailable and the closeout's Job
// block is not_configured.
type Tools struct {
	Sessions *workflow.Service
	Jobs     *jobs.Manager
	// Evidence, when set, is the evidence journal: every brief signs its
	// head and carries the session's binding counts in its basis.
	Evidence Journal
	// Runners serves each call's project: git runs there for the
	// workspace snapshot (nil: runner.Local here).
	Runners workspace.Runners
	// Snapshots reads the snapshot fence and the board's collaboration
	// counts in one store snapshot. Nil: the fence has only its ledger
	// dimension and the counts are reported unavailable.
	Snapshots workflow.SnapshotReader
	// Goals, when set, names the Goals correlated with the session in
	// the brief (id and title only); it is never used to change one.
	Goals workflow.GoalNames
	// Intents, when set, is the declared intent service: finish_coding_task
	// compares the session's intent with its changed paths (advisories
	// only).
	Intents *intent.Service
}

// Register adds session_handoff_summary and finish_coding_task to reg.
func Register(reg *kernel.Registry, t *Tools) {
	registerHandoff(reg, t)
	registerFinish(reg, t)
}

// Journal is the evidence journal as a brief's basis needs it.
type Journal interface {
	Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
}

// BriefEvidence signs the journal head and counts the session's records
// by binding, for a brief's basis. It returns nil when j is nil or the
// counts cannot be read; a checkpoint that cannot be signed leaves
// Checkpoint nil. Records of the calls still running (this one included)
// are not covered yet.
func BriefEvidence(ctx context.Context, j Journal, sessionID string) *handoff.BriefEvidence {
	if j == nil {
		return nil
	}
	c, err := j.SessionCounts(ctx, sessionID)
	if err != nil {
		return nil
	}
	ev := &handoff.BriefEvidence{Verified: c.Verified, Sessionless: c.Sessionless, InvalidClaim: c.InvalidClaim, Unknown: c.Unknown}
	if cp, err := j.Checkpoint(ctx); err == nil {
		ev.Checkpoint = &handoff.BriefCheckpoint{Origin: cp.Origin, Size: cp.Size,
			RootHash: base64.StdEncoding.EncodeToString(cp.Root), KeyID: cp.KeyID, Note: cp.Note}
	}
	return ev
}

// jobs returns the Job counts it can prove over the caller's full active
// aggregate in the session's project, with the block status: Available
// with the counts, NotConfigured without a Job manager, Unavailable when a
// list fails or is cut short (the counts are then nil).
func (t *Tools) jobs(ctx context.Context, sess workflow.Session) (*handoff.JobsSnapshot, string) {
	if t.Jobs == nil {
		return nil, NotConfigured
	}
	acc := jobs.Access{Project: sess.Project, Fingerprint: sess.OwnerFingerprint}
	c, err := t.Jobs.CountSession(ctx, acc, sess.ID, sess.JobMarkers)
	if err != nil {
		return nil, Unavailable
	}
	return &handoff.JobsSnapshot{Active: c.Active, Blocking: c.Blocking, TerminalPending: c.TerminalPending}, Available
}

// gathered is what both closeout tools read of one session under a
// snapshot fence: the session, all its retained events, its board's open
// collaboration counts (nil when unavailable), its jobs, and the workspace
// when asked for; changed reports that the session moved (either fence
// dimension differs, or it could not be read again) while they were
// gathered.
type gathered struct {
	sess       workflow.Session
	events     []workflow.Event
	guidance   *handoff.GuidanceSnapshot
	jobs       *handoff.JobsSnapshot
	jobsStatus string
	workspace  *snapshot
	changed    bool
}

// gather reads session id and what the tools report with it, fenced by
// reading the snapshot fence (or, without Snapshots, the session) before
// and after.
func (t *Tools) gather(ctx context.Context, inv *kernel.Invocation, id string, withWorkspace bool) (gathered, error) {
	var g gathered
	var before workflow.SessionSnapshot
	if t.Snapshots != nil {
		var err error
		if before, err = t.Snapshots.SessionSnapshot(ctx, id); err != nil {
			return g, err
		}
		g.guidance = handoff.GuidanceOf(before.Collaboration)
	}
	sess, err := t.Sessions.Get(ctx, id)
	if err != nil {
		return g, err
	}
	evs, err := t.Sessions.Store().Events(ctx, id, 0)
	if err != nil {
		return g, err
	}
	g.sess, g.events = sess, evs
	g.jobs, g.jobsStatus = t.jobs(ctx, sess)
	if withWorkspace && inv.HasProject {
		runners := t.Runners
		if runners == nil {
			runners = workspace.LocalOnly(&runner.Local{})
		}
		g.workspace = readWorkspace(ctx, runners.For(inv.Project), inv.Project)
	}
	if t.Snapshots == nil {
		after, err := t.Sessions.Get(ctx, id)
		g.changed = err != nil || after.EventsObserved != sess.EventsObserved
		return g, nil
	}
	after, err := t.Snapshots.SessionSnapshot(ctx, id)
	g.changed = err != nil || after.Fence != before.Fence || sess.EventsObserved != before.Fence.EventsObserved
	return g, nil
}
