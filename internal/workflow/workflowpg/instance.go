package workflowpg

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// lockClass is the first key of every instance's advisory lock
// (pg_advisory_lock(lockClass, lock_key)): the ledger's own space of
// advisory locks, apart from any other store's.
const lockClass int32 = 0x57460001

// registerAttempts bounds the lock keys register tries: a random key is
// taken by another instance with odds of about one in 2^31 per live
// instance.
const registerAttempts = 8

// An instance is this process's claim on the ledger: a workflow.instances
// row and the session-level advisory lock it names, held on a connection
// taken out of the pool until close (kept by a pgdb.Hold: taken again
// after a lost connection unless another instance forgot this one
// meanwhile). The server releases the lock when that connection ends,
// also when the process is killed; open calls carry the instance that
// started them, so no replica recovers the live calls of another.
type instance struct {
	id   string
	key  int64
	hold *pgdb.Hold
}

// alive is the SQL condition that the instance row i holds its lock now
// (a two-key advisory lock is listed with objsubid 2).
var alive = fmt.Sprintf(`EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid::bigint = %d AND l.objid::bigint = i.lock_key AND l.objsubid = 2)`, lockClass)

// register takes a connection of its own, locks a free key on it and
// records the instance.
func register(ctx context.Context, db *pgdb.DB, now time.Time) (*instance, error) {
	pc, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "the session store's database is unavailable")
	}
	conn := pc.Hijack()
	var b [12]byte
	rand.Read(b[:])
	in := &instance{id: hex.EncodeToString(b[:])}
	for range registerAttempts {
		var kb [4]byte
		rand.Read(kb[:])
		key := int64(binary.BigEndian.Uint32(kb[:])>>1) | 1
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, int32(key)).Scan(&got); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, storeErr(err)
		}
		if !got {
			continue
		}
		_, err := db.Pool.Exec(ctx, `INSERT INTO workflow.instances (instance, lock_key, started_at) VALUES ($1, $2, $3)`, in.id, key, now.UnixNano())
		if err == nil {
			in.key = key
			in.hold = db.Keep(conn, `SELECT pg_advisory_lock($1, $2)`, []any{lockClass, int32(key)},
				`SELECT 1 FROM workflow.instances WHERE instance = $1`, in.id)
			return in, nil
		}
		if _, uerr := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockClass, int32(key)); uerr != nil || !pgdb.IsUniqueViolation(err) {
			conn.Close(context.WithoutCancel(ctx))
			return nil, storeErr(err)
		}
	}
	conn.Close(context.WithoutCancel(ctx))
	return nil, failure.New(failure.Unavailable, "workflowpg: no free instance lock key in %d attempts", registerAttempts)
}

// close removes the instance's rows (its queued writes have ended: every
// read it acknowledged is recorded) and ends its connection, releasing
// the lock.
func (in *instance) close(ctx context.Context, db *pgdb.DB) error {
	err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM workflow.instance_acks WHERE instance = $1`, in.id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM workflow.instances WHERE instance = $1`, in.id)
		return err
	})
	in.hold.Close()
	return storeErr(err)
}

// countUnrecorded removes the rows of the instances that are gone (their
// lock is free: forgotten, so that one that only lost its connection
// stops when it takes its lock again) and sums, over them, the read-only calls each
// acknowledged beyond the last it committed. A row is removed by one
// replica only, so each is counted once.
func (s *Store) countUnrecorded(ctx context.Context) (int64, error) {
	var total int64
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		total = 0
		rows, err := tx.Query(ctx, `DELETE FROM workflow.instances i WHERE instance <> $1 AND NOT `+alive+`
			RETURNING instance, read_seq`, s.inst.id)
		if err != nil {
			return err
		}
		read := map[string]int64{}
		var gone []string
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			read[id] = n
			gone = append(gone, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(gone) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `DELETE FROM workflow.instance_acks WHERE instance = ANY($1) RETURNING instance, acked_seq`, gone)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			if d := n - read[id]; d > 0 {
				total += d
			}
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("workflowpg: instances: %w", err)
	}
	return total, nil
}

// markAcknowledged records seq as this instance's newest acknowledged
// read-only call, before the call's response is sent.
func (s *Store) markAcknowledged(ctx context.Context, seq int64) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workflow.instance_acks (instance, acked_seq) VALUES ($1, $2)
		ON CONFLICT (instance) DO UPDATE SET acked_seq = greatest(workflow.instance_acks.acked_seq, excluded.acked_seq)`, s.inst.id, seq)
	return err
}
