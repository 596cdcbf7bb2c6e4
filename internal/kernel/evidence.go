package kernel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// BindingState is the evidence state of a call's recorder claim.
type BindingState string

// Binding states.
const (
	Verified     BindingState = "verified"
	Sessionless  BindingState = "sessionless"
	InvalidClaim BindingState = "invalid_claim"
)

// ReasonNoRecorderRequested is the runtime-chosen reason of a sessionless
// binding: the call carried no recording_session_id.
const ReasonNoRecorderRequested = "no_recorder_requested"

// Binding is the verified evidence state of a recorder claim. The claim is
// kept separate from the verified values; an invalid claim is preserved,
// never corrected.
type Binding struct {
	State   BindingState `json:"session_binding"`
	Reasons []string     `json:"binding_reasons"`
	// ClaimedSessionID is the recording_session_id as the caller sent it
	// (bounded), empty when none was sent.
	ClaimedSessionID string `json:"claimed_session_id,omitempty"`
	// VerifiedSessionID, VerifiedProject, VerifiedAuthority (the owner's
	// authority fingerprint) and VerifiedLifecycle are copied from the
	// store, only when State is Verified.
	VerifiedSessionID string `json:"verified_session_id,omitempty"`
	VerifiedProject   string `json:"verified_project,omitempty"`
	VerifiedAuthority string `json:"verified_authority,omitempty"`
	VerifiedLifecycle string `json:"verified_lifecycle,omitempty"`
	// CheckedKeys were compared against the session store; SkippedKeys
	// were not (not applicable, or the check stopped earlier). Both are
	// empty when no claim was checked.
	CheckedKeys []string `json:"checked_keys,omitempty"`
	SkippedKeys []string `json:"skipped_keys,omitempty"`
	// SessionDigest is the hex SHA-256 of the session record as read at
	// check time ("" when none was read).
	SessionDigest string `json:"session_digest,omitempty"`
}

// Check keys of a recorder verification.
const (
	KeyRegistration = "registration"
	KeyAuthority    = "authority"
	KeyProject      = "project"
	KeyLifecycle    = "lifecycle"
	KeyGuard        = "guard"
)

// Outcome of an invocation as evidence sees it.
type Outcome string

// Invocation outcomes.
const (
	OutcomeOK      Outcome = "ok"
	OutcomeFailed  Outcome = "failed"
	OutcomeRefused Outcome = "refused"
	OutcomeUnknown Outcome = "unknown"
)

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
	// BusinessSessionID is the session_id argument as decoded ("" when
	// none, or when the arguments did not decode).
	BusinessSessionID string
	// Mutates is true for tools whose record must be durable before the
	// result is returned.
	Mutates      bool
	Binding      Binding
	Outcome      Outcome
	ErrorKind    string
	Duration     time.Duration
	ArgsSHA256   string
	ResultSHA256 string
}

// EvidenceSink receives one Record per invocation, including refused ones,
// before the result is returned. For a Mutates record it must return only
// once the record is durable; an error is reported in the result as an
// evidence_gap warning (the tool's own result is unchanged). Other records
// may be written later; their failures are the sink's to count.
type EvidenceSink func(ctx context.Context, r Record) error

func reasonsOf(rs []workflow.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// checkedKeys splits the recorder check keys into those compared against
// the store and those skipped, given the failing reasons: a malformed id
// is compared with nothing, an unregistered one (or an unreadable store)
// only by registration; the project is compared only when one was
// resolved; the guard (session mode) is not part of a recorder check.
func checkedKeys(reasons []workflow.Reason, hasProject bool) (checked, skipped []string) {
	for _, r := range reasons {
		switch r {
		case workflow.ReasonMalformed:
			return nil, []string{KeyRegistration, KeyAuthority, KeyProject, KeyLifecycle, KeyGuard}
		case workflow.ReasonNotRegistered, workflow.ReasonStoreUnavailable:
			return []string{KeyRegistration}, []string{KeyAuthority, KeyProject, KeyLifecycle, KeyGuard}
		}
	}
	checked = []string{KeyRegistration, KeyAuthority, KeyLifecycle}
	skipped = []string{KeyGuard}
	if hasProject {
		checked = append(checked, KeyProject)
	} else {
		skipped = append(skipped, KeyProject)
	}
	return checked, skipped
}

// sessionDigest is the hex SHA-256 of the session record as read.
func sessionDigest(s workflow.Session) string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return digest(b)
}
