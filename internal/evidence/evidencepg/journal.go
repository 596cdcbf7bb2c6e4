// Package evidencepg is the evidence journal on PostgreSQL (schema
// evidence of a shared database): the same records, tree index,
// checkpoints and verification as the SQLite journal (evidencedb), for
// several replicas appending to one log.
//
// # One order
//
// The database decides the log's order, never a replica's memory: every
// append, outbox batch and checkpoint runs in one READ COMMITTED
// transaction that first locks the head row (evidence.head) FOR UPDATE,
// takes the next leaf index and the compact range from it, writes the
// rows, nodes and checkpoint, and stores the new head before it commits.
// Indexes are never taken from a sequence (a sequence has gaps and
// commits out of order); a batch takes the lock once for all its leaves.
// Every commit is durable when the call returns.
//
// # Key policy
//
// The signing key is never stored in the database: each replica is given
// a key file (the same key). Open creates it only when the journal has no
// records, no checkpoints and no listed key and the file does not exist,
// and refuses a
// key that is not the journal's own (evidence.CheckSigningKey, and on an
// empty journal a key other than the one another replica registered).
// The public keys of the journal are listed in evidence.public_keys, the
// database's evidence.pub.
package evidencepg

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the journal's PostgreSQL schema.
const Schema = "evidence"

const storeName = "evidence journal"

var _ evidence.Appender = (*Journal)(nil)

// Journal is the evidence journal of one database, as one replica sees
// it. It keeps no fact of the log in memory: each call reads the head.
type Journal struct {
	db        *pgdb.DB
	key       *evidence.Key
	keyFile   string
	journalID string
	origin    string
	now       func() time.Time
	every     uint64
	interval  time.Duration
	onError   func(error)
	log       *slog.Logger

	// watermark is the highest outbox watermark this replica saw stored
	// (every commit is durable: applied and durable are one).
	watermark  atomic.Int64
	beforeRead func(context.Context) error
}

// Open migrates the schema evidence of db and opens its journal, signing
// with the key in keyFile. A new journal gets a random journal id and its
// origin (opts.Origin or evidence.OriginPrefix + id), stored once; the key
// file is created (0600) only when the journal has no records and no
// checkpoints, no replica listed its key yet and keyFile does not exist.
// The pool stays the caller's.
//
// Errors: failure.InvalidArguments for a malformed origin or one that
// differs from the stored origin; failure.Unavailable when the key file
// is missing or unreadable while the journal has records, checkpoints or
// a listed key (no key is created), and wrapping evidence.ErrForeignKey
// when the key is not the journal's own (nothing is written then); those
// of pgdb.DB.Migrate (a newer schema version is failure.Conflict).
func Open(ctx context.Context, db *pgdb.DB, keyFile string, opts evidence.Options) (*Journal, error) {
	if err := evidencerow.CheckOrigin(opts.Origin); err != nil {
		return nil, err
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	o := evidencerow.Defaults(opts)
	j := &Journal{db: db, keyFile: keyFile, now: o.Now, every: o.CheckpointEvery, interval: o.CheckpointInterval, onError: o.OnError, log: o.Log}
	if err := j.identity(ctx, opts.Origin); err != nil {
		return nil, err
	}
	if err := j.loadKey(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// identity creates the journal's identity and head rows once (the first
// replica's win) and reads them.
func (j *Journal) identity(ctx context.Context, origin string) error {
	id := newJournalID()
	o := origin
	if o == "" {
		o = evidence.OriginPrefix + id
	}
	err := j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO evidence.journal (id, journal_id, origin) VALUES (1, $1, $2) ON CONFLICT DO NOTHING`, id, o)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 { // the head is born with the journal, never again
			if _, err := tx.Exec(ctx, `INSERT INTO evidence.head (id, size, hashes, outbox_watermark) VALUES (1, 0, '', 0)`); err != nil {
				return err
			}
		}
		var wm int64
		err = tx.QueryRow(ctx, `SELECT outbox_watermark FROM evidence.head WHERE id = 1`).Scan(&wm)
		if errors.Is(err, pgx.ErrNoRows) {
			err = j.rebuildHead(ctx, tx)
		}
		if err != nil {
			return err
		}
		j.watermark.Store(wm)
		return tx.QueryRow(ctx, `SELECT journal_id, origin FROM evidence.journal WHERE id = 1`).Scan(&j.journalID, &j.origin)
	})
	if err != nil {
		return wrapWrite(err)
	}
	if origin != "" && origin != j.origin {
		return failure.New(failure.InvalidArguments, "evidence journal origin is %q; it cannot change to %q", j.origin, origin)
	}
	return nil
}

func newJournalID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return fmt.Sprintf("%x", b)
}

// loadKey loads (or, for an empty journal, creates) the key file, checks
// that it is the journal's key and lists its public key, under the head
// lock so that replicas starting together decide one after the other.
func (j *Journal) loadKey(ctx context.Context) error {
	var used bool // records, checkpoints or a replica's key
	if err := j.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM evidence.records) OR EXISTS (SELECT 1 FROM evidence.checkpoints)
		OR EXISTS (SELECT 1 FROM evidence.public_keys)`).Scan(&used); err != nil {
		return failure.Wrap(failure.Unavailable, err, "read evidence journal")
	}
	key, err := evidence.LoadKeyFile(j.keyFile)
	switch {
	case errors.Is(err, evidence.ErrNoKey) && !used:
		key, err = evidence.CreateKeyFile(j.keyFile, j.origin)
		if errors.Is(err, os.ErrExist) { // another process created it first
			key, err = evidence.LoadKeyFile(j.keyFile)
		}
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "create the evidence signing key")
		}
	case errors.Is(err, evidence.ErrNoKey):
		return failure.New(failure.Unavailable,
			"the evidence journal %s has a signing key (records, checkpoints or another replica's key) but %s is missing; "+
				"give every replica the journal's key file, or restore it from a backup (a new key is never generated for a journal that has one)",
			pgdb.Redact(j.db.URL()), j.keyFile)
	case err != nil:
		return failure.Wrap(failure.Unavailable, err,
			"the evidence signing key %s cannot be used; restore it from a backup (it is never regenerated while the journal has records)", j.keyFile)
	}
	err = j.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := lockHead(ctx, tx); err != nil {
			return err
		}
		if err := checkKey(ctx, tx, key, j.keyFile); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO evidence.public_keys (key_id, verifier_key, added_at_ns) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			key.ID, key.VerifierKey, j.now().UnixNano())
		return err
	})
	if err != nil {
		return wrapWrite(err)
	}
	j.key = key
	return nil
}

