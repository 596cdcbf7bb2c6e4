package evidencepg_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// journal10 builds a journal of 10 records with a checkpoint at 10.
func journal10(t *testing.T) backend {
	t.Helper()
	b := newBackend(t)
	j := replica(t, b, evidence.Options{})
	storetest.Fill(t, j, 0, 10, "s")
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// applyMutation tampers with b as someone with write access to the
// database (or the key file) would, as the vector says, and returns the
// text of a checkpoint to verify --from, if the mutation keeps one.
func applyMutation(t *testing.T, v storetest.Vector, b backend) []byte {
	t.Helper()
	ctx := context.Background()
	m := v.Mutation
	db := b.pool(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	canonical := func(i uint64) []byte {
		var c []byte
		if err := db.Pool.QueryRow(ctx, `SELECT canonical FROM evidence.records WHERE idx = $1`, int64(i)).Scan(&c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		return c
	}
	switch m.Op {
	case "canonical_byte":
		c := canonical(m.Index)
		c[bytes.Index(c, []byte("read_files"))] ^= 0x01
		exec(`UPDATE evidence.records SET canonical = $1 WHERE idx = $2`, c, int64(m.Index))
	case "set_column":
		if !slices.Contains(storetest.MutableColumns, m.Column) {
			t.Fatalf("column %q is not in %v", m.Column, storetest.MutableColumns)
		}
		exec(`UPDATE evidence.records SET `+m.Column+` = $1 WHERE idx = $2`, castFor(m.Column, m.Value), int64(m.Index))
	case "reencode":
		h, r, err := evidence.ParseCanonical(canonical(m.Index))
		if err != nil {
			t.Fatal(err)
		}
		r.Outcome = evidence.OutcomeFailed
		c, _ := r.Canonical(h.JournalID, h.KeyID, h.Index)
		exec(`UPDATE evidence.records SET outcome = $1, canonical = $2, leaf_hash = $3 WHERE idx = $4`, string(r.Outcome), c, evidence.LeafHash(c), int64(m.Index))
	case "schema_version":
		c := canonical(m.Index)
		c[5] = byte(m.Count)
		exec(`UPDATE evidence.records SET canonical = $1, leaf_hash = $2 WHERE idx = $3`, c, evidence.LeafHash(c), int64(m.Index))
	case "delete_row":
		exec(`DELETE FROM evidence.records WHERE idx = $1`, int64(m.Index))
	case "swap_rows":
		exec(`UPDATE evidence.records SET idx = -1 WHERE idx = $1`, int64(m.Index))
		exec(`UPDATE evidence.records SET idx = $1 WHERE idx = $2`, int64(m.Index), int64(m.With))
		exec(`UPDATE evidence.records SET idx = $1 WHERE idx = -1`, int64(m.With))
	case "truncate_tail":
		exec(`DELETE FROM evidence.records WHERE idx >= $1`, int64(m.Index))
	case "replay": // drop the uniqueness of invocation ids, then copy row Index to the end
		exec(`ALTER TABLE evidence.records DROP CONSTRAINT records_invocation_id_key`)
		exec(`INSERT INTO evidence.records SELECT (SELECT max(idx) + 1 FROM evidence.records), invocation_id, key_id, at_ns, tool, source, transport_era,
			claim_recording_session_id, claim_business_session_id, claim_project, claim_principal_kind, claim_client_window,
			verified_session_id, verified_project, verified_authority, verified_lifecycle, session_binding, binding_reasons,
			checked_keys, skipped_keys, session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest,
			canonical, leaf_hash, replay_of FROM evidence.records WHERE idx = $1`, int64(m.Index))
	case "tree_node":
		exec(`UPDATE evidence.tree_nodes SET hash = set_byte(hash, 0, get_byte(hash, 0) # 1) WHERE level = $1 AND idx = $2`, m.Count, int64(m.Index))
	case "delete_tree_state":
		exec(`DELETE FROM evidence.head`)
	case "delete_checkpoints":
		exec(`DELETE FROM evidence.checkpoints`)
	case "checkpoint_unknown_key":
		var origin string
		var root []byte
		if err := db.Pool.QueryRow(ctx, `SELECT origin FROM evidence.journal`).Scan(&origin); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `SELECT root FROM evidence.checkpoints ORDER BY size DESC LIMIT 1`).Scan(&root); err != nil {
			t.Fatal(err)
		}
		skey, _, _ := note.GenerateKey(nil, origin)
		s, _ := note.NewSigner(skey)
		msg, _ := note.Sign(&note.Note{Text: evidence.Checkpoint{Origin: origin, Size: 10, Root: root}.Body()}, s)
		exec(`INSERT INTO evidence.checkpoints (size, root, key_id, note, created_at_ns) VALUES (10, $1, $2, $3, 0)`, root, evidence.KeyID(s.KeyHash()), string(msg))
	case "forge_signature":
		var n string
		if err := db.Pool.QueryRow(ctx, `SELECT note FROM evidence.checkpoints`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		body, sigLine, _ := strings.Cut(n, "\n\n")
		name, b64, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(sigLine, "\n"), "— "), " ")
		sig, _ := base64.StdEncoding.DecodeString(b64)
		sig[10] ^= 0x01
		exec(`UPDATE evidence.checkpoints SET note = $1`, body+"\n\n— "+name+" "+base64.StdEncoding.EncodeToString(sig)+"\n")
	case "foreign_key": // another journal's key file given to the replica (and its public keys listed)
		other := journal10(t)
		key, err := os.ReadFile(other.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b.keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
		if m.WithPublicKeys {
			copyPublicKeys(t, other.pool(t), db)
		}
	case "unsigned_tail":
		storetest.Fill(t, replica(t, b, evidence.Options{}), 10, m.Count, "s")
	case "purge_then_leaf": // purge the first Count records' payloads, then flip a bit of record Index's leaf hash
		storetest.PurgeFirst(t, replica(t, b, evidence.Options{}), m.Count)
		exec(`UPDATE evidence.records SET leaf_hash = set_byte(leaf_hash, 0, get_byte(leaf_hash, 0) # 1) WHERE idx = $1`, int64(m.Index))
	case "blank_payload": // empty record Index's canonical bytes by hand, with no purge log row
		exec(`UPDATE evidence.records SET canonical = ''::bytea WHERE idx = $1`, int64(m.Index))
	case "rollback": // keep a checkpoint after Count more records, then restore the older state
		return rollback(t, b, db, m.Count)
	default:
		t.Fatalf("unknown mutation %q", m.Op)
	}
	return nil
}

// castFor is value as the column's type (the vectors give text).
func castFor(column, value string) any {
	if column == "duration_ms" {
		var n int64
		for _, c := range value {
			n = n*10 + int64(c-'0')
		}
		return n
	}
	return value
}

// copyPublicKeys replaces dst's listed public keys with src's.
func copyPublicKeys(t *testing.T, src, dst *pgdb.DB) {
	t.Helper()
	ctx := context.Background()
	var id, vkey string
	if err := src.Pool.QueryRow(ctx, `SELECT key_id, verifier_key FROM evidence.public_keys`).Scan(&id, &vkey); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Pool.Exec(ctx, `DELETE FROM evidence.public_keys`); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Pool.Exec(ctx, `INSERT INTO evidence.public_keys (key_id, verifier_key, added_at_ns) VALUES ($1, $2, 0)`, id, vkey); err != nil {
		t.Fatal(err)
	}
}

// rollback appends count records and signs them, then puts the database
// back as it was before (a restored backup) and returns the kept
// checkpoint.
func rollback(t *testing.T, b backend, db *pgdb.DB, count int) []byte {
	t.Helper()
	ctx := context.Background()
	var size, wm int64
	var hashes []byte
	if err := db.Pool.QueryRow(ctx, `SELECT size, hashes, outbox_watermark FROM evidence.head`).Scan(&size, &hashes, &wm); err != nil {
		t.Fatal(err)
	}
	j := replica(t, b, evidence.Options{})
	storetest.Fill(t, j, int(size), count, "s")
	kept, err := j.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM evidence.records WHERE idx >= $1`,
		`DELETE FROM evidence.checkpoints WHERE size > $1`,
		`DELETE FROM evidence.tree_nodes WHERE (idx + 1) * (1::bigint << level) > $1`,
	} {
		if _, err := db.Pool.Exec(ctx, q, size); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE evidence.head SET size = $1, hashes = $2, outbox_watermark = $3`, size, hashes, wm); err != nil {
		t.Fatal(err)
	}
	return []byte(kept.Note)
}

// TestTamperVectors applies every named vector to a journal on
// PostgreSQL: Verify reports exactly what it reports on SQLite, and
// opening the journal does what the vector says.
func TestTamperVectors(t *testing.T) {
	for _, v := range storetest.Vectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			b := journal10(t)
			storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
			from := applyMutation(t, v, b)
			v.Check(t, b.Verify(t, evidence.VerifyOptions{From: from}))
			_, err := evidencepg.Open(context.Background(), b.pool(t), b.keyFile, evidence.Options{})
			v.CheckOpen(t, err)
		})
	}
}
