package workflowpg

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// maxEventRowsPerInsert is the most rows one INSERT of insertEvents binds:
// PostgreSQL binds at most 65,535 values per statement.
const maxEventRowsPerInsert = 65535 / workflowrow.EventArgCount

// A batch is one transaction of the writer: the sessions it locked, with
// their rows as its updates leave them; the writes queued to be sent
// together; and what its updates leave for its end: the evidence outbox
// rows to store, in order, and this process's newest committed read.
type batch struct {
	pgdb.Pipeline
	locked  map[string]sessionRow
	outbox  [][]byte
	readSeq int64
}

// sessionRow is what an update reads of a session's row: its header JSON
// (the exact bytes stored) and its retained event count.
type sessionRow struct {
	header   string
	retained int64
}

// lockSessions locks the rows of sessions ids, in id order (so that two
// replicas' batches never wait on each other in a cycle), and keeps what
// they hold in b.locked for the batch's updates, in one round trip. An id
// with no row is left out (its update refuses it).
func (b *batch) lockSessions(ctx context.Context, tx pgx.Tx, ids []string) error {
	b.locked = make(map[string]sessionRow, len(ids))
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := tx.Query(ctx, `SELECT session_id, header_json, retained FROM workflow.sessions
		WHERE session_id = ANY($1) ORDER BY session_id COLLATE "C" FOR UPDATE`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var r sessionRow
		if err := rows.Scan(&id, &r.header, &r.retained); err != nil {
			return err
		}
		b.locked[id] = r
	}
	return rows.Err()
}

// refusal wraps an update's refusal (fn's error, an invalid header, a
// changed claim, an unknown session): it is judged before the update
// writes anything, so a batch of writes goes on without it.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// refused returns the refusal inside err, or err.
func refused(err error) error {
	var r refusal
	if errors.As(err, &r) {
		return r.err
	}
	return err
}

// Create implements workflow.Store.
func (s *Store) Create(ctx context.Context, sess workflow.Session, events []workflow.Event) (workflow.Session, []workflow.Event, error) {
	var out []workflow.Event
	cp := sess
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		cp = sess
		evs, drop := workflow.Apply(&cp, events, s.now().UTC(), 0)
		if err := workflow.ValidateSession(cp); err != nil {
			return failure.New(failure.InvalidArguments, "invalid session: %v", err)
		}
		retained := int64(len(evs) - drop)
		tag, err := tx.Exec(ctx, `INSERT INTO workflow.sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session_id) DO NOTHING`,
			cp.ID, cp.Project, cp.OwnerFingerprint, string(cp.Lifecycle), cp.UpdatedAt.UnixNano(), retained, workflowrow.EncodeHeader(cp))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return failure.New(failure.Conflict, "session %s already exists", cp.ID)
		}
		p := &pgdb.Pipeline{}
		if _, err := s.writeEvents(ctx, tx, p, cp.ID, cp, evs, drop); err != nil {
			return err
		}
		out = evs
		return p.Flush(ctx, tx)
	})
	if err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	s.checks.Mark(cp.ID) // written validated
	return cp, out, nil
}

// Update implements workflow.Store.
func (s *Store) Update(ctx context.Context, id string, fn workflow.UpdateFunc) (workflow.Session, []workflow.Event, error) {
	var (
		outSess workflow.Session
		outEvs  []workflow.Event
	)
	err := s.direct(ctx, id, func(ctx context.Context, tx pgx.Tx, b *batch) error {
		return s.updateTx(ctx, tx, b, id, fn, "", nil, &outSess, &outEvs)
	})
	if err != nil {
		return workflow.Session{}, nil, err
	}
	return outSess, outEvs, nil
}

