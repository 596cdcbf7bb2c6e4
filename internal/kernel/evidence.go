package kernel

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Binding is the evidence state of the sessions a call named, in the
// journal's vocabulary: verified (every named session matched the store;
// Verified holds the store's values of the recorder, else of the business
// session), sessionless (no session named), invalid_claim (a named session
// failed; every failing reason of that session is listed), or unknown (the
// call was refused before any claim was checked). The claim is kept apart
// from the verified values and is never corrected.
type Binding struct {
	State   evidence.Binding
	Reasons []evidence.Reason
	// ClaimedSessionID is the recording_session_id as the caller sent it
	// (bounded, credentials redacted), empty when none was sent.
	ClaimedSessionID string
	// Verified is copied from the store, only when State is verified.
	Verified evidence.Verified
	// CheckedKeys were compared against the session store; SkippedKeys
	// were not (not applicable, or the check stopped earlier).
	CheckedKeys []evidence.CheckKey
	SkippedKeys []evidence.CheckKey
	// SessionDigest is the hex SHA-256 of the session record as read at
	// check time ("" when none was read).
	SessionDigest string
}

// notChecked is the binding of a call refused before its claims were
// checked.
var notChecked = Binding{State: evidence.BindingUnknown, Reasons: []evidence.Reason{evidence.ReasonNotChecked}}

// sessionless is the binding of a call that named no session.
var sessionless = Binding{State: evidence.BindingSessionless, Reasons: []evidence.Reason{evidence.ReasonNoRecorderRequested}}

// bindingOf is the binding a verdict supports.
func bindingOf(v workflow.ClaimVerdict) Binding {
	b := Binding{CheckedKeys: v.Checked, SkippedKeys: v.Skipped}
	if v.Claim.Found() {
		b.SessionDigest = sessionDigest(v.Claim.Session)
	}
	if !v.Verified() {
		b.State, b.Reasons = evidence.BindingInvalidClaim, v.Reasons
		return b
	}
	s := v.Claim.Session
	b.State, b.Reasons = evidence.BindingVerified, []evidence.Reason{evidence.ReasonStoreMatch}
	b.Verified = evidence.Verified{SessionID: s.ID, Project: s.Project, Authority: s.OwnerFingerprint, Lifecycle: string(s.Lifecycle)}
	return b
}

// Record is one kernel invocation as the evidence journal receives it. It
// holds digests, never arguments or results.
type Record struct {
	InvocationID  string
	At            time.Time
	Tool          string
	Source        Source
	ProtocolEra   string
	PrincipalKind string
	ClientWindow  string
	ClientName    string
	UserAgent     string
	Project       string
	// BusinessSessionID is the session_id argument as decoded (bounded,
	// credentials redacted; "" when none, or when the arguments did not
	// decode).
	BusinessSessionID string
	// Mutates is true for tools whose record must be durable before the
	// result is returned.
	Mutates      bool
	Binding      Binding
	Outcome      evidence.Outcome
	ErrorKind    string
	Duration     time.Duration
	ArgsSHA256   string
	ResultSHA256 string
	// ReplayOf is, for a successful call its tool's domain decided was an
	// idempotent replay (see Replayer), the id of the original effect it
	// returned; "" for every other call.
	ReplayOf string
}

// EvidenceSink receives one Record per invocation, including refused ones,
// before the result is returned. For a Mutates record it must return only
// once the record is durable; an error is reported in the result as an
// evidence_gap warning (the tool's own result is unchanged). Other records
// may be written later; their failures are the sink's to count. It
// reports where the record was journaled when it appended it before
// returning.
type EvidenceSink func(ctx context.Context, r Record) (Appended, error)

// Appended is where an evidence record was journaled: Known is true when
// the sink appended it before returning, and Index is then its leaf
// index; a record queued for the journal (the outbox, reads behind their
// response) is not Known.
type Appended struct {
	Index uint64
	Known bool
}

// An Outbox carries the evidence record of a call recorded in a session in
// the transaction of the call's tool_call_finished event (the workflow
// ledger's evidence outbox), from where the journal takes it; see
// docs/decisions/0025-one-commit-per-acknowledgement.md.
type Outbox interface {
	// Encode returns the bytes stored for r, or an error when r cannot be
	// journaled (the record then goes to the EvidenceSink, which reports
	// the same error).
	Encode(r Record) ([]byte, error)
	// Stored is called after a row was written or queued, to wake the
	// journal's pump. It must not block.
	Stored()
}
