package evidencedb

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
)

// queryer is a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ErrForeignKey is the cause of Open's (and RotateKey's) refusal of a
// signing key that is not the journal's own (see checkKey): the
// journal-wide evidence.ErrForeignKey.
var ErrForeignKey = evidence.ErrForeignKey

// checkKey refuses a signing key that is not the journal's own, by
// evidence.CheckSigningKey's rules, trusting evidence.pub and key. A
// refusal is failure.Unavailable wrapping ErrForeignKey, naming the key's
// id and the journal's. It only reads.
func checkKey(ctx context.Context, q queryer, dataDir string, key *evidence.Key) error {
	var f evidence.KeyFacts
	err := q.QueryRowContext(ctx, `SELECT key_id FROM records ORDER BY idx DESC LIMIT 1`).Scan(&f.NewestRecordKey)
	f.HasRecords = err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return failure.Wrap(failure.Unavailable, err, "read evidence journal")
	}
	f.Newest, err = evidencerow.ScanCheckpoint(q.QueryRowContext(ctx, sqlLastCP))
	f.HasCheckpoints = err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return failure.Wrap(failure.Unavailable, err, "the newest evidence checkpoint cannot be read; run `webcodex evidence verify`")
	}
	f.Signed = func(id string) (bool, error) {
		var ok bool
		err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE key_id = ?)`, id).Scan(&ok)
		return ok, err
	}
	f.Signers = func() (string, error) { return checkpointSigners(ctx, q) }
	f.Trusted = func() (*evidence.KeySet, error) { return evidence.TrustedKeys(dataDir, nil) }
	f.StartOver = "to start a new journal, move " + filepath.Join(dataDir, FileName) + " aside"
	return evidence.CheckSigningKey(f, key, filepath.Join(dataDir, evidence.KeyFile))
}

// checkpointSigners lists (bounded) the key ids of the stored checkpoints.
func checkpointSigners(ctx context.Context, q queryer) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT key_id FROM checkpoints ORDER BY key_id LIMIT ?`, evidence.MaxListedSigners+1)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	return evidence.ListSigners(ids), rows.Err()
}

// Rotation is what RotateKey did.
type Rotation struct {
	OldKeyID, NewKeyID string
	// RetiredKeyFile is the path the old private key is kept at.
	RetiredKeyFile string
	// OldCheckpoint is the head signed with the old key before the
	// rotation, when it was not signed by it yet; NewCheckpoint the same
	// head signed with the new key. Both are nil for an empty journal.
	OldCheckpoint, NewCheckpoint *evidence.SignedCheckpoint
}

