package workflowdb

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Create implements workflow.Store.
func (s *Store) Create(ctx context.Context, sess workflow.Session, events []workflow.Event) (workflow.Session, []workflow.Event, error) {
	var out []workflow.Event
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE session_id = ?`, sess.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return failure.New(failure.Conflict, "session %s already exists", sess.ID)
		}
		cp := sess
		evs, drop := workflow.Apply(&cp, events, s.now().UTC(), 0)
		if err := workflow.ValidateSession(cp); err != nil {
			return failure.New(failure.InvalidArguments, "invalid session: %v", err)
		}
		if err := insertEvents(ctx, tx, cp.ID, evs); err != nil {
			return err
		}
		if err := s.trackCalls(ctx, tx, cp.ID, evs); err != nil {
			return err
		}
		retained := int64(len(evs))
		if drop > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq <= ?`, cp.ID, cp.EventsObserved-workflow.TailLimit); err != nil {
				return err
			}
			retained -= int64(drop)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json) VALUES (?,?,?,?,?,?,?)`,
			cp.ID, cp.Project, cp.OwnerFingerprint, string(cp.Lifecycle), cp.UpdatedAt.UnixNano(), retained, workflowrow.EncodeHeader(cp)); err != nil {
			return err
		}
		sess, out = cp, evs
		return nil
	})
	if err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	s.checks.Mark(sess.ID) // written validated
	return sess, out, nil
}

// Update implements workflow.Store.
func (s *Store) Update(ctx context.Context, id string, fn workflow.UpdateFunc) (workflow.Session, []workflow.Event, error) {
	var (
		outSess workflow.Session
		outEvs  []workflow.Event
	)
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	err := s.db.Writer.Do(ctx, s.updateTx(id, fn, false, "", nil, 0, &outSess, &outEvs))
	if err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	return outSess, outEvs, nil
}

// AppendCall implements workflow.Store.
func (s *Store) AppendCall(ctx context.Context, id string, fn workflow.UpdateFunc, w workflow.CallWrite) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	if !w.Behind {
		return storeErr(s.db.Writer.Do(ctx, s.updateTx(id, fn, true, w.Claimed, w.Outbox, 0, nil, nil)))
	}
	// A behind write: numbered among this process's reads, queued, and
	// its number written to the instance file before the caller
	// acknowledges the call (see read_marks).
	s.readMu.Lock()
	defer s.readMu.Unlock()
	seq := s.readSeq + 1
	var ticket atomic.Uint64
	t, err := s.db.Writer.Go(ctx, s.updateTx(id, fn, true, w.Claimed, w.Outbox, seq, nil, nil), func(err error) {
		// Ended: readers need not wait for it (an entry stored after
		// this runs is removed by the next reader's wait).
		s.pending.CompareAndDelete(id, ticket.Load())
		if w.Done != nil {
			w.Done(storeErr(err))
		}
	})
	if err != nil {
		return storeErr(err)
	}
	ticket.Store(t)
	s.readSeq = seq
	s.pending.Store(id, t)
	s.inst.markAcknowledged(seq)
	return nil
}

// updateTx is the transaction function of an update of session id by fn,
// storing outbox (when not nil) in the evidence outbox and, when readSeq
// is not 0, this process's read mark. out and evs (when not nil) receive
// the session and the appended events. When known is true (AppendCall),
// fn may first run on the header this store last read or wrote (see
// appendKnown); claimed is CallWrite.Claimed, which the stored header must
// be (workflow.ErrClaimChanged otherwise).
func (s *Store) updateTx(id string, fn workflow.UpdateFunc, known bool, claimed string, outbox []byte, readSeq int64, out *workflow.Session, evsOut *[]workflow.Event) sqlitedb.TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		now := s.now().UTC()
		if known {
			if done, err := s.appendKnown(ctx, tx, id, fn, claimed, now, outbox, readSeq); done {
				return err
			}
			if claimed != "" {
				// The stored header is not the claimed one, or fn
				// refused it: nothing is written.
				return workflow.ErrClaimChanged
			}
		}
		sess, retained, err := s.scanHeader(tx.StmtContext(ctx, s.stmts.header).QueryRowContext(ctx, id), id)
		if err != nil {
			return err
		}
		events, err := fn(&sess)
		if err != nil {
			return err
		}
		if err := workflow.ValidateSession(sess); err != nil {
			return failure.New(failure.InvalidArguments, "invalid session: %v", err)
		}
		evs, drop := workflow.Apply(&sess, events, now, int(retained))
		trimmed, err := s.writeEvents(ctx, tx, id, sess, evs, drop)
		if err != nil {
			return err
		}
		retained += int64(len(evs)) - trimmed
		hdr := workflowrow.EncodeHeader(sess)
		if _, err := tx.StmtContext(ctx, s.stmts.updateHeader).ExecContext(ctx,
			string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, hdr, id); err != nil {
			return err
		}
		s.rememberHeader(id, hdr, sess, retained)
		if err := s.writeMarks(ctx, tx, outbox, readSeq); err != nil {
			return err
		}
		if out != nil {
			*out, *evsOut = sess, evs
		}
		return nil
	}
}

// appendKnown runs fn on the header and retained count this store last
// read or wrote for session id (s.headers) instead of reading them again,
// and stores the result with an UPDATE that matches only while the row
// still holds exactly that header and count: what it then writes is what
// updateTx's read of the row would have led to. It reports false, having
// written nothing, when there is no such entry, when fn or the validation
// refuses the remembered header (the stored one is judged again), or when
// the row holds something else; updateTx then reads the row and runs fn
// again.
func (s *Store) appendKnown(ctx context.Context, tx *sql.Tx, id string, fn workflow.UpdateFunc, claimed string, now time.Time, outbox []byte, readSeq int64) (bool, error) {
	v, ok := s.headers.Load(id)
	if !ok {
		return false, nil
	}
	d := v.(*decodedHeader)
	if claimed != "" && d.json != claimed {
		return false, nil
	}
	sess := copySession(d.sess)
	events, err := fn(&sess)
	if err != nil || workflow.ValidateSession(sess) != nil {
		return false, nil
	}
	evs, drop := workflow.Apply(&sess, events, now, int(d.retained))
	retained := d.retained + int64(len(evs)) - int64(drop)
	hdr := workflowrow.EncodeHeader(sess)
	res, err := tx.StmtContext(ctx, s.stmts.updateKnown).ExecContext(ctx,
		string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, hdr, id, d.json, d.retained)
	if err != nil {
		return true, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return err != nil, err
	}
	trimmed, err := s.writeEvents(ctx, tx, id, sess, evs, drop)
	if err != nil {
		return true, err
	}
	if trimmed != int64(drop) {
		// Fewer rows were retained than counted: store the count the
		// trim leaves, as updateTx would.
		retained = d.retained + int64(len(evs)) - trimmed
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET retained = ? WHERE session_id = ?`, retained, id); err != nil {
			return true, err
		}
	}
	s.rememberHeader(id, hdr, sess, retained)
	return true, s.writeMarks(ctx, tx, outbox, readSeq)
}

