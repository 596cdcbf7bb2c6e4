package evidencedb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
)

// snapshot is everything a refused operation must leave unchanged: every
// file of the data directory, byte for byte, and the journal's row counts.
type snapshot struct {
	files             map[string][32]byte
	records, checkpts int
}

func takeSnapshot(t *testing.T, dir string) snapshot {
	t.Helper()
	s := snapshot{files: map[string][32]byte{}}
	for _, name := range listDir(t, dir) {
		s.files[name] = fileSum(t, filepath.Join(dir, name))
	}
	db := rawDB(t, dir)
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM records), (SELECT COUNT(*) FROM checkpoints)`).Scan(&s.records, &s.checkpts); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return s
}

func (s snapshot) mustEqual(t *testing.T, o snapshot) {
	t.Helper()
	if s.records != o.records || s.checkpts != o.checkpts {
		t.Fatalf("rows changed: %d records, %d checkpoints -> %d, %d", s.records, s.checkpts, o.records, o.checkpts)
	}
	if len(s.files) != len(o.files) {
		t.Fatalf("files changed: %v -> %v", s.files, o.files)
	}
	for name, sum := range s.files {
		if o.files[name] != sum {
			t.Fatalf("%s changed", name)
		}
	}
}

func loadKey(t *testing.T, dir string) *evidence.Key {
	t.Helper()
	k, err := evidence.LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// wantRefused opens dir and wants the start refusal naming every id in ids,
// with nothing written.
func wantRefused(t *testing.T, dir string, ids ...string) {
	t.Helper()
	before := takeSnapshot(t, dir)
	j, err := evidencedb.Open(context.Background(), dir, evidence.Options{})
	if err == nil {
		j.Close()
		t.Fatal("the journal opened with a key that is not its own")
	}
	if failure.KindOf(err) != failure.Unavailable || !errors.Is(err, evidencedb.ErrForeignKey) {
		t.Fatalf("open: %v", err)
	}
	for _, id := range ids {
		if !strings.Contains(err.Error(), id) {
			t.Fatalf("the refusal does not name key %s: %v", id, err)
		}
	}
	before.mustEqual(t, takeSnapshot(t, dir))
}

// TestForeignKeyRefusedAtOpen: another journal's evidence.key copied into a
// data directory is refused at start, naming both key ids, and nothing is
// written (today it was adopted silently).
func TestForeignKeyRefusedAtOpen(t *testing.T) {
	dir, cp := journal10(t)
	other, _ := journal10(t)
	own, foreign := loadKey(t, dir), loadKey(t, other)
	if own.ID == foreign.ID || cp.KeyID != own.ID {
		t.Fatalf("keys %s %s, checkpoint %s", own.ID, foreign.ID, cp.KeyID)
	}
	copyFile(t, filepath.Join(other, evidence.KeyFile), filepath.Join(dir, evidence.KeyFile))
	wantRefused(t, dir, foreign.ID, own.ID)

	// Copying its evidence.pub as well changes nothing.
	copyFile(t, filepath.Join(other, evidence.PublicKeysFile), filepath.Join(dir, evidence.PublicKeysFile))
	wantRefused(t, dir, foreign.ID, own.ID)
}

// TestForeignKeyRefusedWithoutCheckpoint: with records and no checkpoint
// the records' key decides.
func TestForeignKeyRefusedWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 3, "s")
	own := j.KeyID()
	j.Close()
	other, _ := journal10(t)
	foreign := loadKey(t, other)
	copyFile(t, filepath.Join(other, evidence.KeyFile), filepath.Join(dir, evidence.KeyFile))
	wantRefused(t, dir, foreign.ID, own)
}

// TestNewestCheckpointMustVerify: the key signed earlier checkpoints, but
// the newest is signed by a key neither evidence.key nor evidence.pub holds.
func TestNewestCheckpointMustVerify(t *testing.T) {
	dir, cp := journal10(t)
	j := open(t, dir, evidence.Options{})
	fill(t, j, 10, 2, "s")
	j.Close()
	skey, _, err := note.GenerateKey(nil, cp.Origin)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	db := rawDB(t, dir)
	var root []byte
	db.QueryRow(`SELECT root FROM checkpoints`).Scan(&root)
	msg, _ := note.Sign(&note.Note{Text: evidence.Checkpoint{Origin: cp.Origin, Size: 10, Root: root}.Body()}, s)
	exec(t, db, `INSERT INTO checkpoints (size, root, key_id, note, created_at_ns) VALUES (10, ?, ?, ?, 0)`, root, evidence.KeyID(s.KeyHash()), string(msg))
	db.Close()
	wantRefused(t, dir, evidence.KeyID(s.KeyHash()), cp.KeyID)
}

// TestEmptyJournalAcceptsAnyKey: with no record and no checkpoint there is
// nothing a key could contradict.
func TestEmptyJournalAcceptsAnyKey(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, evidence.Options{}).Close()
	other, _ := journal10(t)
	copyFile(t, filepath.Join(other, evidence.KeyFile), filepath.Join(dir, evidence.KeyFile))
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	if j.KeyID() != loadKey(t, other).ID {
		t.Fatalf("key %s", j.KeyID())
	}
}

func TestRotateKey(t *testing.T) {
	dir, cp10 := journal10(t)
	j := open(t, dir, evidence.Options{})
	fill(t, j, 10, 3, "s") // an unsigned tail of 3
	j.Close()
	old := loadKey(t, dir)
	r, err := evidencedb.RotateKey(context.Background(), dir, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	nk := loadKey(t, dir)
	if r.OldKeyID != old.ID || r.NewKeyID != nk.ID || nk.ID == old.ID || nk.Signer.Name() != old.Signer.Name() {
		t.Fatalf("rotation %+v, key now %s", r, nk.ID)
	}
	// The head (13) is signed by the old key, then by the new one.
	if r.OldCheckpoint == nil || r.OldCheckpoint.Size != 13 || r.OldCheckpoint.KeyID != old.ID ||
		r.NewCheckpoint == nil || r.NewCheckpoint.Size != 13 || r.NewCheckpoint.KeyID != nk.ID ||
		!r.NewCheckpoint.Checkpoint.Equal(r.OldCheckpoint.Checkpoint) {
		t.Fatalf("checkpoints %+v %+v", r.OldCheckpoint, r.NewCheckpoint)
	}
	for _, name := range []string{evidence.KeyFile, evidence.RetiredKeyFile(old.ID)} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, err, st)
		}
	}
	if r.RetiredKeyFile != filepath.Join(dir, evidence.RetiredKeyFile(old.ID)) {
		t.Fatalf("retired at %s", r.RetiredKeyFile)
	}
	if b, _ := os.ReadFile(r.RetiredKeyFile); !strings.HasPrefix(string(b), "PRIVATE+KEY+"+old.Signer.Name()+"+") {
		t.Fatal("the retired file does not hold the old key")
	}
	pubs, _ := evidence.LoadPublicKeys(dir)
	if !slices.Equal(pubs, []string{old.VerifierKey, nk.VerifierKey}) {
		t.Fatalf("evidence.pub %v", pubs)
	}
	want := []string{evidencedb.FileName, evidence.KeyFile, evidence.RetiredKeyFile(old.ID), evidence.PublicKeysFile}
	slices.Sort(want)
	if got := listDir(t, dir); !slices.Equal(got, want) { // no temporary file left
		t.Fatalf("data directory %v, want %v", got, want)
	}

	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.LastCheckpoint.KeyID != nk.ID || rep.Checkpoints != 3 || rep.Unanchored != 0 {
		t.Fatalf("%+v", rep)
	}
	// Old checkpoints still verify with the retired key alone: only the
	// new key's checkpoint is unknown to it.
	rep = verify(t, dir, evidence.VerifyOptions{TrustedKeys: []string{old.VerifierKey}})
	wantKinds(t, rep, evidence.FindingUnknownKey)
	if rep.Totals[evidence.FindingUnknownKey] != 1 || !hasFinding(rep, evidence.ScopeCheckpoint, evidence.FindingUnknownKey, 13) ||
		rep.LastCheckpoint.KeyID != old.ID || rep.LastCheckpoint.Size != 13 {
		t.Fatalf("%v\n%s", rep.Totals, dump(rep))
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{From: []byte(cp10.Note)}))

	// The journal reopens with the new key and goes on.
	j = open(t, dir, evidence.Options{})
	if j.KeyID() != nk.ID {
		t.Fatalf("key id %s, want %s", j.KeyID(), nk.ID)
	}
	fill(t, j, 13, 2, "s")
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
	rep = verify(t, dir, evidence.VerifyOptions{TrustedKeys: []string{nk.VerifierKey}})
	if rep.Totals[evidence.FindingUnknownKey] != 13+2 { // 13 old records, 2 old checkpoints
		t.Fatalf("%v", rep.Totals)
	}

	// A crash after the checkpoints committed but before evidence.key was
	// replaced leaves the old key in place: it still opens.
	copyFile(t, r.RetiredKeyFile, filepath.Join(dir, evidence.KeyFile))
	j = open(t, dir, evidence.Options{})
	if j.KeyID() != old.ID {
		t.Fatalf("key id %s", j.KeyID())
	}
	j.Close()
}

// TestRotateKeyUnsignedAndEmpty: a journal with records and no checkpoint
// (verify's only finding is no_checkpoint) is signed by both keys; an
// empty journal just gets a new key.
func TestRotateKeyUnsignedAndEmpty(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 3, "s")
	j.Close()
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}), evidence.FindingNoCheckpoint)
	r, err := evidencedb.RotateKey(context.Background(), dir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r.OldCheckpoint == nil || r.OldCheckpoint.Size != 3 || r.NewCheckpoint == nil || r.NewCheckpoint.KeyID != r.NewKeyID {
		t.Fatalf("%+v", r)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
	open(t, dir, evidence.Options{}).Close()

	empty := t.TempDir()
	open(t, empty, evidence.Options{}).Close()
	r, err = evidencedb.RotateKey(context.Background(), empty, time.Now)
	if err != nil || r.OldCheckpoint != nil || r.NewCheckpoint != nil || loadKey(t, empty).ID != r.NewKeyID {
		t.Fatalf("%+v %v", r, err)
	}
	rep := verify(t, empty, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if len(rep.TrustedKeys) != 2 {
		t.Fatalf("trusted %v", rep.TrustedKeys)
	}
	if _, err := evidencedb.RotateKey(context.Background(), t.TempDir(), time.Now); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("no journal: %v", err)
	}
}

// TestRotateKeyRefused: while the journal is open elsewhere, with a key
// that is not the journal's, or for a journal that does not verify, the
// rotation is refused and nothing changes.
func TestRotateKeyRefused(t *testing.T) {
	ctx := context.Background()
	dir, _ := journal10(t)
	before := takeSnapshot(t, dir)
	j := open(t, dir, evidence.Options{})
	_, err := evidencedb.RotateKey(ctx, dir, time.Now)
	j.Close()
	if failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("rotate while open: %v", err)
	}
	before.mustEqual(t, takeSnapshot(t, dir))

	other, _ := journal10(t)
	copyFile(t, filepath.Join(other, evidence.KeyFile), filepath.Join(dir, evidence.KeyFile))
	before = takeSnapshot(t, dir)
	if _, err := evidencedb.RotateKey(ctx, dir, time.Now); failure.KindOf(err) != failure.Unavailable || !errors.Is(err, evidencedb.ErrForeignKey) {
		t.Fatalf("rotate with a foreign key: %v", err)
	}
	before.mustEqual(t, takeSnapshot(t, dir))

	dir, _ = journal10(t)
	db := rawDB(t, dir)
	setRecord(t, db, 6, "tool", "write_files")
	db.Close()
	before = takeSnapshot(t, dir)
	if _, err := evidencedb.RotateKey(ctx, dir, time.Now); failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "bad_leaf") {
		t.Fatalf("rotate a tampered journal: %v", err)
	}
	before.mustEqual(t, takeSnapshot(t, dir))
}
