package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/console"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// EvidenceDB is the evidence journal's database file in the data directory
// (beside it: evidence.key, 0600, and evidence.pub).
const EvidenceDB = evidencedb.FileName

// evidenceSink writes the kernel's records of calls recorded in no
// session (a call recorded in one carries its record in the ledger's
// outbox itself, in the transaction of its finish). A mutating call's
// record is appended to the journal durably before its result is
// returned. A read-only call's record is queued behind the response into
// the same outbox (workflowdb.QueueRecord), numbered among the process's
// reads, so that one path carries the evidence of every read-only call:
// a lazy, gathered commit, journaled by the pump, waited for by every
// reader of the journal, and counted in unrecorded_reads_at_start when a
// kill -9 loses it (decision 0043).
type evidenceSink struct {
	journal Journal
	log     *slog.Logger
	// outbox is the pump that journals the outbox, set by startOutbox
	// before the kernel that calls record is built.
	outbox *outboxPump
	// failures counts records that could not be appended.
	failures atomic.Int64
}

func newEvidenceSink(a *App, j Journal) *evidenceSink {
	return &evidenceSink{journal: j, log: a.Log}
}

// record is the kernel.EvidenceSink: a mutating call's record is
// appended here, and its leaf index reported; a read-only call's is
// queued (its index is not known yet).
func (s *evidenceSink) record(ctx context.Context, r kernel.Record) (kernel.Appended, error) {
	rec := evidenceRecord(r)
	if r.Binding.State == evidence.BindingInvalidClaim {
		s.log.Warn("evidence: invalid session claim", "invocation", r.InvocationID, "tool", r.Tool,
			"source", r.Source, "claimed_session_id", r.Binding.ClaimedSessionID, "reasons", r.Binding.Reasons)
	}
	if !r.Mutates {
		body, err := s.outbox.Encode(r)
		if err == nil {
			err = s.outbox.wf.QueueRecord(context.WithoutCancel(ctx), body, func(err error) {
				if err != nil {
					s.failed(rec, err)
				}
			})
		}
		if err != nil {
			s.failed(rec, err)
			return kernel.Appended{}, err
		}
		s.outbox.Stored()
		return kernel.Appended{}, nil
	}
	e, err := s.journal.Append(ctx, rec)
	if err != nil {
		s.failed(rec, err)
		return kernel.Appended{}, err
	}
	return kernel.Appended{Index: e.Index, Known: true}, nil
}

// failed counts and logs a record that could not be stored.
func (s *evidenceSink) failed(rec evidence.Record, err error) {
	s.failures.Add(1)
	s.log.Error("evidence: append", "invocation", rec.InvocationID, "tool", rec.Tool, "err", err)
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
		Replayed:            r.ReplayOf != "",
		ReplayOf:            r.ReplayOf,
	}
	if out.Outcome == "" {
		out.Outcome = evidence.OutcomeUnknown
	}
	return out
}

// Journal is what the composition root uses of the evidence journal
// (evidencedb on SQLite): appends, the outbox it takes from the ledger,
// checkpoints and the per-session reads.
type Journal interface {
	evidence.Appender
	console.Journal
	EvidencePurger
	// ApplyOutbox appends the records of outbox items past the journal's
	// watermark, in order, in one transaction (durable: with an fsync).
	ApplyOutbox(ctx context.Context, items []evidence.OutboxItem, durable bool) (skipped []error, err error)
	// Watermarks returns the highest outbox seq applied and made durable.
	Watermarks() (applied, durable int64)
	// SyncOutbox makes every applied outbox record durable.
	SyncOutbox(ctx context.Context) error
	// SetBeforeRead installs fn, run before every read of the journal.
	SetBeforeRead(fn func(context.Context) error)
	Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error)
	Head(ctx context.Context) (evidence.Checkpoint, error)
	// Run signs periodic checkpoints until ctx is done.
	Run(ctx context.Context) error
	JournalID() string
	// Origin names the journal's checkpoints and signing key.
	Origin() string
	KeyID() string
	Close() error
}

