package app

import (
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/redact"
)

// TestEvidenceRecordMapping: every binding the kernel produces maps to a
// journal record that passes the journal's validation, with the claim
// kept and verified values only when verified.
func TestEvidenceRecordMapping(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	base := kernel.Record{InvocationID: "inv_1", At: time.Unix(1, 0), Tool: "read_files", Source: kernel.SourceMCP,
		ProtocolEra: "stateless_2026", PrincipalKind: "api_token", ClientWindow: digest, Project: "agent:local:p",
		Outcome: kernel.OutcomeOK, ArgsSHA256: digest, ResultSHA256: digest}
	cases := []struct {
		name    string
		binding kernel.Binding
		outcome kernel.Outcome
		want    evidence.Binding
		reasons string
	}{
		{"verified", kernel.Binding{State: kernel.Verified, Reasons: []string{"runtime_session_store_match"}, ClaimedSessionID: "wc_sess_a",
			VerifiedSessionID: "wc_sess_a", VerifiedProject: "agent:local:p", VerifiedAuthority: "f", VerifiedLifecycle: "active",
			CheckedKeys: []string{"registration", "authority", "lifecycle", "project"}, SkippedKeys: []string{"guard"}, SessionDigest: digest},
			kernel.OutcomeOK, evidence.BindingVerified, "runtime_session_store_match"},
		{"sessionless", kernel.Binding{State: kernel.Sessionless, Reasons: []string{kernel.ReasonNoRecorderRequested}},
			kernel.OutcomeOK, evidence.BindingSessionless, "no_recorder_requested"},
		{"invalid claim", kernel.Binding{State: kernel.InvalidClaim, Reasons: []string{"authority_mismatch", "mode_denied"}, ClaimedSessionID: "wc_sess_b",
			CheckedKeys: []string{"registration"}}, kernel.OutcomeRefused, evidence.BindingInvalidClaim, "authority_mismatch,guard_denied"},
		{"claim never checked", kernel.Binding{State: kernel.InvalidClaim, ClaimedSessionID: "wc_sess_c"},
			kernel.OutcomeRefused, evidence.BindingUnknown, "not_checked"},
	}
	for _, c := range cases {
		r := base
		r.Binding, r.Outcome = c.binding, c.outcome
		got := evidenceRecord(r)
		if err := got.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var reasons []string
		for _, x := range got.Reasons {
			reasons = append(reasons, string(x))
		}
		if got.Binding != c.want || strings.Join(reasons, ",") != c.reasons || got.Claim.RecordingSessionID != c.binding.ClaimedSessionID ||
			(got.Verified != evidence.Verified{}) != (c.want == evidence.BindingVerified) || got.Source != evidence.SourceMCP {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

// TestEvidenceClaimRedacted: a credential sent as a session id is kept as
// negative evidence, but never written in the clear.
func TestEvidenceClaimRedacted(t *testing.T) {
	token := "wc_pat_" + strings.Repeat("S", 40)
	r := evidenceRecord(kernel.Record{InvocationID: "inv_1", At: time.Unix(1, 0), Tool: "read_files", Source: kernel.SourceREST,
		Outcome: kernel.OutcomeRefused, BusinessSessionID: token,
		Binding: kernel.Binding{State: kernel.InvalidClaim, Reasons: []string{"malformed_session_id"}, ClaimedSessionID: token}})
	if strings.Contains(r.Claim.RecordingSessionID+r.Claim.BusinessSessionID, token) ||
		!strings.Contains(r.Claim.RecordingSessionID, redact.Marker) || r.Validate() != nil {
		t.Fatalf("claim: %+v (%v)", r.Claim, r.Validate())
	}
}
