package evidencedb_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/failure"
)

var t0 = storetest.T0

func digest(s string) string { return storetest.Digest(s) }

func rec(i int, b evidence.Binding, sess string) evidence.Record { return storetest.Rec(i, b, sess) }

func open(t testing.TB, dir string, opts evidence.Options) *evidencedb.Journal {
	t.Helper()
	j, err := evidencedb.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func fill(t testing.TB, j *evidencedb.Journal, from, n int, sess string) []evidence.Entry {
	t.Helper()
	return storetest.Fill(t, j, from, n, sess)
}

func verify(t *testing.T, dir string, opts evidence.VerifyOptions) evidence.Report {
	t.Helper()
	rep, err := evidencedb.Verify(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func fileSum(t *testing.T, path string) [32]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func listDir(t *testing.T, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// rawDB opens evidence.db for tampering, as an attacker with file access.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, evidencedb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// recordTables are the two tables a record is stored in (migration 0005:
// its leaf and, until purged, its payload); leafColumns the columns of
// the first, every other record column is in the second.
var (
	recordTables = []string{"record_leaves", "record_payloads"}
	leafColumns  = []string{"idx", "invocation_id", "key_id", "at_ns", "claim_recording_session_id",
		"claim_business_session_id", "verified_session_id", "session_binding", "leaf_hash", "replay_of"}
)

// setRecord edits record idx as someone with write access to the data
// directory would: sets are column, value pairs, each written to the
// table that stores its column.
func setRecord(t *testing.T, db *sql.DB, idx uint64, sets ...any) {
	t.Helper()
	cols := map[string][]string{}
	vals := map[string][]any{}
	for i := 0; i < len(sets); i += 2 {
		col := sets[i].(string)
		table := recordTables[1]
		if slices.Contains(leafColumns, col) {
			table = recordTables[0]
		}
		cols[table] = append(cols[table], col+" = ?")
		vals[table] = append(vals[table], sets[i+1])
	}
	for _, table := range recordTables {
		if len(cols[table]) > 0 {
			exec(t, db, `UPDATE `+table+` SET `+strings.Join(cols[table], ", ")+` WHERE idx = ?`, append(vals[table], int64(idx))...)
		}
	}
}

// execRecords runs q (with %s for the table) on both record tables.
func execRecords(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	for _, table := range recordTables {
		exec(t, db, fmt.Sprintf(q, table), args...)
	}
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantKinds(t *testing.T, rep evidence.Report, want ...evidence.FindingKind) {
	t.Helper()
	storetest.WantKinds(t, rep, want...)
}

func dump(rep evidence.Report) string { return storetest.Dump(rep) }

func hasFinding(rep evidence.Report, scope string, k evidence.FindingKind, index uint64) bool {
	return storetest.HasFinding(rep, scope, k, index)
}

// TestVerifyChangesNoFile: offline verification of a data directory
// leaves evidence.db and the directory byte for byte as they were (the
// journal's contract is storetest's).
func TestVerifyChangesNoFile(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{CheckpointEvery: 5})
	fill(t, j, 0, 12, "wc_sess_a")
	cp, err := j.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db := filepath.Join(dir, evidencedb.FileName)
	before := fileSum(t, db)
	filesBefore := listDir(t, dir)
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{From: []byte(cp.Note)}))
	if fileSum(t, db) != before {
		t.Fatal("Verify modified evidence.db")
	}
	if got := listDir(t, dir); !slices.Equal(got, filesBefore) {
		t.Fatalf("Verify changed the data directory: %v -> %v", filesBefore, got)
	}
}

// journal10 builds a journal of 10 records with a checkpoint at 10 and
// returns its directory and that checkpoint.
func journal10(t *testing.T) (string, evidence.SignedCheckpoint) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 10, "s")
	cp, err := j.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	return dir, cp
}