// writeEvents inserts the events an update of session id appends (sess is
// the header after them), keeps open_calls in step and, when drop > 0,
// trims the oldest events beyond TailLimit; it returns the number of rows
// trimmed.
func (s *Store) writeEvents(ctx context.Context, tx *sql.Tx, id string, sess workflow.Session, evs []workflow.Event, drop int) (int64, error) {
	if len(evs) <= 2 {
		// The common appends (one event, or a call's started and
		// finished pair): each row through the prepared insert, which
		// costs less than compiling a multi-row INSERT.
		insert := tx.StmtContext(ctx, s.stmts.insertEvent)
		for _, e := range evs {
			if _, err := insert.ExecContext(ctx, workflowrow.EventArgs(id, e)...); err != nil {
				return 0, err
			}
		}
	} else if err := insertEvents(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if err := s.trackCalls(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if drop <= 0 {
		return 0, nil
	}
	res, err := tx.StmtContext(ctx, s.stmts.trim).ExecContext(ctx, id, sess.EventsObserved-workflow.TailLimit)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// writeMarks stores outbox (when not nil) in the evidence outbox and, when
// readSeq is not 0, this process's read mark.
func (s *Store) writeMarks(ctx context.Context, tx *sql.Tx, outbox []byte, readSeq int64) error {
	if outbox != nil {
		if _, err := tx.StmtContext(ctx, s.stmts.outbox).ExecContext(ctx, outbox); err != nil {
			return err
		}
	}
	if readSeq != 0 {
		if _, err := tx.StmtContext(ctx, s.stmts.readMark).ExecContext(ctx, s.inst.id, readSeq); err != nil {
			return err
		}
	}
	return nil
}