// RotateKey replaces the signing key of the journal in dataDir. It needs
// the journal to itself: it opens evidence.db with SQLite's exclusive
// locking mode and refuses (failure.Conflict, nothing changed) while any
// other process or connection has it open (a running `webcodex serve` or
// `webcodex mcp`), and any server started meanwhile waits for it. It
// refuses a key that is not the journal's (as Open does) and a journal
// that does not verify clean, except for FindingNoCheckpoint: the new key
// must not vouch for records nobody checked. Then it signs the head with
// the old key (unless that checkpoint exists), adds the new public key to
// evidence.pub, signs the same head with the new key and commits both
// checkpoints, and only then replaces evidence.key atomically, keeping
// the old private key as evidence.RetiredKeyFile(id) and its public key
// in evidence.pub. A crash before the replacement leaves the old key in
// use with a valid journal; after it, the new one. now stamps the
// checkpoints.
func RotateKey(ctx context.Context, dataDir string, now func() time.Time) (Rotation, error) {
	path := filepath.Join(dataDir, FileName)
	if _, err := os.Stat(path); err != nil {
		return Rotation{}, failure.Wrap(failure.NotFound, err, "no evidence journal at %s", path)
	}
	db, err := openExclusive(path)
	if err != nil {
		return Rotation{}, failure.Wrap(failure.Unavailable, err, "open %s", path)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		// The first write takes the exclusive lock, before anything is
		// read or decided; it changes no value.
		_, err = tx.ExecContext(ctx, `UPDATE meta SET v = v WHERE k = 'journal_id'`)
		if err != nil {
			tx.Rollback()
		}
	}
	if err != nil {
		if isBusy(err) {
			return Rotation{}, failure.New(failure.Conflict,
				"the evidence journal %s is open in another process (a running `webcodex serve` or `webcodex mcp`); stop it, then rotate the key", path)
		}
		return Rotation{}, failure.Wrap(failure.Unavailable, err, "lock %s", path)
	}
	defer tx.Rollback()
	old, err := evidence.LoadKey(dataDir)
	if err != nil {
		return Rotation{}, failure.Wrap(failure.Unavailable, err, "the current signing key")
	}
	if err := checkKey(ctx, tx, dataDir, old); err != nil {
		return Rotation{}, err
	}
	keys, err := evidence.TrustedKeys(dataDir, nil)
	if err != nil {
		return Rotation{}, failure.Wrap(failure.Unavailable, err, "trusted keys")
	}
	rep, err := verifyTx(ctx, tx, path, keys, evidence.VerifyOptions{})
	if err != nil {
		return Rotation{}, err
	}
	for _, k := range rep.Kinds() {
		if k != evidence.FindingNoCheckpoint {
			return Rotation{}, failure.New(failure.Conflict,
				"the evidence journal does not verify (%v); run `webcodex evidence verify` and resolve the findings before rotating the key", rep.Kinds())
		}
	}
	nk, err := evidence.GenerateKey(old.Signer.Name())
	if err != nil {
		return Rotation{}, failure.Wrap(failure.Internal, err, "generate key")
	}
	out := Rotation{OldKeyID: old.ID, NewKeyID: nk.ID, RetiredKeyFile: filepath.Join(dataDir, evidence.RetiredKeyFile(old.ID))}
	if rep.Records > 0 || rep.Checkpoints > 0 {
		head := rep.Head
		if lc := rep.LastCheckpoint; lc == nil || lc.Size != head.Size || lc.KeyID != old.ID {
			cp, err := insertCheckpoint(ctx, tx, head, old, now())
			if err != nil {
				return Rotation{}, err
			}
			out.OldCheckpoint = &cp
		}
		// The new public key is listed before its checkpoint commits, so
		// that checkpoint always verifies.
		if err := evidence.AddPublicKey(dataDir, old.VerifierKey); err != nil {
			return Rotation{}, failure.Wrap(failure.Unavailable, err, "public keys")
		}
		if err := evidence.AddPublicKey(dataDir, nk.VerifierKey); err != nil {
			return Rotation{}, failure.Wrap(failure.Unavailable, err, "public keys")
		}
		cp, err := insertCheckpoint(ctx, tx, head, nk, now())
		if err != nil {
			return Rotation{}, err
		}
		out.NewCheckpoint = &cp
	}
	if err := tx.Commit(); err != nil {
		return Rotation{}, failure.Wrap(failure.Unavailable, err, "commit the rotation checkpoints")
	}
	if _, err := evidence.ReplaceKey(dataDir, nk); err != nil {
		return Rotation{}, failure.Wrap(failure.Unavailable, err,
			"the checkpoints are committed but %s was not replaced; the old key stays in use", evidence.KeyFile)
	}
	return out, nil
}

func insertCheckpoint(ctx context.Context, tx *sql.Tx, head evidence.Checkpoint, k *evidence.Key, at time.Time) (evidence.SignedCheckpoint, error) {
	sc, err := evidence.SignCheckpoint(head, k, at)
	if err != nil {
		return sc, failure.Wrap(failure.Internal, err, "sign checkpoint")
	}
	if _, err := tx.ExecContext(ctx, sqlInsertCP, int64(sc.Size), sc.Root, sc.KeyID, sc.Note, sc.CreatedAt.UnixNano()); err != nil {
		return sc, failure.Wrap(failure.Unavailable, err, "store checkpoint")
	}
	return sc, nil
}

// openExclusive opens path with one connection in SQLite's exclusive
// locking mode, failing at once (SQLITE_BUSY) instead of waiting when
// another connection holds the database.
func openExclusive(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	q.Add("_pragma", "busy_timeout(0)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "exclusive")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}