func copyFile(t *testing.T, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRollbackDetectedWithFrom(t *testing.T) {
	dir, cpA := journal10(t)
	db := filepath.Join(dir, evidencedb.FileName)
	backup := filepath.Join(t.TempDir(), "old.db")
	copyFile(t, db, backup) // closed cleanly: no WAL to copy
	j := open(t, dir, evidence.Options{})
	fill(t, j, 10, 5, "s")
	cpB, _ := j.Checkpoint(context.Background())
	j.Close()
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{From: []byte(cpA.Note)})) // append-only growth is consistent

	copyFile(t, backup, db) // roll back to the older copy
	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep) // on its own the old copy is self-consistent
	rep = verify(t, dir, evidence.VerifyOptions{From: []byte(cpB.Note)})
	wantKinds(t, rep, evidence.FindingRollback)

	// A rewritten history of the same size is inconsistent with the kept checkpoint.
	raw := rawDB(t, dir)
	exec(t, raw, `DELETE FROM checkpoints`)
	var c []byte
	raw.QueryRow(`SELECT canonical FROM records WHERE idx = 1`).Scan(&c)
	h, r, _ := evidence.ParseCanonical(c)
	r.DurationMS++
	c2, _ := r.Canonical(h.JournalID, h.KeyID, h.Index)
	setRecord(t, raw, 1, "duration_ms", r.DurationMS, "canonical", c2, "leaf_hash", evidence.LeafHash(c2))
	raw.Close()
	// Without its checkpoints nothing vouches for the records (no_checkpoint);
	// the kept checkpoint also shows the rewrite, and so does the stored
	// tree index, which still holds the original tree (bad_node).
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}), evidence.FindingBadNode, evidence.FindingNoCheckpoint)
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{From: []byte(cpA.Note)}), evidence.FindingBadNode, evidence.FindingInconsistent, evidence.FindingNoCheckpoint)
}

func TestMissingKeyRefusesToOpen(t *testing.T) {
	dir, _ := journal10(t)
	keyPath := filepath.Join(dir, evidence.KeyFile)
	os.Remove(keyPath)
	_, err := evidencedb.Open(context.Background(), dir, evidence.Options{})
	if failure.KindOf(err) != failure.Unavailable || !strings.Contains(err.Error(), "restore") || !strings.Contains(err.Error(), evidence.KeyFile) {
		t.Fatalf("open without key: %v", err)
	}
	if _, err := os.Stat(keyPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a key was created for a non-empty journal")
	}
	os.WriteFile(keyPath, []byte("garbage\n"), 0o600)
	if _, err := evidencedb.Open(context.Background(), dir, evidence.Options{}); failure.KindOf(err) != failure.Unavailable {
		t.Fatalf("open with an unreadable key: %v", err)
	}
	if b, _ := os.ReadFile(keyPath); string(b) != "garbage\n" {
		t.Fatal("the unreadable key was replaced")
	}
	// The journal still verifies offline through evidence.pub.
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))

	// A brand-new journal creates its key, mode 0600.
	fresh := t.TempDir()
	j := open(t, fresh, evidence.Options{Origin: "example.test/evidence"})
	j.Close()
	st, err := os.Stat(filepath.Join(fresh, evidence.KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new key: %v %v", err, st)
	}
	if _, err := evidencedb.Open(context.Background(), t.TempDir(), evidence.Options{Origin: "bad origin+x"}); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("invalid origin: %v", err)
	}
	if _, err := evidencedb.Open(context.Background(), fresh, evidence.Options{Origin: "other.test/x"}); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("changed origin: %v", err)
	}
}

// TestResyncAfterOutsideWrite: when the table moves without the journal's
// range (here: another connection appends a valid row; in production: a
// failed group commit after the range was extended), the next append
// rebuilds the range instead of reusing an index or leaving a gap.
func TestResyncAfterOutsideWrite(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	fill(t, j, 0, 3, "s")
	r := rec(3, evidence.BindingSessionless, "s")
	c, err := r.Canonical(j.JournalID(), j.KeyID(), 3)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	exec(t, db, `INSERT INTO record_leaves SELECT 3, 'inv-000003', key_id, at_ns, claim_recording_session_id,
		claim_business_session_id, verified_session_id, session_binding, ?, replay_of FROM record_leaves WHERE idx = 1`, evidence.LeafHash(c))
	exec(t, db, `INSERT INTO record_payloads SELECT 3, tool, source, transport_era, claim_project, claim_principal_kind,
		claim_client_window, verified_project, verified_authority, verified_lifecycle, binding_reasons, checked_keys,
		skipped_keys, session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest, ?
		FROM record_payloads WHERE idx = 1`, c)
	// Row 1 was sessionless too (kinds cycle), but its digests differ from
	// rec(3): make the columns match the canonical bytes.
	setRecord(t, db, 3, "at_ns", r.At.UnixNano(), "duration_ms", r.DurationMS, "arguments_digest", r.ArgumentsDigest, "result_digest", r.ResultDigest)
	e := fill(t, j, 4, 1, "s")[0]
	if e.Index != 4 {
		t.Fatalf("index %d, want 4", e.Index)
	}
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}
