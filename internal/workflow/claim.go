package workflow

import (
	"context"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// Check is what a caller needs from a claimed session.
type Check struct {
	// Fingerprint is the caller's authority-group fingerprint.
	Fingerprint string
	// Project is the resolved request project; empty skips the equality
	// check (the caller then takes the session's project).
	Project string
	// Mutate requires an active session.
	Mutate bool
	// Write requires a mode that permits writes and shells (the guard).
	Write bool
}

type claimState int

const (
	claimMalformed claimState = iota
	claimNotFound
	claimUnreadable
	claimFound
)

// A Claim is one read of a claimed session id: the id as given and what
// the store held for it at that moment. Every check of the same id in one
// call judges this one read.
type Claim struct {
	// ID is the id as the caller gave it.
	ID string
	// Session is the stored session; zero unless Found.
	Session Session
	state   claimState
	err     error
	// remembered is the stored header a RememberedClaim was taken from
	// ("" for a claim that read the store).
	remembered string
}

// Remembered is the stored header (JSON) a RememberedClaim was judged
// on, to be passed as CallWrite.Claimed; "" for a claim read from the
// store.
func (c Claim) Remembered() string { return c.remembered }

// Found reports whether the store held the claimed session.
func (c Claim) Found() bool { return c.state == claimFound }

// Err is the store error of an unreadable claim (nil otherwise).
func (c Claim) Err() error { return c.err }

// ReadClaim parses id and, when it is well formed, reads it from the store
// once. It never fails: a store error is kept in the Claim and judged as
// store_unavailable.
func (s *Service) ReadClaim(ctx context.Context, id string) Claim {
	c := Claim{ID: id}
	if _, err := ParseSessionID(id); err != nil {
		return c
	}
	get := s.store.Get
	// A claim depends only on what a behind write never changes
	// (lifecycle, owner, project, mode): it need not wait for one.
	if c, ok := s.store.(interface {
		GetCommitted(context.Context, string) (Session, error)
	}); ok {
		get = c.GetCommitted
	}
	sess, err := get(ctx, id)
	switch {
	case failure.Is(err, failure.UnknownSessionID):
		c.state = claimNotFound
	case err != nil:
		c.state, c.err = claimUnreadable, err
	default:
		c.state, c.Session = claimFound, sess
	}
	return c
}

// RememberedClaim is ReadClaim from the header the store last read or
// wrote for id, without reading the store, when the store remembers one
// (false otherwise). That header may have changed since: a claim judged
// on it holds only once a write given Remembered as CallWrite.Claimed
// succeeds (it fails with ErrClaimChanged otherwise), and a claim it
// refuses must be read again before the refusal stands.
func (s *Service) RememberedClaim(id string) (Claim, bool) {
	r, ok := s.store.(interface {
		Remembered(string) (Session, string, bool)
	})
	if !ok {
		return Claim{}, false
	}
	if _, err := ParseSessionID(id); err != nil {
		return Claim{}, false
	}
	sess, hdr, ok := r.Remembered(id)
	if !ok || hdr == "" {
		return Claim{}, false
	}
	return Claim{ID: id, Session: sess, state: claimFound, remembered: hdr}, true
}

// A ClaimVerdict is the one judgement of a Claim under a Check: every failing
// reason in a fixed order (none when verified), and which keys were
// compared with the store and which were not.
type ClaimVerdict struct {
	Claim   Claim
	Reasons []evidence.Reason
	Checked []evidence.CheckKey
	Skipped []evidence.CheckKey
}

// Verified reports whether every checked key matched.
func (v ClaimVerdict) Verified() bool { return len(v.Reasons) == 0 }

// Check judges the claim. A malformed id is compared with nothing; an
// unregistered or unreadable one only by registration. The project is
// compared only when the check names one, the lifecycle only for a
// mutating use, and the guard only for a write.
func (c Claim) Check(chk Check) ClaimVerdict {
	v := ClaimVerdict{Claim: c}
	all := []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyProject, evidence.KeyLifecycle, evidence.KeyGuard}
	switch c.state {
	case claimMalformed:
		v.Reasons, v.Skipped = []evidence.Reason{evidence.ReasonMalformedSessionID}, all
		return v
	case claimNotFound:
		v.Reasons = []evidence.Reason{evidence.ReasonNotRegistered}
		v.Checked, v.Skipped = all[:1], all[1:]
		return v
	case claimUnreadable:
		v.Reasons = []evidence.Reason{evidence.ReasonStoreUnavailable}
		v.Checked, v.Skipped = all[:1], all[1:]
		return v
	}
	s := c.Session
	v.Checked = []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority}
	key := func(k evidence.CheckKey, applies, fails bool, r evidence.Reason) {
		if !applies {
			v.Skipped = append(v.Skipped, k)
			return
		}
		v.Checked = append(v.Checked, k)
		if fails {
			v.Reasons = append(v.Reasons, r)
		}
	}
	key(evidence.KeyLifecycle, chk.Mutate, !s.Mutable(), evidence.ReasonSessionClosed)
	if s.OwnerFingerprint != chk.Fingerprint {
		v.Reasons = append(v.Reasons, evidence.ReasonAuthorityMismatch)
	}
	key(evidence.KeyProject, chk.Project != "", s.Project != chk.Project, evidence.ReasonProjectMismatch)
	key(evidence.KeyGuard, chk.Write, s.Mode == ModeReadOnly, evidence.ReasonGuardDenied)
	return v
}

