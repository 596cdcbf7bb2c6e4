package kernel

import (
	"context"
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
	// VerifiedSessionID and VerifiedProject are copied from the store, only
	// when State is Verified.
	VerifiedSessionID string `json:"verified_session_id,omitempty"`
	VerifiedProject   string `json:"verified_project,omitempty"`
}

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
	Binding       Binding
	Outcome       Outcome
	ErrorKind     string
	Duration      time.Duration
	ArgsSHA256    string
	ResultSHA256  string
}

// EvidenceSink receives one Record per invocation, including refused ones.
// It must not block for long and must not fail the call.
type EvidenceSink func(ctx context.Context, r Record)

func reasonsOf(rs []workflow.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}