// checkKey refuses key unless it is the journal's own
// (evidence.CheckSigningKey, trusting the listed public keys); on a
// journal without records and checkpoints it also refuses a key other
// than the one a replica listed already, so that replicas started
// together on a new journal cannot sign with two keys. It only reads.
func checkKey(ctx context.Context, tx pgx.Tx, key *evidence.Key, keyFile string) error {
	var f evidence.KeyFacts
	err := tx.QueryRow(ctx, `SELECT key_id FROM evidence.records ORDER BY idx DESC LIMIT 1`).Scan(&f.NewestRecordKey)
	f.HasRecords = err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return failure.Wrap(failure.Unavailable, err, "read evidence journal")
	}
	f.Newest, err = evidencerow.ScanCheckpoint(tx.QueryRow(ctx, sqlLastCP))
	f.HasCheckpoints = err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return failure.Wrap(failure.Unavailable, err, "the newest evidence checkpoint cannot be read; run `webcodex evidence verify`")
	}
	f.Signed = func(id string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM evidence.checkpoints WHERE key_id = $1)`, id).Scan(&ok)
		return ok, err
	}
	f.Signers = func() (string, error) {
		ids, err := texts(ctx, tx, `SELECT DISTINCT key_id FROM evidence.checkpoints ORDER BY key_id LIMIT $1`, evidence.MaxListedSigners+1)
		return evidence.ListSigners(ids), err
	}
	f.Trusted = func() (*evidence.KeySet, error) {
		keys, err := publicKeys(ctx, tx)
		if err != nil {
			return nil, err
		}
		return evidence.NewKeySet(append(keys, key.VerifierKey)...)
	}
	f.StartOver = "give every replica the journal's key file; a new journal needs another database"
	if err := evidence.CheckSigningKey(f, key, keyFile); err != nil || f.HasRecords || f.HasCheckpoints {
		return err
	}
	listed, err := texts(ctx, tx, `SELECT key_id FROM evidence.public_keys ORDER BY key_id COLLATE "C" LIMIT $1`, evidence.MaxListedSigners+1)
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "read the evidence public keys")
	}
	if len(listed) > 0 && !contains(listed, key.ID) {
		return failure.Wrap(failure.Unavailable, evidence.ErrForeignKey,
			"%s is key %s, but another replica opened the journal with key %s", keyFile, key.ID, evidence.ListSigners(listed))
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// texts runs a query of one text column.
func texts(ctx context.Context, q querier, sql string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// publicKeys lists the journal's public keys, oldest first.
func publicKeys(ctx context.Context, q querier) ([]string, error) {
	return texts(ctx, q, `SELECT verifier_key FROM evidence.public_keys ORDER BY added_at_ns, key_id COLLATE "C"`)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// JournalID returns the journal's id.
func (j *Journal) JournalID() string { return j.journalID }

// Origin returns the checkpoint origin.
func (j *Journal) Origin() string { return j.origin }

// KeyID returns the signing key's id.
func (j *Journal) KeyID() string { return j.key.ID }

// Close releases nothing of the pool, which stays the caller's: every
// write was durable when its call returned.
func (j *Journal) Close() error { return nil }

func wrapWrite(err error) error { return pgdb.StoreError(err, storeName) }

func wrapRead(err error) error {
	if err == nil {
		return nil
	}
	return failure.Wrap(failure.Unavailable, err, "evidence journal read failed")
}

// tx runs fn in one pgdb transaction. A context already done writes
// nothing and is failure.Interrupted (as on SQLite), not the pool's
// unavailability.
func (j *Journal) tx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return j.db.Tx(ctx, fn)
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
