package workflowpg

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// maxEventRowsPerInsert is the most rows one INSERT of insertEvents binds:
// PostgreSQL binds at most 65,535 values per statement.
const maxEventRowsPerInsert = 65535 / workflowrow.EventArgCount

// A batch is what the updates of one transaction leave for its end: the
// evidence outbox rows to store, in order, and this process's newest
// committed read.
type batch struct {
	outbox  [][]byte
	readSeq int64
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
		if _, err := s.writeEvents(ctx, tx, cp.ID, cp, evs, drop); err != nil {
			return err
		}
		out = evs
		return nil
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

// direct runs one update of session id in a transaction of its own,
// after the behind writes queued for the session (so that the session's
// events keep the order of the calls), and returns when it is durable.
func (s *Store) direct(ctx context.Context, id string, write func(ctx context.Context, tx pgx.Tx, b *batch) error) error {
	if err := s.waitPending(ctx, id); err != nil {
		return storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		b := &batch{}
		if err := write(ctx, tx, b); err != nil {
			return err
		}
		return s.endBatch(ctx, tx, b)
	})
	return storeErr(refused(err))
}

// updateTx updates session id by fn in tx: it locks the session row
// (SELECT … FOR UPDATE: an append of another replica to the session waits
// for this transaction, so each judges the header the other wrote and
// seqs, counters, retained and trim stay consistent), runs fn, appends
// its events and stores the header; outbox (when not nil) is left in b
// for the end of the transaction. claimed is CallWrite.Claimed, which the
// stored header must be (workflow.ErrClaimChanged otherwise). out and
// evsOut (when not nil) receive the session and the appended events.
// Refusals are returned as refusal, before anything is written.
func (s *Store) updateTx(ctx context.Context, tx pgx.Tx, b *batch, id string, fn workflow.UpdateFunc, claimed string, outbox []byte,
	out *workflow.Session, evsOut *[]workflow.Event) error {
	var hdr string
	var retained int64
	err := tx.QueryRow(ctx, `SELECT header_json, retained FROM workflow.sessions WHERE session_id = $1 FOR UPDATE`, id).Scan(&hdr, &retained)
	if errors.Is(err, pgx.ErrNoRows) {
		return refusal{unknown(id)}
	}
	if err != nil {
		return err
	}
	if claimed != "" && hdr != claimed {
		return refusal{workflow.ErrClaimChanged}
	}
	sess, err := workflowrow.DecodeHeader([]byte(hdr))
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
	evs, drop := workflow.Apply(&sess, events, s.now().UTC(), int(retained))
	trimmed, err := s.writeEvents(ctx, tx, id, sess, evs, drop)
	if err != nil {
		return err
	}
	retained += int64(len(evs)) - trimmed
	if _, err := tx.Exec(ctx, `UPDATE workflow.sessions SET lifecycle = $1, updated_at = $2, retained = $3, header_json = $4 WHERE session_id = $5`,
		string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, workflowrow.EncodeHeader(sess), id); err != nil {
		return err
	}
	if outbox != nil {
		b.outbox = append(b.outbox, outbox)
	}
	if out != nil {
		*out, *evsOut = sess, evs
	}
	return nil
}

// writeEvents inserts the events an update of session id appends (sess is
// the header after them), keeps open_calls in step and, when drop > 0,
// trims the oldest events beyond TailLimit; it returns the number of rows
// trimmed.
func (s *Store) writeEvents(ctx context.Context, tx pgx.Tx, id string, sess workflow.Session, evs []workflow.Event, drop int) (int64, error) {
	if err := insertEvents(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if err := s.trackCalls(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if drop <= 0 {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `DELETE FROM workflow.events WHERE session_id = $1 AND seq <= $2`, id, sess.EventsObserved-workflow.TailLimit)
	return tag.RowsAffected(), err
}

// insertEvents inserts evs for session id with multi-row INSERTs of at
// most maxEventRowsPerInsert rows each.
func insertEvents(ctx context.Context, tx pgx.Tx, id string, evs []workflow.Event) error {
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
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return err
		}
		evs = evs[n:]
	}
	return nil
}

// trackCalls keeps open_calls in step with appended events: a started
// event opens its call (stamped with this instance) and a finished event
// closes it, unless both are in the same append.
func (s *Store) trackCalls(ctx context.Context, tx pgx.Tx, id string, evs []workflow.Event) error {
	both := workflowrow.PairedCalls(evs)
	for _, e := range evs {
		if e.CallID == "" || both(e.CallID) {
			continue
		}
		var err error
		switch e.Kind {
		case workflow.EventToolCallStarted:
			_, err = tx.Exec(ctx, `INSERT INTO workflow.open_calls (session_id, call_id, invocation_id, tool, role, started_at, started_seq, instance)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
				id, e.CallID, e.InvocationID, e.Tool, string(e.Role), e.At.UnixNano(), e.Seq, s.inst.id)
		case workflow.EventToolCallFinished:
			_, err = tx.Exec(ctx, `DELETE FROM workflow.open_calls WHERE session_id = $1 AND call_id = $2`, id, e.CallID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// endBatch stores what the transaction's updates left in b: this
// process's read mark, then the outbox rows. The outbox head is locked
// last (UPDATE … RETURNING takes its row lock) and held only to commit:
// the next seq comes from it, never from a sequence, so rows become
// visible in seq order and a reader that has taken every row up to n
// never meets a row below n later.
func (s *Store) endBatch(ctx context.Context, tx pgx.Tx, b *batch) error {
	if b.readSeq != 0 {
		if _, err := tx.Exec(ctx, `UPDATE workflow.instances SET read_seq = greatest(read_seq, $2) WHERE instance = $1`, s.inst.id, b.readSeq); err != nil {
			return err
		}
	}
	if len(b.outbox) == 0 {
		return nil
	}
	var first int64
	if err := tx.QueryRow(ctx, `UPDATE workflow.outbox_head SET next_seq = next_seq + $1 RETURNING next_seq - $1`, len(b.outbox)).Scan(&first); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO workflow.evidence_outbox (seq, body)
		SELECT $1 + t.i - 1, t.b FROM unnest($2::bytea[]) WITH ORDINALITY AS t(b, i)`, first, b.outbox)
	return err
}
