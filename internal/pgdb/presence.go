package pgdb

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

//go:embed migrations/*.sql
var presenceMigrations embed.FS

// PresenceSchema holds the replicas that have joined the database.
const PresenceSchema = "replicas"

// A Replica is this process's membership of the replicas serving one
// database: while it is held, [DB.Alive] reports its id alive to every
// replica; once its process exits or is killed (its connection ends),
// Alive reports it gone. Facts a replica owns (a job it supervises, a
// call it runs) carry its id so that the others can tell an orphan from
// work in progress. The lock is kept by a Hold: taken again after its
// connection is lost unless another replica judged this one gone
// meanwhile (then Lost is closed and the process must stop).
type Replica struct {
	id   string
	hold *Hold
}

// ID is the replica's id (16 hex digits, new at every Join).
func (r *Replica) ID() string { return r.id }

// Lost is closed when the replica lost its membership for good: its lock
// connection was lost and another replica judged it gone meanwhile
// (LostErr says so).
func (r *Replica) Lost() <-chan struct{} { return r.hold.Lost() }

// LostErr is why the membership was lost, nil while it holds.
func (r *Replica) LostErr() error { return r.hold.Err() }

// Close leaves: the replica's lock and connection are released, and Alive
// reports it gone from then on.
func (r *Replica) Close() error { return r.hold.Close() }

// lockHeld is true when the advisory lock m.lock_key is held by a
// session: pg_locks shows a bigint key as its high (classid) and low
// (objid) words.
const lockHeld = `EXISTS (SELECT 1 FROM pg_locks
	WHERE locktype = 'advisory' AND granted AND objsubid = 1
	  AND ((classid::bigint << 32) | objid::bigint) = m.lock_key)`

// Join makes this process a replica of the database: it registers a new
// id and takes its advisory lock on a connection of its own (taken out of
// the pool, never returned to it), and removes the rows of replicas that
// are gone. Errors: those of the database, as failure.Unavailable.
func (db *DB) Join(ctx context.Context) (*Replica, error) {
	if err := db.Migrate(ctx, PresenceSchema, presenceMigrations, "migrations"); err != nil {
		return nil, err
	}
	pc, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "database %s: join as a replica", db.url)
	}
	conn := pc.Hijack()
	b := make([]byte, 8)
	rand.Read(b)
	id := hex.EncodeToString(b)
	key := int64(binary.BigEndian.Uint64(b))
	fail := func(err error) (*Replica, error) {
		conn.Close(context.WithoutCancel(ctx))
		return nil, failure.Wrap(failure.Unavailable, err, "database %s: join as a replica", db.url)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fail(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO replicas.members (id, lock_key, joined_at) VALUES ($1, $2, $3)`, id, key, time.Now().UnixNano())
	if err == nil {
		_, err = conn.Exec(ctx, `DELETE FROM replicas.members m WHERE NOT `+lockHeld)
	}
	if err != nil {
		return fail(err)
	}
	return &Replica{id: id, hold: db.Keep(conn, `SELECT pg_advisory_lock($1)`, []any{key}, `SELECT 1 FROM replicas.members WHERE id = $1`, id)}, nil
}

// Alive reports whether the replica with id is still serving: its row
// exists and its advisory lock is held. A replica that never joined or has
// left is not alive. A replica found gone is forgotten (its row deleted,
// in the same statement): the caller is about to act on its being gone,
// and a replica that only lost its connection must learn of that when it
// takes its lock again (Replica.Lost).
func (db *DB) Alive(ctx context.Context, id string) (bool, error) {
	var held bool
	err := db.Pool.QueryRow(ctx, `WITH gone AS (DELETE FROM replicas.members m WHERE m.id = $1 AND NOT `+lockHeld+` RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM replicas.members WHERE id = $1) AND NOT EXISTS (SELECT 1 FROM gone)`, id).Scan(&held)
	return held, StoreError(err, "replica registry")
}
