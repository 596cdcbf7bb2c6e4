package evidencedb_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
)

// applyMutation tampers with the journal in dir as someone with write
// access to the data directory would, and returns the text of a
// checkpoint to verify --from, if the mutation keeps one.
func applyMutation(t *testing.T, v storetest.Vector, dir string) []byte {
	t.Helper()
	m := v.Mutation
	db := rawDB(t, dir)
	defer db.Close()
	canonical := func(i uint64) []byte {
		var c []byte
		if err := db.QueryRow(`SELECT canonical FROM records WHERE idx = ?`, i).Scan(&c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		return c
	}
	switch m.Op {
	case "canonical_byte": // flip one bit of the tool name inside the hashed bytes
		c := canonical(m.Index)
		c[bytes.Index(c, []byte("read_files"))] ^= 0x01
		setRecord(t, db, m.Index, "canonical", c)
	case "set_column":
		if !slices.Contains(storetest.MutableColumns, m.Column) {
			t.Fatalf("column %q is not in %v", m.Column, storetest.MutableColumns)
		}
		setRecord(t, db, m.Index, m.Column, m.Value)
	case "reencode": // rewrite the outcome consistently: columns, canonical bytes and leaf agree
		h, r, err := evidence.ParseCanonical(canonical(m.Index))
		if err != nil {
			t.Fatal(err)
		}
		r.Outcome = evidence.OutcomeFailed
		c, _ := r.Canonical(h.JournalID, h.KeyID, h.Index)
		setRecord(t, db, m.Index, "outcome", string(r.Outcome), "canonical", c, "leaf_hash", evidence.LeafHash(c))
	case "schema_version":
		c := canonical(m.Index)
		c[5] = byte(m.Count)
		setRecord(t, db, m.Index, "canonical", c, "leaf_hash", evidence.LeafHash(c))
	case "delete_row":
		execRecords(t, db, `DELETE FROM %s WHERE idx = ?`, m.Index)
	case "swap_rows":
		execRecords(t, db, `UPDATE %s SET idx = -1 WHERE idx = ?`, m.Index)
		execRecords(t, db, `UPDATE %s SET idx = ? WHERE idx = ?`, m.Index, m.With)
		execRecords(t, db, `UPDATE %s SET idx = ? WHERE idx = -1`, m.With)
	case "truncate_tail":
		execRecords(t, db, `DELETE FROM %s WHERE idx >= ?`, m.Index)
	case "replay": // rebuild the table without its UNIQUE constraint, then copy row Index to the end
		var view string
		if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'view' AND name = 'records'`).Scan(&view); err != nil {
			t.Fatal(err)
		}
		exec(t, db, `DROP VIEW records`)
		exec(t, db, `CREATE TABLE l2 AS SELECT * FROM record_leaves`)
		exec(t, db, `DROP TABLE record_leaves`)
		exec(t, db, `ALTER TABLE l2 RENAME TO record_leaves`)
		exec(t, db, view)
		exec(t, db, `INSERT INTO record_payloads SELECT (SELECT MAX(idx) + 1 FROM record_leaves), tool, source, transport_era,
			claim_project, claim_principal_kind, claim_client_window, verified_project, verified_authority, verified_lifecycle,
			binding_reasons, checked_keys, skipped_keys, session_record_digest, outcome, error_kind, duration_ms,
			arguments_digest, result_digest, canonical FROM record_payloads WHERE idx = ?`, m.Index)
		exec(t, db, `INSERT INTO record_leaves SELECT (SELECT MAX(idx) + 1 FROM record_leaves), invocation_id, key_id, at_ns,
			claim_recording_session_id, claim_business_session_id, verified_session_id, session_binding, leaf_hash, replay_of
			FROM record_leaves WHERE idx = ?`, m.Index)
	case "tree_node": // flip one bit of the stored interior node (Count, Index)
		var h []byte
		if err := db.QueryRow(`SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?`, m.Count, m.Index).Scan(&h); err != nil {
			t.Fatalf("tree node (%d,%d): %v", m.Count, m.Index, err)
		}
		h[0] ^= 0x01
		exec(t, db, `UPDATE tree_nodes SET hash = ? WHERE level = ? AND idx = ?`, h, m.Count, m.Index)
	case "delete_tree_state":
		exec(t, db, `DELETE FROM tree_state`)
	case "delete_checkpoints":
		exec(t, db, `DELETE FROM checkpoints`)
	case "checkpoint_unknown_key": // the same head, signed by a key the data directory does not know
		var origin string
		var root []byte
		db.QueryRow(`SELECT v FROM meta WHERE k = 'origin'`).Scan(&origin)
		db.QueryRow(`SELECT root FROM checkpoints ORDER BY size DESC LIMIT 1`).Scan(&root)
		skey, _, _ := note.GenerateKey(nil, origin)
		s, _ := note.NewSigner(skey)
		msg, _ := note.Sign(&note.Note{Text: evidence.Checkpoint{Origin: origin, Size: 10, Root: root}.Body()}, s)
		exec(t, db, `INSERT INTO checkpoints (size, root, key_id, note, created_at_ns) VALUES (10, ?, ?, ?, 0)`, root, evidence.KeyID(s.KeyHash()), string(msg))
	case "forge_signature": // keep the key's name and hash, flip one byte of the Ed25519 signature
		var n string
		db.QueryRow(`SELECT note FROM checkpoints`).Scan(&n)
		body, sigLine, _ := strings.Cut(n, "\n\n")
		name, b64, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(sigLine, "\n"), "— "), " ")
		sig, _ := base64.StdEncoding.DecodeString(b64)
		sig[10] ^= 0x01
		exec(t, db, `UPDATE checkpoints SET note = ?`, body+"\n\n— "+name+" "+base64.StdEncoding.EncodeToString(sig)+"\n")
	case "foreign_key": // another journal's evidence.key (and evidence.pub) copied in
		db.Close()
		other, _ := journal10(t)
		copyFile(t, filepath.Join(other, evidence.KeyFile), filepath.Join(dir, evidence.KeyFile))
		if m.WithPublicKeys {
			copyFile(t, filepath.Join(other, evidence.PublicKeysFile), filepath.Join(dir, evidence.PublicKeysFile))
		}
	case "purge_then_leaf": // purge the first Count records' payloads, then flip a bit of record Index's leaf hash
		j := open(t, dir, evidence.Options{})
		storetest.PurgeFirst(t, j, m.Count)
		j.Close()
		var h []byte
		if err := db.QueryRow(`SELECT leaf_hash FROM records WHERE idx = ?`, m.Index).Scan(&h); err != nil {
			t.Fatal(err)
		}
		h[0] ^= 0x01
		setRecord(t, db, m.Index, "leaf_hash", h)
	case "blank_payload": // delete record Index's payload by hand, with no purge log row
		exec(t, db, `DELETE FROM record_payloads WHERE idx = ?`, m.Index)
	case "unsigned_tail": // Count more records appended after the checkpoint, none signed yet
		db.Close()
		j := open(t, dir, evidence.Options{})
		fill(t, j, 10, m.Count, "s")
		j.Close()
	case "rollback": // keep a checkpoint after Count more records, then restore the older file
		db.Close()
		path := filepath.Join(dir, evidencedb.FileName)
		old, err := os.ReadFile(path) // closed cleanly: no WAL beside it
		if err != nil {
			t.Fatal(err)
		}
		j := open(t, dir, evidence.Options{})
		fill(t, j, 10, m.Count, "s")
		kept, err := j.Checkpoint(context.Background())
		j.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, old, 0o600); err != nil {
			t.Fatal(err)
		}
		return []byte(kept.Note)
	default:
		t.Fatalf("unknown mutation %q", m.Op)
	}
	return nil
}

// TestTamperVectors applies every named vector in storetest's
// testdata/tamper to a real journal and checks exactly the findings it
// lists, the ok and unanchored counts, and what opening the journal does.
func TestTamperVectors(t *testing.T) {
	for _, v := range storetest.Vectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			dir, _ := journal10(t)
			wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
			from := applyMutation(t, v, dir)
			v.Check(t, verify(t, dir, evidence.VerifyOptions{From: from}))
			j, err := evidencedb.Open(context.Background(), dir, evidence.Options{})
			if err == nil {
				j.Close()
			}
			v.CheckOpen(t, err)
		})
	}
}