// Kind is the one error kind a caller sees for the verdict's reasons (""
// when verified). Authority is reported before project, lifecycle and
// guard so that a foreign session's state is never disclosed.
func (v ClaimVerdict) Kind() failure.Kind {
	order := []struct {
		r evidence.Reason
		k failure.Kind
	}{
		{evidence.ReasonMalformedSessionID, failure.InvalidSessionID},
		{evidence.ReasonNotRegistered, failure.UnknownSessionID},
		{evidence.ReasonStoreUnavailable, failure.Unavailable},
		{evidence.ReasonAuthorityMismatch, failure.SessionAuthorityDenied},
		{evidence.ReasonProjectMismatch, failure.SessionProjectMismatch},
		{evidence.ReasonSessionClosed, failure.SessionClosed},
		{evidence.ReasonGuardDenied, failure.SessionGuardDenied},
	}
	for _, o := range order {
		for _, r := range v.Reasons {
			if r == o.r {
				return o.k
			}
		}
	}
	return ""
}

// Error returns the refusal of a failed verdict as a *failure.Error of
// Kind, with the failing reasons as detail binding_reasons; nil when
// verified.
func (v ClaimVerdict) Error() error {
	if v.Verified() {
		return nil
	}
	k := v.Kind()
	reasons := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		reasons[i] = string(r)
	}
	var err *failure.Error
	if k == failure.Unavailable {
		err = failure.Wrap(k, v.Claim.err, "session store unavailable")
	} else {
		err = failure.New(k, "%s", reasonMessage(k, v.Claim.ID))
	}
	return err.WithDetail("session_binding", string(evidence.BindingInvalidClaim)).WithDetail("binding_reasons", reasons)
}

func reasonMessage(k failure.Kind, id string) string {
	switch k {
	case failure.InvalidSessionID:
		return "session id is not of the form wc_sess_<32 lowercase hex>"
	case failure.UnknownSessionID:
		return "no Workflow Session " + id + " exists"
	case failure.SessionAuthorityDenied:
		return "session " + id + " belongs to another authority group"
	case failure.SessionProjectMismatch:
		return "session " + id + " is bound to a different project"
	case failure.SessionClosed:
		return "session " + id + " is closed; start a new session with work_on_project"
	case failure.SessionGuardDenied:
		return "session " + id + " is read_only: writes and shells are denied"
	}
	return string(k)
}
