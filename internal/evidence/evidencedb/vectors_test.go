package evidencedb_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
)

// vector is one file of testdata/tamper: a named mutation of a fresh
// journal (10 records, a checkpoint at size 10) and exactly what
// `webcodex evidence verify` and opening the journal must then report.
type vector struct {
	Description string `toml:"description"`
	Mutation    struct {
		// Op names the mutation (see applyMutation).
		Op     string `toml:"op"`
		Index  uint64 `toml:"index"`
		With   uint64 `toml:"with"`
		Column string `toml:"column"`
		Value  string `toml:"value"`
		Count  int    `toml:"count"`
		// WithPublicKeys: foreign_key also copies the other journal's
		// evidence.pub.
		WithPublicKeys bool `toml:"with_public_keys"`
	} `toml:"mutation"`
	Expect struct {
		// Findings is the exact multiset of (scope, kind, index).
		Findings []wantFinding `toml:"findings"`
		// OK and Unanchored are the report's counts.
		OK         int64  `toml:"ok"`
		Unanchored uint64 `toml:"unanchored"`
		// Open is what evidencedb.Open then does: "ok", "refused_key"
		// (ErrForeignKey) or "refused" (any other error).
		Open string `toml:"open"`
	} `toml:"expect"`
}

type wantFinding struct {
	Scope string  `toml:"scope"`
	Kind  string  `toml:"kind"`
	Index *uint64 `toml:"index"`
}

func (f wantFinding) String() string {
	if f.Index == nil {
		return f.Scope + "/" + f.Kind
	}
	return fmt.Sprintf("%s/%s@%d", f.Scope, f.Kind, *f.Index)
}

// mutableColumns are the record columns a vector may set.
var mutableColumns = []string{"tool", "outcome", "error_kind", "key_id", "claim_project", "session_binding", "duration_ms"}

// applyMutation tampers with the journal in dir as someone with write
// access to the data directory would, and returns the text of a
// checkpoint to verify --from, if the mutation keeps one.
func applyMutation(t *testing.T, v vector, dir string) []byte {
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
		exec(t, db, `UPDATE records SET canonical = ? WHERE idx = ?`, c, m.Index)
	case "set_column":
		if !slices.Contains(mutableColumns, m.Column) {
			t.Fatalf("column %q is not in %v", m.Column, mutableColumns)
		}
		exec(t, db, `UPDATE records SET `+m.Column+` = ? WHERE idx = ?`, m.Value, m.Index)
	case "reencode": // rewrite the outcome consistently: columns, canonical bytes and leaf agree
		h, r, err := evidence.ParseCanonical(canonical(m.Index))
		if err != nil {
			t.Fatal(err)
		}
		r.Outcome = evidence.OutcomeFailed
		c, _ := r.Canonical(h.JournalID, h.KeyID, h.Index)
		exec(t, db, `UPDATE records SET outcome = ?, canonical = ?, leaf_hash = ? WHERE idx = ?`, string(r.Outcome), c, evidence.LeafHash(c), m.Index)
	case "schema_version":
		c := canonical(m.Index)
		c[5] = byte(m.Count)
		exec(t, db, `UPDATE records SET canonical = ?, leaf_hash = ? WHERE idx = ?`, c, evidence.LeafHash(c), m.Index)
	case "delete_row":
		exec(t, db, `DELETE FROM records WHERE idx = ?`, m.Index)
	case "swap_rows":
		exec(t, db, `UPDATE records SET idx = -1 WHERE idx = ?`, m.Index)
		exec(t, db, `UPDATE records SET idx = ? WHERE idx = ?`, m.Index, m.With)
		exec(t, db, `UPDATE records SET idx = ? WHERE idx = -1`, m.With)
	case "truncate_tail":
		exec(t, db, `DELETE FROM records WHERE idx >= ?`, m.Index)
	case "replay": // rebuild the table without its UNIQUE constraint, then copy row Index to the end
		exec(t, db, `CREATE TABLE r2 AS SELECT * FROM records`)
		exec(t, db, `DROP TABLE records`)
		exec(t, db, `ALTER TABLE r2 RENAME TO records`)
		exec(t, db, `INSERT INTO records SELECT (SELECT MAX(idx) + 1 FROM records), invocation_id, key_id, at_ns, tool, source, transport_era,
			claim_recording_session_id, claim_business_session_id, claim_project, claim_principal_kind, claim_client_window,
			verified_session_id, verified_project, verified_authority, verified_lifecycle, session_binding, binding_reasons,
			checked_keys, skipped_keys, session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest,
			canonical, leaf_hash, replay_of FROM records WHERE idx = ?`, m.Index)
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

// TestTamperVectors applies every named vector in testdata/tamper to a real
// journal and checks exactly the findings it lists, the ok and unanchored
// counts, and what opening the journal does.
func TestTamperVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "tamper", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".toml"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var v vector
			dec := toml.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if v.Description == "" || v.Expect.Open == "" {
				t.Fatalf("%s: description and expect.open are required", file)
			}
			dir, _ := journal10(t)
			wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
			from := applyMutation(t, v, dir)
			rep := verify(t, dir, evidence.VerifyOptions{From: from})

			var got, want []string
			for _, f := range rep.Findings {
				got = append(got, wantFinding{Scope: f.Scope, Kind: string(f.Kind), Index: f.Index}.String())
			}
			for _, f := range v.Expect.Findings {
				want = append(want, f.String())
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || rep.FindingsTruncated {
				t.Fatalf("findings\n got %v\nwant %v\n%s", got, want, dump(rep))
			}
			var total int64
			for _, n := range rep.Totals {
				total += n
			}
			if total != int64(len(want)) || rep.Clean != (len(want) == 0) {
				t.Fatalf("totals %v, clean %v", rep.Totals, rep.Clean)
			}
			if rep.OK != v.Expect.OK || rep.Unanchored != v.Expect.Unanchored {
				t.Fatalf("ok %d unanchored %d, want %d and %d", rep.OK, rep.Unanchored, v.Expect.OK, v.Expect.Unanchored)
			}

			opened := "ok"
			j, err := evidencedb.Open(context.Background(), dir, evidence.Options{})
			switch {
			case err == nil:
				j.Close()
			case errors.Is(err, evidencedb.ErrForeignKey):
				opened = "refused_key"
			default:
				opened = "refused"
			}
			if opened != v.Expect.Open {
				t.Fatalf("open: %s (%v), want %s", opened, err, v.Expect.Open)
			}
		})
	}
}
