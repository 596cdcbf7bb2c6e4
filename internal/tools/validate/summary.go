// validation_summary: the validation state of a session, running nothing.

package validate

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// SummaryInput is the input of validation_summary.
type SummaryInput struct {
	kernel.RequiredSessionRef
	kernel.OptionalProjectRef
}

// SummaryOutput is the result of validation_summary.
type SummaryOutput struct {
	SessionID string `json:"session_id"`
	workflow.ValidationState
	// EvidenceComplete is false when the session's ledger dropped events,
	// so older validation evidence may be missing.
	EvidenceComplete bool `json:"evidence_complete"`
}

func (t *Tools) summary(ctx context.Context, inv *kernel.Invocation, in SummaryInput) (SummaryOutput, error) {
	// Terminal background validations are already evidence: the jobs
	// hook (Evidence) recorded them when they ended.
	sess, err := t.Sessions.Get(ctx, in.SessionID)
	if err != nil {
		return SummaryOutput{}, err
	}
	evs, err := t.Sessions.Store().Events(ctx, in.SessionID, 0)
	if err != nil {
		return SummaryOutput{}, err
	}
	return SummaryOutput{SessionID: sess.ID, ValidationState: workflow.SummarizeValidation(evs), EvidenceComplete: !sess.RetentionTruncated}, nil
}
