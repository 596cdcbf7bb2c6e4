package app

import (
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestRecoveredRecords: one valid record per invocation, claiming only the
// sessions its started events name, with the binding unknown and nothing
// the ledger does not know.
func TestRecoveredRecords(t *testing.T) {
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec, biz, other := "wc_sess_"+hex32('a'), "wc_sess_"+hex32('b'), "wc_sess_"+hex32('c')
	calls := []workflow.OpenCall{
		{SessionID: rec, Project: "agent:local:a", CallID: "call_1", InvocationID: "inv_1", Tool: "apply_patch", Role: workflow.RoleRecorder, StartedAt: t1.Add(time.Millisecond)},
		{SessionID: biz, Project: "agent:local:b", CallID: "call_2", InvocationID: "inv_1", Tool: "apply_patch", Role: workflow.RoleBusiness, StartedAt: t1},
		{SessionID: other, Project: "agent:local:c", CallID: "call_3", InvocationID: "inv_2", Tool: "run_process", Role: workflow.RoleRecorder, StartedAt: t1},
	}
	got := recoveredRecords(calls)
	if len(got) != 2 {
		t.Fatalf("%d records for 2 invocations", len(got))
	}
	for _, r := range got {
		if err := r.Validate(); err != nil {
			t.Errorf("record %s: %v", r.InvocationID, err)
		}
		if r.Binding != evidence.BindingUnknown || r.Outcome != evidence.OutcomeUnknown || r.ErrorKind != "outcome_unknown" ||
			r.ArgumentsDigest != "" || r.ResultDigest != "" || r.Claim.PrincipalKind != "" || (r.Verified != evidence.Verified{}) {
			t.Errorf("record %s says more than the ledger knows: %+v", r.InvocationID, r)
		}
	}
	if c := got[0].Claim; got[0].InvocationID != "inv_1" || c.RecordingSessionID != rec || c.BusinessSessionID != biz ||
		c.Project != "agent:local:b" || !got[0].At.Equal(t1) {
		t.Errorf("inv_1 record %+v", got[0])
	}
	if c := got[1].Claim; got[1].InvocationID != "inv_2" || c.RecordingSessionID != other || c.BusinessSessionID != "" || c.Project != "" {
		t.Errorf("a recorder-only call claims a project or business session: %+v", got[1])
	}
}

func hex32(c byte) string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
