// Package evidencedb is the SQLite evidence journal (evidence.db): it
// appends [evidence.Record]s as leaves of an RFC 6962 Merkle tree, signs
// checkpoints with the data directory's key, answers per-session queries,
// exports bundles, and verifies a data directory offline ([Verify]).
//
// # Durability and ordering
//
// Every append runs inside the database's group-commit writer
// (sqlitedb.Writer.Do) and is durable when Append returns. The tree state (a
// compact range: O(log n) hashes) is updated only inside those transaction
// functions, which the writer runs one at a time, so the leaf index, the
// stored row and the tree always advance together; concurrent appends are
// batched into one fsync. The same transaction stores the interior nodes
// the append completed and the new compact range (tree_nodes, tree_state:
// see tree.go), so start-up reads one row and proofs read O(log n) nodes.
// Each transaction function first compares the range's size with the
// table's next index and reloads the range from the state row if a failed
// commit (or another process's append) left them apart.
//
// # Key policy
//
// See docs/evidence.md. The signing key (evidence.key, 0600) is created only
// when the journal has no records and no checkpoints and no key exists.
// A journal with records whose key is missing or unreadable, or is not the
// journal's own (checkKey), does not open. [RotateKey] replaces the key.
package evidencedb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/transparency-dev/merkle/compact"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the journal database's file name in the data directory.
const FileName = "evidence.db"

var _ evidence.Appender = (*Journal)(nil)

// Journal is the open evidence journal of one data directory.
type Journal struct {
	db        *sqlitedb.DB
	key       *evidence.Key
	journalID string
	origin    string
	now       func() time.Time
	every     uint64
	interval  time.Duration
	onError   func(error)
	log       *slog.Logger
	stmts     struct{ insertLeaf, insertPayload, next, lastCP, insertCP, putNode, putState *sql.Stmt }

	mu  sync.Mutex // guards rng; held by the writer's transaction functions
	rng *compact.Range

	marks      watermarks
	beforeRead func(context.Context) error
}

// recordColumns are the columns of a record row; recordColumnsV1 those
// of a journal written before replays were recorded (migration 0003 adds
// replay_of).
const (
	recordColumnsV1 = evidencerow.ColumnsV1
	recordColumns   = evidencerow.Columns
)

// A record is stored as two rows (migration 0005): its leaf, kept
// forever, and its payload, deleted by a purge. leafArgs and payloadArgs
// are the positions in evidencerow.Args (the order of recordColumns) of
// each table's columns, in the order of sqlInsertLeaf and
// sqlInsertPayload.
var (
	leafArgs    = []int{0, 1, 2, 3, 7, 8, 12, 16, 27, 28}
	payloadArgs = []int{0, 4, 5, 6, 9, 10, 11, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26}
)