// AppendCall implements workflow.Store.
func (s *Store) AppendCall(ctx context.Context, id string, fn workflow.UpdateFunc, w workflow.CallWrite) error {
	if w.Behind {
		return s.appendBehind(ctx, id, fn, w)
	}
	return s.direct(ctx, id, func(ctx context.Context, tx pgx.Tx, b *batch) error {
		return s.updateTx(ctx, tx, b, id, fn, w.Claimed, w.Outbox, nil, nil)
	})
}

// direct runs one update of session id through the writer, behind every
// write queued before it (so that the session's events keep the order of
// the calls), and returns once its batch has committed. Writes queued
// while a commit runs share the next transaction, as the SQLite writer
// batches them: under load a recorded call costs a share of a commit,
// and the outbox head is locked once per batch, not once per call. A
// refusal is this write's outcome alone; a batch the database refused as
// a whole runs again write by write (writer.commit). When ctx ends before
// the batch has, the write may still commit: the error says so
// (outcome_unknown).
func (s *Store) direct(ctx context.Context, id string, write func(ctx context.Context, tx pgx.Tx, b *batch) error) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	var outcome error
	j := &job{write: write, then: func(err error) { outcome = err }}
	if err := s.w.enqueue(ctx, id, false, j, nil); err != nil {
		return err
	}
	select {
	case <-j.done:
		return outcome
	case <-ctx.Done():
		return failure.Wrap(failure.OutcomeUnknown, ctx.Err(), "the session write was queued and may still commit")
	}
}

// updateTx updates session id by fn in tx: the session row is locked
// (SELECT … FOR UPDATE, by the batch's lockSessions or here: an append of
// another replica to the session waits for this transaction, so each
// judges the header the other wrote and seqs, counters, retained and trim
// stay consistent), fn runs, its events are appended and the header
// stored, queued in b; outbox (when not nil) is left in b for the end of
// the transaction. claimed is CallWrite.Claimed, which the stored header
// must be (workflow.ErrClaimChanged otherwise). out and evsOut (when not
// nil) receive the session and the appended events. Refusals are
// returned as refusal, before anything is written.
func (s *Store) updateTx(ctx context.Context, tx pgx.Tx, b *batch, id string, fn workflow.UpdateFunc, claimed string, outbox []byte,
	out *workflow.Session, evsOut *[]workflow.Event) error {
	row, ok := b.locked[id]
	if !ok {
		err := tx.QueryRow(ctx, `SELECT header_json, retained FROM workflow.sessions WHERE session_id = $1 FOR UPDATE`, id).Scan(&row.header, &row.retained)
		if errors.Is(err, pgx.ErrNoRows) {
			return refusal{unknown(id)}
		}
		if err != nil {
			return err
		}
	}
	if claimed != "" && row.header != claimed {
		return refusal{workflow.ErrClaimChanged}
	}
	sess, err := workflowrow.DecodeHeader([]byte(row.header))
	if err != nil {
		// The first-use check moved malformed headers aside; one
		// appearing later is a store fault, not a caller error.
		return failure.New(failure.Unavailable, "session %s: %v", id, err)
	}
	events, err := fn(&sess)
	if err != nil {
		return refusal{err}
	}
	if err := workflow.ValidateSession(sess); err != nil {
		return refusal{failure.New(failure.InvalidArguments, "invalid session: %v", err)}
	}
	evs, drop := workflow.Apply(&sess, events, s.now().UTC(), int(row.retained))
	trimmed, err := s.writeEvents(ctx, tx, &b.Pipeline, id, sess, evs, drop)
	if err != nil {
		return err
	}
	row.retained += int64(len(evs)) - trimmed
	row.header = workflowrow.EncodeHeader(sess)
	b.Exec(`UPDATE workflow.sessions SET lifecycle = $1, updated_at = $2, retained = $3, header_json = $4 WHERE session_id = $5`,
		string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), row.retained, row.header, id)
	if b.locked == nil {
		b.locked = map[string]sessionRow{}
	}
	b.locked[id] = row
	if outbox != nil {
		b.outbox = append(b.outbox, outbox)
	}
	if out != nil {
		*out, *evsOut = sess, evs
	}
	return nil
}

