package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// EvidenceDB is the evidence journal's database file in the data directory
// (beside it: evidence.key, 0600, and evidence.pub).
const EvidenceDB = evidencedb.FileName

// maxAsyncEvidence bounds the evidence appends of read-only calls in
// flight at once; beyond it a read-only call appends synchronously.
const maxAsyncEvidence = 256

// evidenceSink writes the kernel's invocation records to the journal. A
// mutating call's record is durable before its result is returned (the
// append shares group commits with every other append); a read-only
// call's record is appended concurrently with the response, and Close
// waits for those appends.
type evidenceSink struct {
	journal *evidencedb.Journal
	log     *slog.Logger
	slots   chan struct{}
	pending sync.WaitGroup
	// failures counts records that could not be appended.
	failures atomic.Int64
}

func newEvidenceSink(a *App, j *evidencedb.Journal) *evidenceSink {
	return &evidenceSink{journal: j, log: a.Log, slots: make(chan struct{}, maxAsyncEvidence)}
}

// record is the kernel.EvidenceSink.
func (s *evidenceSink) record(ctx context.Context, r kernel.Record) error {
	rec := evidenceRecord(r)
	if r.Binding.State == evidence.BindingInvalidClaim {
		s.log.Warn("evidence: invalid session claim", "invocation", r.InvocationID, "tool", r.Tool,
			"source", r.Source, "claimed_session_id", r.Binding.ClaimedSessionID, "reasons", r.Binding.Reasons)
	}
	if !r.Mutates {
		select {
		case s.slots <- struct{}{}:
			s.pending.Add(1)
			go func() {
				defer func() { <-s.slots; s.pending.Done() }()
				s.append(context.WithoutCancel(ctx), rec)
			}()
			return nil
		default:
		}
	}
	return s.append(ctx, rec)
}

func (s *evidenceSink) append(ctx context.Context, rec evidence.Record) error {
	if _, err := s.journal.Append(ctx, rec); err != nil {
		s.failures.Add(1)
		s.log.Error("evidence: append", "invocation", rec.InvocationID, "tool", rec.Tool, "err", err)
		return err
	}
	return nil
}

// recordRecovered writes one evidence record per invocation among calls
// that recovery at start is about to finish as outcome_unknown. A record
// that exists already (an earlier start wrote it, or the call's own record
// was written though its ledger finish was not) is kept as it is.
func (s *evidenceSink) recordRecovered(ctx context.Context, calls []workflow.OpenCall) {
	for _, rec := range recoveredRecords(calls) {
		if _, err := s.journal.Append(ctx, rec); err != nil && !failure.Is(err, failure.Conflict) {
			s.failures.Add(1)
			s.log.Error("evidence: record of a recovered call", "invocation", rec.InvocationID, "tool", rec.Tool, "err", err)
		}
	}
}

// recoveredRecords builds the evidence record of each invocation among
// calls, in order of first appearance. It says only what the ledger's
// started events know: the invocation id, tool, start time, and the
// sessions the call was recorded in as recorder (the recording_session_id
// claim) and as business session (with the session's project). The
// binding is unknown (not_checked): the checks made when the call ran were
// never recorded. Source is internal (the runtime wrote the record; the
// transport the call came by is not in the ledger); principal, client
// window, arguments digest, duration and result are unknown and empty.
func recoveredRecords(calls []workflow.OpenCall) []evidence.Record {
	var out []evidence.Record
	at := map[string]int{}
	for _, c := range calls {
		i, ok := at[c.InvocationID]
		if !ok {
			i = len(out)
			at[c.InvocationID] = i
			out = append(out, evidence.Record{
				InvocationID: c.InvocationID, At: c.StartedAt, Tool: c.Tool, Source: evidence.SourceInternal,
				Binding: evidence.BindingUnknown, Reasons: []evidence.Reason{evidence.ReasonNotChecked},
				Outcome: evidence.OutcomeUnknown, ErrorKind: string(failure.OutcomeUnknown),
			})
		}
		r := &out[i]
		if c.StartedAt.Before(r.At) {
			r.At = c.StartedAt
		}
		switch c.Role {
		case workflow.RoleRecorder:
			r.Claim.RecordingSessionID = c.SessionID
		case workflow.RoleBusiness:
			r.Claim.BusinessSessionID, r.Claim.Project = c.SessionID, c.Project
		}
	}
	return out
}

// wait blocks until every asynchronous append has finished.
func (s *evidenceSink) wait() { s.pending.Wait() }

// evidenceRecord maps the kernel's record to the journal's. The kernel
// decided the binding in the journal's own vocabulary and already bounded
// and redacted the claims; this only moves fields.
func evidenceRecord(r kernel.Record) evidence.Record {
	out := evidence.Record{
		InvocationID: r.InvocationID, At: r.At, Tool: r.Tool, Source: evidence.Source(r.Source),
		TransportEra: r.ProtocolEra,
		Claim: evidence.Claim{
			RecordingSessionID: r.Binding.ClaimedSessionID, BusinessSessionID: r.BusinessSessionID,
			Project: r.Project, PrincipalKind: r.PrincipalKind, ClientWindow: r.ClientWindow,
		},
		Verified:            r.Binding.Verified,
		Binding:             r.Binding.State,
		Reasons:             r.Binding.Reasons,
		CheckedKeys:         r.Binding.CheckedKeys,
		SkippedKeys:         r.Binding.SkippedKeys,
		SessionRecordDigest: r.Binding.SessionDigest,
		Outcome:             r.Outcome,
		ErrorKind:           r.ErrorKind,
		DurationMS:          r.Duration.Milliseconds(),
		ArgumentsDigest:     r.ArgsSHA256,
		ResultDigest:        r.ResultSHA256,
	}
	if out.Outcome == "" {
		out.Outcome = evidence.OutcomeUnknown
	}
	return out
}

// openEvidence opens the data directory's evidence journal and starts its
// periodic checkpoints (stopped by Close).
func openEvidence(ctx context.Context, a *App) (*evidencedb.Journal, error) {
	j, err := evidencedb.Open(ctx, a.Config.DataDir, evidence.Options{
		OnError: func(err error) { a.Log.Warn("evidence: periodic checkpoint", "err", err) },
		Log:     a.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("evidence journal: %w", err)
	}
	return j, nil
}