// openEvidence opens the data directory's evidence journal and starts its
// periodic checkpoints (stopped by Close).
func openEvidence(ctx context.Context, a *App) (Journal, error) {
	opts := evidence.Options{
		OnError: func(err error) { a.Log.Warn("evidence: periodic checkpoint", "err", err) },
		Log:     a.Log,
	}
	var j Journal
	var err error
	if a.Stores.db != nil {
		j, err = evidencepg.Open(ctx, a.Stores.db, a.Config.evidenceKeyFile(), opts)
	} else {
		j, err = evidencedb.Open(ctx, a.Config.DataDir, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("evidence journal: %w", err)
	}
	return j, nil
}

// Outbox pump bounds (decision 0025).
const (
	// outboxBatch is the most outbox rows one journal transaction takes.
	outboxBatch = 256
	// outboxLazyRows is how many rows the journal may hold committed
	// without an fsync of evidence.db before a batch is made durable (the
	// outbox keeps every one of them durably until then).
	outboxLazyRows = 1024
	// outboxSyncEvery is how often an idle pump makes the applied rows
	// durable in evidence.db, so the outbox can be trimmed.
	outboxSyncEvery = time.Second
	// outboxGather is how long the pump lets rows gather after a wake
	// before it takes them, so that one journal transaction carries many
	// calls instead of one each (a reader of the journal never waits for
	// it: it flushes the outbox itself).
	outboxGather = 20 * time.Millisecond
)

// outboxPump moves the evidence records that calls recorded in a session
// stored in workflow.db's outbox (with their tool_call_finished events)
// into the evidence journal, in outbox order, a batch per journal
// transaction. It is the kernel's Outbox.
type outboxPump struct {
	wf   Ledger
	j    Journal
	log  *slog.Logger
	sink *evidenceSink
	wake chan struct{}

	mu      sync.Mutex // one pass at a time; guards taken and trimmed
	taken   int64      // highest outbox seq handed to the journal
	trimmed int64      // highest seq whose trim was queued

	stop context.CancelFunc
	done chan struct{}
}

func newOutboxPump(a *App, sink *evidenceSink) *outboxPump {
	applied, _ := a.Evidence.Watermarks()
	return &outboxPump{wf: a.Stores.Workflow, j: a.Evidence, log: a.Log, sink: sink,
		wake: make(chan struct{}, 1), taken: applied}
}

// Encode implements kernel.Outbox: the journal's record as JSON, validated
// so that only records the journal accepts enter the outbox.
func (p *outboxPump) Encode(r kernel.Record) ([]byte, error) {
	rec := evidenceRecord(r)
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(rec)
}

// Stored implements kernel.Outbox.
func (p *outboxPump) Stored() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// start runs the pump until close.
func (p *outboxPump) start() {
	ctx, stop := context.WithCancel(context.Background())
	p.stop, p.done = stop, make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(outboxSyncEvery)
		defer t.Stop()
		gather := time.NewTimer(outboxGather)
		gather.Stop()
		for {
			select {
			case <-ctx.Done():
				gather.Stop()
				return
			case <-p.wake:
				gather.Reset(outboxGather)
				// Wakes during the gathering are absorbed here.
				select {
				case <-ctx.Done():
					gather.Stop()
					return
				case <-gather.C:
				}
				p.report(p.pass(ctx, false))
			case <-t.C:
				p.report(p.pass(ctx, true))
			}
		}
	}()
}

func (p *outboxPump) report(n int, err error) {
	if err != nil {
		p.log.Warn("evidence: outbox not applied yet (retried at the next call or tick)", "err", err)
	}
}

// flush is the journal's BeforeRead: every write queued in workflow.db so
// far (behind writes of read-only calls included) is committed, and every
// outbox row is in the journal.
func (p *outboxPump) flush(ctx context.Context) error {
	if err := p.wf.Flush(ctx); err != nil {
		return err
	}
	_, err := p.pass(ctx, false)
	return err
}

// close stops the pump and applies the rows left, durably.
func (p *outboxPump) close(ctx context.Context) error {
	if p.stop != nil {
		p.stop()
		<-p.done
	}
	if err := p.wf.Flush(ctx); err != nil {
		return err
	}
	_, err := p.pass(ctx, true)
	return err
}

// pass applies every outbox row above the rows taken so far and returns
// how many it took. With durable, the journal's copy is made durable at
// the end; otherwise a batch is durable only when outboxLazyRows are
// applied without an fsync. Rows the journal holds durably are then
// trimmed from the outbox (behind, without a commit of their own).
func (p *outboxPump) pass(ctx context.Context, durable bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for {
		rows, err := p.wf.Outbox(ctx, p.taken, outboxBatch)
		if err != nil {
			return n, err
		}
		if len(rows) == 0 {
			break
		}
		applied, synced := p.j.Watermarks()
		lazyRows := applied - synced + int64(len(rows))
		skipped, err := p.j.ApplyOutbox(ctx, outboxItems(rows), lazyRows >= outboxLazyRows)
		if err != nil {
			return n, err
		}
		for _, e := range skipped {
			p.sink.failures.Add(1)
			p.log.Error("evidence: outbox row not journaled", "err", e)
		}
		p.taken = rows[len(rows)-1].Seq
		n += len(rows)
	}
	if durable {
		if err := p.j.SyncOutbox(ctx); err != nil {
			return n, err
		}
	}
	if _, synced := p.j.Watermarks(); synced > p.trimmed {
		if err := p.wf.TrimOutbox(ctx, synced); err != nil {
			return n, err
		}
		p.trimmed = synced
	}
	return n, nil
}

// outboxItems decodes outbox rows into the journal's items, in order. A
// body that does not decode is left a zero record, which the journal
// skips as invalid and reports.
func outboxItems(rows []workflowdb.OutboxRow) []evidencedb.OutboxItem {
	items := make([]evidencedb.OutboxItem, len(rows))
	for i, r := range rows {
		items[i].Seq = r.Seq
		if err := json.Unmarshal(r.Body, &items[i].Record); err != nil {
			items[i].Record = evidence.Record{}
		}
	}
	return items
}

// startOutbox applies the outbox rows a previous process left (replay),
// before any call is admitted, and starts the pump.
func (a *App) startOutbox(ctx context.Context) error {
	a.outbox = newOutboxPump(a, a.evSink)
	a.evSink.outbox = a.outbox
	a.Evidence.SetBeforeRead(a.outbox.flush)
	n, err := a.outbox.pass(ctx, true)
	if err != nil {
		return fmt.Errorf("evidence outbox: %w", err)
	}
	if n > 0 {
		a.Log.Info("start: evidence records replayed from the workflow ledger's outbox", "records", n)
	}
	a.outbox.start()
	return nil
}
