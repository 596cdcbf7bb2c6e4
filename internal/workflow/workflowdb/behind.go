package workflowdb

import (
	"context"
	"database/sql"
	"sync"
)

// QueueRecord stores body, the evidence record of a read-only call
// recorded in no session, in the evidence outbox, behind the caller as a
// recorded read's events are: numbered among this process's reads, its
// number written to the instance file before QueueRecord returns, so that
// a kill -9 that loses it is counted in unrecorded_reads_at_start as a
// read's lost events are. done (which may be nil) is called with the
// outcome from the writer, once the batch has ended; it must not block.
// ctx bounds only the wait for room in the writer's queue.
func (s *Store) QueueRecord(ctx context.Context, body []byte, done func(error)) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	seq := s.readSeq + 1
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.writeMarks(ctx, tx, body, seq)
	}, func(err error) {
		if done != nil {
			done(storeErr(err))
		}
	})
	if err != nil {
		return storeErr(err)
	}
	s.readSeq = seq
	s.inst.markAcknowledged(seq)
	return nil
}

// waitPending waits until the behind writes queued for session id so far
// have ended, so that a reader sees every acknowledged call.
func (s *Store) waitPending(ctx context.Context, id string) error {
	return s.waitFor(ctx, &s.pending, id)
}

// waitFor waits until the write whose ticket pending holds for id (if
// any) has ended.
func (s *Store) waitFor(ctx context.Context, pending *sync.Map, id string) error {
	t, ok := pending.Load(id)
	if !ok {
		return nil
	}
	if err := s.db.Writer.Wait(ctx, t.(uint64)); err != nil {
		return err
	}
	pending.CompareAndDelete(id, t)
	return nil
}

// Flush waits until every write queued so far (behind writes included) has
// ended.
func (s *Store) Flush(ctx context.Context) error {
	return storeErr(s.db.Writer.Wait(ctx, s.db.Writer.Queued()))
}