// writeEvents queues in p the events an update of session id appends
// (sess is the header after them) and the open_calls that keep in step;
// when drop > 0 it sends them and trims the oldest events beyond
// TailLimit, returning the number of rows trimmed.
func (s *Store) writeEvents(ctx context.Context, tx pgx.Tx, p *pgdb.Pipeline, id string, sess workflow.Session, evs []workflow.Event, drop int) (int64, error) {
	insertEvents(p, id, evs)
	s.trackCalls(p, id, evs)
	if drop <= 0 {
		return 0, nil
	}
	if err := p.Flush(ctx, tx); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM workflow.events WHERE session_id = $1 AND seq <= $2`, id, sess.EventsObserved-workflow.TailLimit)
	return tag.RowsAffected(), err
}

// insertEvents queues evs for session id in multi-row INSERTs of at most
// maxEventRowsPerInsert rows each.
func insertEvents(p *pgdb.Pipeline, id string, evs []workflow.Event) {
	for len(evs) > 0 {
		n := min(len(evs), maxEventRowsPerInsert)
		var q strings.Builder
		q.WriteString(`INSERT INTO workflow.events (session_id, ` + workflowrow.EventColumns + `) VALUES `)
		args := make([]any, 0, n*workflowrow.EventArgCount)
		for i, e := range evs[:n] {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString("(")
			for j, v := range workflowrow.EventArgs(id, e) {
				if j > 0 {
					q.WriteString(",")
				}
				args = append(args, v)
				p := "$" + strconv.Itoa(len(args))
				if workflowrow.EventArgNullable(j) {
					p = "COALESCE(" + p + "::text,'')"
				}
				q.WriteString(p)
			}
			q.WriteString(")")
		}
		p.Exec(q.String(), args...)
		evs = evs[n:]
	}
}

// trackCalls queues the writes that keep open_calls in step with appended
// events: a started event opens its call (stamped with this instance) and
// a finished event closes it, unless both are in the same append.
func (s *Store) trackCalls(p *pgdb.Pipeline, id string, evs []workflow.Event) {
	both := workflowrow.PairedCalls(evs)
	for _, e := range evs {
		if e.CallID == "" || both(e.CallID) {
			continue
		}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			p.Exec(`INSERT INTO workflow.open_calls (session_id, call_id, invocation_id, tool, role, started_at, started_seq, instance)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
				id, e.CallID, e.InvocationID, e.Tool, string(e.Role), e.At.UnixNano(), e.Seq, s.inst.id)
		case workflow.EventToolCallFinished:
			p.Exec(`DELETE FROM workflow.open_calls WHERE session_id = $1 AND call_id = $2`, id, e.CallID)
		}
	}
}

// endBatch stores what the transaction's updates left in b: this
// process's read mark, then the outbox rows. The outbox head is locked
// last (UPDATE … RETURNING takes its row lock) and held only to commit:
// the next seq comes from it, never from a sequence, so rows become
// visible in seq order and a reader that has taken every row up to n
// never meets a row below n later.
func (s *Store) endBatch(ctx context.Context, tx pgx.Tx, b *batch) error {
	if b.readSeq != 0 {
		b.Exec(`UPDATE workflow.instances SET read_seq = greatest(read_seq, $2) WHERE instance = $1`, s.inst.id, b.readSeq)
	}
	if len(b.outbox) > 0 {
		b.Exec(`WITH h AS (UPDATE workflow.outbox_head SET next_seq = next_seq + $1 RETURNING next_seq - $1 AS first)
			INSERT INTO workflow.evidence_outbox (seq, body)
			SELECT h.first + t.i - 1, t.b FROM h, unnest($2::bytea[]) WITH ORDINALITY AS t(b, i)`, len(b.outbox), b.outbox)
	}
	return b.Flush(ctx, tx)
}