const (
	sqlInsertLeaf = `INSERT INTO record_leaves (idx, invocation_id, key_id, at_ns, claim_recording_session_id,
		claim_business_session_id, verified_session_id, session_binding, leaf_hash, replay_of) VALUES (?,?,?,?,?,?,?,?,?,?)`
	sqlInsertPayload = `INSERT INTO record_payloads (idx, tool, source, transport_era, claim_project, claim_principal_kind,
		claim_client_window, verified_project, verified_authority, verified_lifecycle, binding_reasons, checked_keys,
		skipped_keys, session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest, canonical)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	sqlNext     = `SELECT COALESCE(MAX(idx) + 1, 0) FROM record_leaves`
	sqlLastCP   = `SELECT size, root, key_id, note, created_at_ns FROM checkpoints ORDER BY size DESC, id DESC LIMIT 1`
	sqlInsertCP = `INSERT INTO checkpoints (size, root, key_id, note, created_at_ns) VALUES (?,?,?,?,?)`
	// sqlSession selects the idx of every record whose claimed or verified
	// session is ?1.
	sqlSession = `SELECT idx FROM record_leaves WHERE claim_recording_session_id = ?1
		UNION SELECT idx FROM record_leaves WHERE claim_business_session_id = ?1
		UNION SELECT idx FROM record_leaves WHERE verified_session_id = ?1`
)

// Open opens (creating if needed) the journal in dataDir. A new journal gets
// a random journal id, its origin (opts.Origin or evidence.OriginPrefix +
// id) and a new signing key. An existing journal whose key file is missing
// or unreadable, or that belongs to another journal (it signed none of this
// journal's checkpoints, or the newest checkpoint does not verify with it or
// a retired key), fails with failure.Unavailable and a message telling the
// operator what to do and naming both key ids; no key is created or adopted
// and nothing is written in that case.
func Open(ctx context.Context, dataDir string, opts evidence.Options) (*Journal, error) {
	if err := evidencerow.CheckOrigin(opts.Origin); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(dataDir, FileName), sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "open evidence journal")
	}
	o := evidencerow.Defaults(opts)
	j := &Journal{db: db, now: o.Now, every: o.CheckpointEvery, interval: o.CheckpointInterval, onError: o.OnError, log: o.Log}
	if err := j.init(ctx, dataDir, opts.Origin); err != nil {
		db.Close()
		return nil, err
	}
	if err := j.loadWatermark(ctx); err != nil {
		db.Close()
		return nil, wrapWrite(err)
	}
	return j, nil
}

func (j *Journal) init(ctx context.Context, dataDir, origin string) error {
	// Journal identity: created once, in one transaction.
	err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'journal_id'`).Scan(&j.journalID)
		if errors.Is(err, sql.ErrNoRows) {
			j.journalID = newJournalID()
			if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('journal_id', ?)`, j.journalID); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'origin'`).Scan(&j.origin)
		if errors.Is(err, sql.ErrNoRows) {
			j.origin = origin
			if j.origin == "" {
				j.origin = evidence.OriginPrefix + j.journalID
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('origin', ?)`, j.origin)
		}
		return err
	})
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "evidence journal metadata")
	}
	if origin != "" && origin != j.origin {
		return failure.New(failure.InvalidArguments, "evidence journal origin is %q; it cannot change to %q", j.origin, origin)
	}
	// Counting rows is O(n); they are counted only for the message below.
	var hasRecords, hasCheckpoints bool
	if err := j.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM records), EXISTS (SELECT 1 FROM checkpoints)`).Scan(&hasRecords, &hasCheckpoints); err != nil {
		return failure.Wrap(failure.Unavailable, err, "read evidence journal")
	}
	key, err := evidence.LoadKey(dataDir)
	switch {
	case errors.Is(err, evidence.ErrNoKey) && !hasRecords && !hasCheckpoints:
		key, err = evidence.CreateKey(dataDir, j.origin)
		if errors.Is(err, os.ErrExist) { // another process created it first
			key, err = evidence.LoadKey(dataDir)
		}
		if err != nil {
			return failure.Wrap(failure.Unavailable, err, "create the evidence signing key")
		}
	case errors.Is(err, evidence.ErrNoKey):
		var records, checkpoints int64
		if err := j.db.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM records), (SELECT COUNT(*) FROM checkpoints)`).Scan(&records, &checkpoints); err != nil {
			return failure.Wrap(failure.Unavailable, err, "read evidence journal")
		}
		return failure.New(failure.Unavailable,
			"the evidence journal %s has %d records and %d checkpoints but its signing key %s is missing; "+
				"restore %s from a backup (a new key is never generated for a non-empty journal), "+
				"or move %s aside to start a new journal (the old one stays verifiable with `webcodex evidence verify` through %s)",
			filepath.Join(dataDir, FileName), records, checkpoints, filepath.Join(dataDir, evidence.KeyFile),
			evidence.KeyFile, FileName, evidence.PublicKeysFile)
	case err != nil:
		return failure.Wrap(failure.Unavailable, err,
			"the evidence signing key %s cannot be used; restore it from a backup (it is never regenerated while the journal has records)",
			filepath.Join(dataDir, evidence.KeyFile))
	}
	if err := checkKey(ctx, j.db.Read, dataDir, key); err != nil {
		return err
	}
	j.key = key
	if err := j.db.Writer.PrepareAll(ctx, sqlitedb.Stmt{Dst: &j.stmts.insertLeaf, Query: sqlInsertLeaf},
		sqlitedb.Stmt{Dst: &j.stmts.insertPayload, Query: sqlInsertPayload}, sqlitedb.Stmt{Dst: &j.stmts.next, Query: sqlNext},
		sqlitedb.Stmt{Dst: &j.stmts.lastCP, Query: sqlLastCP}, sqlitedb.Stmt{Dst: &j.stmts.insertCP, Query: sqlInsertCP},
		sqlitedb.Stmt{Dst: &j.stmts.putNode, Query: sqlPutNode}, sqlitedb.Stmt{Dst: &j.stmts.putState, Query: sqlPutState}); err != nil {
		return failure.Wrap(failure.Unavailable, err, "prepare evidence statements")
	}
	// Load the tree state from its row: O(log n) point reads, whatever
	// the journal's size (decision 0045). A journal without one, or whose
	// row or nodes disagree with the records' next index, is rebuilt from
	// every leaf, which also refuses a gap; a record missing below the
	// last is otherwise found by `webcodex evidence verify`, not here.
	return wrapWrite(j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		var next int64
		if err := tx.StmtContext(ctx, j.stmts.next).QueryRowContext(ctx).Scan(&next); err != nil {
			return err
		}
		return j.load(ctx, tx, uint64(next))
	}))
}

// pick returns args[i] for each i of at, in order.
func pick(args []any, at []int) []any {
	out := make([]any, len(at))
	for k, i := range at {
		out[k] = args[i]
	}
	return out
}

func newJournalID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return fmt.Sprintf("%x", b)
}

// sync makes sure the range matches the table inside tx. j.mu held. When
// another process appended since (a server and `webcodex mcp` sharing a
// data directory) or a failed commit of ours left the range ahead of the
// table, the range is reloaded from the state row written in the same
// transaction as the rows (rebuilt from the leaves if that row disagrees,
// e.g. after an append by a build that did not keep the tree index).
func (j *Journal) sync(ctx context.Context, tx *sql.Tx) error {
	var next int64
	if err := tx.StmtContext(ctx, j.stmts.next).QueryRowContext(ctx).Scan(&next); err != nil {
		return err
	}
	if j.rng != nil && uint64(next) == j.rng.End() {
		return nil
	}
	return j.load(ctx, tx, uint64(next))
}

// JournalID returns the journal's id.
func (j *Journal) JournalID() string { return j.journalID }

// Origin returns the checkpoint origin.
func (j *Journal) Origin() string { return j.origin }

// KeyID returns the current signing key's id.
func (j *Journal) KeyID() string { return j.key.ID }

// Close closes the database after queued writes commit.
func (j *Journal) Close() error { return j.db.Close() }

func wrapWrite(err error) error { return sqlitedb.StoreError(err, "evidence journal") }

func wrapRead(err error) error {
	if err == nil {
		return nil
	}
	return failure.Wrap(failure.Unavailable, err, "evidence journal read failed")
}

// Append validates r, assigns the next leaf index, stores the row (columns,
// canonical bytes, leaf hash) and extends the tree; when the new size is a
// multiple of the checkpoint interval it also signs a checkpoint in the
// same transaction. It returns after the commit is durable. A reused
// invocation id is failure.Conflict; an invalid record
// failure.InvalidArguments. If ctx is done before the writer runs the
// append, nothing is written (failure.Interrupted): callers recording a call
// whose own context may already be cancelled (a client disconnect) should
// pass context.WithoutCancel.
func (j *Journal) Append(ctx context.Context, r evidence.Record) (evidence.Entry, error) {
	// Validate and encode outside the writer (index 0, patched inside):
	// the writer goroutine is the journal's serial bottleneck.
	r = evidence.Salted(r) // schema version 3: the leaf commits to a fresh salt
	canon, err := r.Canonical(j.journalID, j.key.ID, 0)
	if err != nil {
		return evidence.Entry{}, err
	}
	var e evidence.Entry
	applied := j.marks.applied.Load()
	err = j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if err := j.sync(ctx, tx); err != nil {
			return err
		}
		var err error
		e, err = j.appendLocked(ctx, tx, r, canon)
		return err
	})
	if err != nil {
		return evidence.Entry{}, wrapWrite(err)
	}
	j.durableUpTo(applied)
	return e, nil
}

// appendLocked appends r, whose canonical encoding for index 0 is canon,
// inside tx. j.mu held and the range in sync.
func (j *Journal) appendLocked(ctx context.Context, tx *sql.Tx, r evidence.Record, canon []byte) (evidence.Entry, error) {
	index := j.rng.End()
	canon = evidence.SetCanonicalIndex(canon, index)
	leaf := evidence.LeafHash(canon)
	args := evidencerow.Args(index, j.key.ID, r, canon, leaf)
	if _, err := tx.StmtContext(ctx, j.stmts.insertLeaf).ExecContext(ctx, pick(args, leafArgs)...); err != nil {
		if sqlitedb.IsConstraint(err) {
			return evidence.Entry{}, failure.New(failure.Conflict, "evidence record %s already exists", r.InvocationID)
		}
		return evidence.Entry{}, err
	}
	if _, err := tx.StmtContext(ctx, j.stmts.insertPayload).ExecContext(ctx, pick(args, payloadArgs)...); err != nil {
		return evidence.Entry{}, err
	}
	// The range is extended after the row: a failure above leaves it
	// untouched; a failure after this point (or of the commit) rolls back
	// the nodes and state row too and is repaired by sync.
	var nodes []compact.NodeID
	var hashes [][]byte
	if err := j.rng.Append(leaf, func(id compact.NodeID, h []byte) {
		if id.Level > 0 {
			nodes, hashes = append(nodes, id), append(hashes, h)
		}
	}); err != nil {
		return evidence.Entry{}, err
	}
	put := tx.StmtContext(ctx, j.stmts.putNode)
	for i, id := range nodes {
		if _, err := put.ExecContext(ctx, int64(id.Level), int64(id.Index), hashes[i]); err != nil {
			return evidence.Entry{}, err
		}
	}
	if err := j.putState(ctx, tx, j.rng); err != nil {
		return evidence.Entry{}, err
	}
	if j.rng.End()%j.every == 0 {
		if _, err := j.checkpointLocked(ctx, tx); err != nil {
			return evidence.Entry{}, err
		}
	}
	return evidence.Entry{Index: index, KeyID: j.key.ID, Canonical: canon, LeafHash: leaf, Record: r}, nil
}

// checkpointLocked signs the current head unless the newest checkpoint
// already has its size. j.mu held, inside a writer transaction.
func (j *Journal) checkpointLocked(ctx context.Context, tx *sql.Tx) (evidence.SignedCheckpoint, error) {
	size := j.rng.End()
	last, err := evidencerow.ScanCheckpoint(tx.StmtContext(ctx, j.stmts.lastCP).QueryRowContext(ctx))
	if err == nil && last.Size == size && last.KeyID == j.key.ID {
		return last, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return evidence.SignedCheckpoint{}, err
	}
	root, err := evidence.RootOf(j.rng)
	if err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	sc, err := evidence.SignCheckpoint(evidence.Checkpoint{Origin: j.origin, Size: size, Root: root}, j.key, j.now())
	if err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	if _, err := tx.StmtContext(ctx, j.stmts.insertCP).ExecContext(ctx, int64(size), root, sc.KeyID, sc.Note, sc.CreatedAt.UnixNano()); err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	return sc, nil
}

// Checkpoint signs the current head and stores the checkpoint. It is
// idempotent: when the newest checkpoint already has the head's size (and
// the current key), that checkpoint is returned unchanged.
func (j *Journal) Checkpoint(ctx context.Context) (evidence.SignedCheckpoint, error) {
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.SignedCheckpoint{}, err
	}
	var sc evidence.SignedCheckpoint
	err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if err := j.sync(ctx, tx); err != nil {
			return err
		}
		var err error
		sc, err = j.checkpointLocked(ctx, tx)
		return err
	})
	return sc, wrapWrite(err)
}

// Head returns the journal's current tree head: the size and root of every
// stored record, signed or not (the next checkpoint signs it). It reads
// the head in a writer transaction, as Checkpoint does, so that records
// another process appended are counted.
func (j *Journal) Head(ctx context.Context) (evidence.Checkpoint, error) {
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.Checkpoint{}, err
	}
	var head evidence.Checkpoint
	err := j.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if err := j.sync(ctx, tx); err != nil {
			return err
		}
		root, err := evidence.RootOf(j.rng)
		head = evidence.Checkpoint{Origin: j.origin, Size: j.rng.End(), Root: root}
		return err
	})
	return head, wrapRead(err)
}

// Run signs the head every checkpoint interval when it grew, until ctx is
// done; it returns ctx.Err(). Errors go to Options.OnError.
func (j *Journal) Run(ctx context.Context) error {
	return evidencerow.RunCheckpoints(ctx, j.interval, func(ctx context.Context) error {
		_, err := j.Checkpoint(ctx)
		return err
	}, j.onError)
}

// Latest returns the newest (largest) stored checkpoint, or
// failure.NotFound when none was signed yet.
func (j *Journal) Latest(ctx context.Context) (evidence.SignedCheckpoint, error) {
	sc, err := evidencerow.ScanCheckpoint(j.db.QueryRow(ctx, sqlLastCP))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, failure.New(failure.NotFound, "no evidence checkpoint has been signed yet")
	}
	return sc, wrapRead(err)
}

func checkSessionID(id string) error { return evidencerow.CheckSessionID(id) }

// ClampLimit applies the SessionRecords limit rule (evidencerow.ClampLimit).
func ClampLimit(limit int) (int, error) { return evidencerow.ClampLimit(limit) }

// SessionRecords returns up to limit records whose claimed (recording or
// business) or verified session is sessionID, newest first. The records are
// decoded from their canonical bytes.
func (j *Journal) SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error) {
	limit, err := ClampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	if err := j.flushBeforeRead(ctx); err != nil {
		return nil, err
	}
	return j.sessionEntries(ctx, sessionID, `ORDER BY idx DESC LIMIT ?`, limit)
}

func (j *Journal) sessionEntries(ctx context.Context, sessionID, tail string, args ...any) ([]evidence.Entry, error) {
	rows, err := j.db.Read.QueryContext(ctx, `SELECT `+evidencerow.EntryColumns+` FROM records
		WHERE idx IN (`+sqlSession+`) `+tail, append([]any{sessionID}, args...)...)
	if err != nil {
		return nil, wrapRead(err)
	}
	defer rows.Close()
	return evidencerow.Entries(rows)
}

// SessionCounts counts the records of sessionID (claimed or verified) per
// binding state, and the replays among them.
func (j *Journal) SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error) {
	if err := checkSessionID(sessionID); err != nil {
		return evidence.Counts{}, err
	}
	if err := j.flushBeforeRead(ctx); err != nil {
		return evidence.Counts{}, err
	}
	rows, err := j.db.Read.QueryContext(ctx, `SELECT session_binding, COUNT(*), SUM(replay_of != '') FROM records
		WHERE idx IN (`+sqlSession+`) GROUP BY session_binding`, sessionID)
	if err != nil {
		return evidence.Counts{}, wrapRead(err)
	}
	defer rows.Close()
	return evidencerow.Counts(rows)
}

// ExportBundle signs the head (idempotently) and returns a self-contained
// bundle of sessionID's records (oldest first, at most
// evidence.MaxBundleRecords) with inclusion proofs into that checkpoint.
// Each proof is read from the stored tree nodes (O(log n) point reads, see
// InclusionProof) and checked against the checkpoint's root before it is
// returned. A session with no records is failure.NotFound.
func (j *Journal) ExportBundle(ctx context.Context, sessionID string) (evidence.Bundle, error) {
	if err := checkSessionID(sessionID); err != nil {
		return evidence.Bundle{}, err
	}
	cp, err := j.Checkpoint(ctx)
	if err != nil {
		return evidence.Bundle{}, err
	}
	entries, err := j.sessionEntries(ctx, sessionID, `AND idx < ? ORDER BY idx LIMIT ?`, int64(cp.Size), evidence.MaxBundleRecords+1)
	if err != nil {
		return evidence.Bundle{}, err
	}
	keys, err := evidence.TrustedKeys(filepath.Dir(j.db.Path()), nil)
	if err != nil {
		return evidence.Bundle{}, failure.Wrap(failure.Unavailable, err, "read public keys")
	}
	return evidencerow.Bundle(j.journalID, j.origin, sessionID, cp, entries, nodeRead(ctx, j.db.Read), keys.VerifierKeys())
}

// DB returns the journal's database (its writer's statistics, a readiness
// probe).
func (j *Journal) DB() *sqlitedb.DB { return j.db }
