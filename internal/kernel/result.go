package kernel

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// seal completes the result and the record once the outcome is decided:
// the duration, the body exactly as sent and its digest, the error kind.
func (k *Kernel) seal(res *Result, rec *Record) {
	rec.Duration = k.now().Sub(rec.At)
	res.Duration = rec.Duration
	res.Project = rec.Project
	res.Body = encodeBody(*res)
	if res.Body != nil {
		rec.ResultSHA256 = digest(res.Body)
	}
	if res.Error != nil {
		rec.ErrorKind = string(res.Error.Kind)
	}
}

// writeEvidence gives rec to the evidence sink; a mutating call whose
// record was not written carries an evidence_gap warning.
func (k *Kernel) writeEvidence(ctx context.Context, rec Record, res *Result) {
	at, err := k.evidence(context.WithoutCancel(ctx), rec)
	if err == nil && res != nil {
		res.Evidence = at
	}
	if err != nil {
		k.evidenceFailures.Add(1)
		k.log.Warn("evidence record not written", "tool", rec.Tool, "invocation", rec.InvocationID, "err", err)
		if rec.Mutates && res != nil {
			res.Warnings = append(res.Warnings, Warning{Kind: failure.EvidenceGap,
				Message: "the evidence journal could not record this call (" + rec.InvocationID + "); its result above stands"})
		}
	}
}

func (k *Kernel) refuse(rec *Record, err error) Result {
	rec.Outcome = evidence.OutcomeRefused
	res := failed(err, false)
	res.Refused = true
	return res
}

// encodeBody returns the Body of res: {success, output, error} as compact
// JSON without HTML escaping, or nil when it cannot be encoded.
func encodeBody(res Result) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Success bool       `json:"success"`
		Output  any        `json:"output"`
		Error   *ErrorBody `json:"error,omitempty"`
	}{res.Success, res.Output, res.Error}); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func failed(err error, stateChanged bool) Result {
	kind := failure.KindOf(err)
	class := failure.ClassOf(kind)
	out := map[string]any{
		"failure_kind":  class.FailureKind,
		"recovery_kind": class.RecoveryKind,
		"state_changed": stateChanged,
	}
	detail := failure.DetailOf(err)
	for key, v := range detail {
		out[key] = v
	}
	res := Result{
		Success: false, Output: out, Error: &ErrorBody{Kind: kind, Message: failure.MessageOf(err)},
		FailureKind: class.FailureKind, RecoveryKind: class.RecoveryKind, StateChanged: stateChanged,
	}
	if kind == failure.EditConflict {
		res.ConflictKind, _ = detail["conflict_kind"].(string)
	}
	return res
}

// outcome is the call's Result and the record's outcome.
func (k *Kernel) outcome(tool *Tool, inv *Invocation, out any, runErr error, interrupted, cancelled bool, rec *Record) Result {
	var res Result
	switch {
	case cancelled:
		rec.Outcome = evidence.OutcomeUnknown
		res = failed(failure.New(failure.Cancelled, "the call was cancelled by its caller; its outcome is unknown"), tool.Mutates)
	case runErr == nil:
		rec.Outcome = evidence.OutcomeOK
		res = Result{Success: true, Output: out}
		if r, ok := out.(Replayer); ok {
			if rep := r.Replay(); rep.Replayed() {
				rec.ReplayOf, res.ReplayOf = rep.Of, rep.Of
			}
		}
	case interrupted:
		rec.Outcome = evidence.OutcomeUnknown
		res = failed(runErr, tool.Mutates)
	default:
		rec.Outcome = evidence.OutcomeFailed
		if failure.KindOf(runErr) == failure.Internal {
			k.log.Error("tool failed", "tool", tool.Name, "invocation", inv.ID, "err", runErr)
		}
		res = failed(runErr, false)
	}
	_, res.ChangedPaths, _, _ = inv.effects()
	res.DryRun = inv.isDryRun()
	return res
}
