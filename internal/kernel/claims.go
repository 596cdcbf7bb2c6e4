package kernel

import (
	"context"
	"errors"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// boundedClaim is a claimed session id as evidence and logs keep it:
// bounded, and with anything shaped like a credential redacted.
func boundedClaim(id string) string {
	if len(id) > MaxRecordingSessionIDBytes {
		id = id[:MaxRecordingSessionIDBytes]
	}
	return redact.String(id)
}

// judgeAndBegin judges the call's claims (checkClaims, with remember) and
// begins it (begin): the invocation, its verified recorder and the
// sessions it records in, or the first of the two errors.
func (k *Kernel) judgeAndBegin(ctx context.Context, c Call, tool *Tool, in any, rec *Record, remember bool) (*Invocation, *workflow.Session, []pair, error) {
	inv, recorder, err := k.checkClaims(ctx, c, tool, in, rec, remember)
	if err != nil {
		return nil, nil, nil, err
	}
	pairs, err := k.begin(ctx, tool, inv, recorder, rec)
	if err != nil {
		return nil, nil, nil, err
	}
	return inv, recorder, pairs, nil
}

// errJudgeAgain is checkClaims' and begin's error when claims judged on a
// remembered header (see checkClaims) do not stand as judged: nothing was
// decided or written, and the claims are judged again on a read.
var errJudgeAgain = errors.New("kernel: judge the claims again on a read")

// checkClaims resolves the call's project and judges every session it
// names, reading each distinct id once: the business session_id (which
// authorizes the call and may supply the project) and the
// recording_session_id (provenance only). It sets the record's project and
// binding and returns the invocation and the verified recorder.
//
// With remember, a mutating call naming one session, whose started event
// commits before its handler runs, is judged on the header the ledger
// last read or wrote for it, without a read (workflow.RememberedClaim);
// its started commit then fails unless that header is still the stored
// one, and begin returns errJudgeAgain. A refusal is never decided on a
// remembered header: checkClaims returns errJudgeAgain instead.
func (k *Kernel) checkClaims(ctx context.Context, c Call, tool *Tool, in any, rec *Record, remember bool) (*Invocation, *workflow.Session, error) {
	inv := &Invocation{ID: rec.InvocationID, Tool: tool.Name, Principal: c.Principal, Window: c.ClientWindow, progress: c.Progress}
	fp := c.Principal.AuthorityFingerprint()
	var projectID, businessID string
	if ps, ok := in.(ProjectScoped); ok {
		projectID = ps.ProjectID()
	}
	if ss, ok := in.(SessionScoped); ok {
		businessID = ss.BusinessSessionID()
		rec.BusinessSessionID = boundedClaim(businessID)
	}
	if tool.Session == SessionRequired && businessID == "" {
		return nil, nil, failure.New(failure.InvalidArguments, "session_id is required")
	}

	// Each distinct id is read once; every check of it judges that read.
	remember = remember && tool.Mutates && !tool.PreparesBeforeEffect &&
		(businessID == "" || c.RecordingSessionID == "" || businessID == c.RecordingSessionID)
	readClaim := func(id string) workflow.Claim {
		// A caller already gone is told so by the read, as without one.
		if remember && ctx.Err() == nil {
			if cl, ok := k.sessions.RememberedClaim(id); ok {
				inv.claimed, inv.claimedIn = cl.Remembered(), id
				return cl
			}
		}
		return k.sessions.ReadClaim(ctx, id)
	}
	var business, recorder workflow.Claim
	if businessID != "" {
		business = readClaim(businessID)
	}
	switch {
	case c.RecordingSessionID == "":
	case c.RecordingSessionID == businessID:
		recorder = business
	default:
		recorder = readClaim(c.RecordingSessionID)
	}
	if (business.Err() != nil || recorder.Err() != nil) && ctx.Err() != nil {
		// The caller went away during the read: that says nothing about
		// the claim, which stays unchecked.
		return nil, nil, failure.New(failure.NotStarted, "the call was cancelled by its caller before it ran; nothing was done")
	}
	if businessID == "" && c.RecordingSessionID == "" {
		rec.Binding = sessionless
	}

	resolve := func(id string) error {
		p, err := k.projects.Get(ctx, id)
		if err != nil {
			return err
		}
		if p.Runner != "" && !tool.Runners {
			return failure.New(failure.Unavailable, "project %s is served by runner %s: %s does not run through runners yet", p.ID, p.Runner, tool.Name)
		}
		inv.Project, inv.HasProject = p, true
		rec.Project = p.ID
		return nil
	}
	if projectID != "" {
		if err := resolve(projectID); err != nil {
			return nil, nil, err
		}
	}
	var subject workflow.ClaimVerdict
	if businessID != "" {
		v := business.Check(workflow.Check{Fingerprint: fp, Project: projectID, Mutate: tool.Mutates, Write: tool.Writes})
		subject = v
		if !v.Verified() && business.Remembered() != "" {
			return nil, nil, errJudgeAgain
		}
		if !v.Verified() {
			rec.Binding = k.bind(rec, v)
			err := v.Error()
			if failure.Is(err, failure.SessionGuardDenied) {
				k.recordDenial(ctx, inv, businessID)
			}
			return nil, nil, err
		}
		s := v.Claim.Session
		inv.Session = &s
		if projectID == "" {
			projectID = s.Project
			if err := resolve(projectID); err != nil {
				return nil, nil, err
			}
		}
	}
	var verified *workflow.Session
	if c.RecordingSessionID != "" {
		// A call on no project records only into a session of the one
		// project a bound principal reaches.
		recordOn := projectID
		if recordOn == "" {
			recordOn = c.Principal.Project
		}
		v := recorder.Check(workflow.Check{Fingerprint: fp, Project: recordOn, Mutate: true})
		subject = v
		if !v.Verified() && recorder.Remembered() != "" {
			return nil, nil, errJudgeAgain
		}
		if !v.Verified() {
			rec.Binding = k.bind(rec, v)
			k.invalidClaims.Add(1)
			k.log.Warn("invalid recorder claim", "tool", tool.Name, "invocation", inv.ID,
				"claimed_session_id", rec.Binding.ClaimedSessionID, "reasons", v.Reasons, "err", recorder.Err())
			return nil, nil, failure.New(v.Kind(), "recording_session_id was refused: %s", v.Reasons[0]).
				WithDetail("session_binding", string(evidence.BindingInvalidClaim)).
				WithDetail("binding_reasons", v.Reasons)
		}
		s := v.Claim.Session
		verified = &s
	}
	if businessID != "" || verified != nil {
		rec.Binding = k.bind(rec, subject)
	}
	return inv, verified, nil
}

// bind is the record's binding for verdict v, keeping the recorder claim.
func (k *Kernel) bind(rec *Record, v workflow.ClaimVerdict) Binding {
	b := bindingOf(v)
	b.ClaimedSessionID = rec.Binding.ClaimedSessionID
	return b
}

// recordDenial records a guard denial as evidence in the guarded session.
func (k *Kernel) recordDenial(ctx context.Context, inv *Invocation, id string) {
	if err := k.sessions.RecordDenial(context.WithoutCancel(ctx), id, workflow.Event{
		Kind: workflow.EventGuardDenied, Tool: inv.Tool, InvocationID: inv.ID,
		Role: workflow.RoleBusiness, Outcome: workflow.OutcomeDenied,
		ErrorKind: string(failure.SessionGuardDenied),
	}); err != nil {
		k.recordFailures.Add(1)
		k.log.Warn("record guard denial", "tool", inv.Tool, "err", err)
	}
}
