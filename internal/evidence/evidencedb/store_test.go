package evidencedb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func digest(s string) string { return evidence.Digest([]byte(s)) }

// rec returns a valid record of binding b for session sess.
func rec(i int, b evidence.Binding, sess string) evidence.Record {
	r := evidence.Record{
		InvocationID: fmt.Sprintf("inv-%06d", i), At: t0.Add(time.Duration(i) * time.Millisecond),
		Tool: "read_files", Source: evidence.SourceMCP, TransportEra: "2025-11-25",
		Claim:   evidence.Claim{PrincipalKind: "api_token", ClientWindow: digest("window"), Project: "agent:local:demo"},
		Binding: b, Outcome: evidence.OutcomeOK, DurationMS: int64(i % 100),
		ArgumentsDigest: digest(fmt.Sprint("args", i)), ResultDigest: digest(fmt.Sprint("result", i)),
	}
	switch b {
	case evidence.BindingVerified:
		r.Claim.RecordingSessionID = sess
		r.Verified = evidence.Verified{SessionID: sess, Project: "agent:local:demo", Authority: "auth-1", Lifecycle: "active"}
		r.Reasons = []evidence.Reason{evidence.ReasonStoreMatch}
		r.CheckedKeys = []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyProject}
		r.SkippedKeys = []evidence.CheckKey{evidence.KeyLifecycle}
		r.SessionRecordDigest = digest("session-record")
	case evidence.BindingSessionless:
		r.Claim.BusinessSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNoRecorderRequested}
	case evidence.BindingInvalidClaim:
		r.Claim.RecordingSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonSessionClosed, evidence.ReasonProjectMismatch}
		r.CheckedKeys = []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyProject, evidence.KeyLifecycle}
		r.Outcome, r.ErrorKind, r.ResultDigest = evidence.OutcomeRefused, "session_closed", ""
	case evidence.BindingUnknown:
		r.Claim.RecordingSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNotChecked}
		r.Outcome, r.ErrorKind = evidence.OutcomeRefused, "invalid_arguments"
	}
	return r
}

var kinds = []evidence.Binding{evidence.BindingVerified, evidence.BindingSessionless, evidence.BindingInvalidClaim, evidence.BindingUnknown}

func open(t testing.TB, dir string, opts evidence.Options) *evidencedb.Journal {
	t.Helper()
	j, err := evidencedb.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// fill appends n records (bindings cycling) and returns their entries.
func fill(t testing.TB, j *evidencedb.Journal, from, n int, sess string) []evidence.Entry {
	t.Helper()
	var out []evidence.Entry
	for i := from; i < from+n; i++ {
		e, err := j.Append(context.Background(), rec(i, kinds[i%len(kinds)], sess))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
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

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func kindsOf(rep evidence.Report) []evidence.FindingKind { return rep.Kinds() }

func wantKinds(t *testing.T, rep evidence.Report, want ...evidence.FindingKind) {
	t.Helper()
	got := kindsOf(rep)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("finding kinds = %v, want %v\n%s", got, want, dump(rep))
	}
	if rep.Clean != (len(want) == 0) {
		t.Fatalf("clean = %v with findings %v", rep.Clean, got)
	}
}

func dump(rep evidence.Report) string {
	b, _ := json.MarshalIndent(rep.Findings, "", " ")
	return string(b)
}

func hasFinding(rep evidence.Report, scope string, k evidence.FindingKind, index uint64) bool {
	for _, f := range rep.Findings {
		if f.Scope == scope && f.Kind == k && f.Index != nil && *f.Index == index {
			return true
		}
	}
	return false
}

func TestAppendQueryAndVerifyClean(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := open(t, dir, evidence.Options{CheckpointEvery: 5})
	es := fill(t, j, 0, 12, "wc_sess_a")
	fill(t, j, 12, 3, "wc_sess_b")
	for i, e := range es {
		if e.Index != uint64(i) || !bytes.Equal(e.LeafHash, evidence.LeafHash(e.Canonical)) {
			t.Fatalf("entry %d: index %d", i, e.Index)
		}
	}
	got, err := j.SessionRecords(ctx, "wc_sess_a", 0)
	if err != nil || len(got) != 12 || got[0].Index != 11 || got[11].Index != 0 {
		t.Fatalf("session records: %v %d", err, len(got))
	}
	if got[0].Record.InvocationID != "inv-000011" || !got[0].Record.At.Equal(es[11].Record.At) {
		t.Fatalf("decoded %+v", got[0].Record)
	}
	if got, _ := j.SessionRecords(ctx, "wc_sess_a", 2); len(got) != 2 || got[0].Index != 11 {
		t.Fatalf("limit 2: %d", len(got))
	}
	if _, err := j.SessionRecords(ctx, "wc_sess_a", -1); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("negative limit: %v", err)
	}
	c, err := j.SessionCounts(ctx, "wc_sess_a")
	if err != nil || c != (evidence.Counts{Verified: 3, Sessionless: 3, InvalidClaim: 3, Unknown: 3}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	// Size-based checkpoints at 5 and 10; Checkpoint signs 15 and is idempotent.
	cp, err := j.Checkpoint(ctx)
	if err != nil || cp.Size != 15 {
		t.Fatalf("checkpoint %+v %v", cp, err)
	}
	cp2, _ := j.Checkpoint(ctx)
	latest, _ := j.Latest(ctx)
	if cp2.Note != cp.Note || latest.Note != cp.Note {
		t.Fatal("Checkpoint is not idempotent")
	}
	if !strings.HasPrefix(cp.Note, j.Origin()+"\n15\n") {
		t.Fatalf("note %q", cp.Note)
	}
	j.Close()

	db := filepath.Join(dir, evidencedb.FileName)
	before := fileSum(t, db)
	filesBefore := listDir(t, dir)
	var calls int
	rep := verify(t, dir, evidence.VerifyOptions{From: []byte(cp.Note), Progress: func(done, total uint64) { calls++ }})
	wantKinds(t, rep)
	if rep.Records != 15 || rep.OK != 15 || rep.Checkpoints != 3 || rep.LastCheckpoint.Size != 15 || !rep.HeadMatchesCheckpoint ||
		rep.From == nil || *rep.FirstIndex != 0 || *rep.LastIndex != 14 || calls == 0 {
		t.Fatalf("report %+v", rep)
	}
	if fileSum(t, db) != before {
		t.Fatal("Verify modified evidence.db")
	}
	if got := listDir(t, dir); !slices.Equal(got, filesBefore) {
		t.Fatalf("Verify changed the data directory: %v -> %v", filesBefore, got)
	}
	// Reopening continues the tree where it was.
	j = open(t, dir, evidence.Options{CheckpointEvery: 5})
	if e := fill(t, j, 15, 1, "wc_sess_b")[0]; e.Index != 15 {
		t.Fatalf("after reopen: index %d", e.Index)
	}
	j.Close()
	rep = verify(t, dir, evidence.VerifyOptions{From: []byte(cp.Note)})
	wantKinds(t, rep)
	if rep.Unanchored != 1 || rep.HeadMatchesCheckpoint {
		t.Fatalf("unanchored %d", rep.Unanchored)
	}
}

func TestAppendRejects(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	fill(t, j, 0, 2, "s")
	bad := rec(9, evidence.BindingVerified, "s")
	bad.Reasons = []evidence.Reason{evidence.ReasonNoRecorderRequested}
	if _, err := j.Append(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("inconsistent binding: %v", err)
	}
	bad = rec(9, evidence.BindingSessionless, "s")
	bad.Outcome = "maybe"
	if _, err := j.Append(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("unknown outcome: %v", err)
	}
	if _, err := j.Append(ctx, rec(1, evidence.BindingSessionless, "s")); failure.KindOf(err) != failure.Conflict {
		t.Fatalf("replayed invocation id: %v", err)
	}
	if e := fill(t, j, 2, 1, "s")[0]; e.Index != 2 {
		t.Fatalf("index after a rejected append: %d", e.Index)
	}
	j.Checkpoint(ctx)
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}

func TestConcurrentAppend(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{CheckpointEvery: 16})
	const workers, per = 8, 40
	var wg sync.WaitGroup
	idx := make(chan uint64, workers*per)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				n := w*per + i
				e, err := j.Append(context.Background(), rec(n, kinds[n%4], fmt.Sprint("s", w)))
				if err != nil {
					t.Error(err)
					return
				}
				idx <- e.Index
			}
		}()
	}
	wg.Add(1)
	go func() { // checkpoints race with appends
		defer wg.Done()
		for i := 0; i < 10; i++ {
			if _, err := j.Checkpoint(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	close(idx)
	seen := map[uint64]bool{}
	for i := range idx {
		seen[i] = true
	}
	if len(seen) != workers*per {
		t.Fatalf("%d distinct indexes", len(seen))
	}
	j.Checkpoint(context.Background())
	j.Close()
	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Records != workers*per || rep.Checkpoints < workers*per/16 {
		t.Fatalf("records %d checkpoints %d", rep.Records, rep.Checkpoints)
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
	exec(t, raw, `UPDATE records SET duration_ms = ?, canonical = ?, leaf_hash = ? WHERE idx = 1`, r.DurationMS, c2, evidence.LeafHash(c2))
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

func TestBundleVerifiesWithoutDatabase(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := open(t, dir, evidence.Options{CheckpointEvery: 7})
	fill(t, j, 0, 9, "wc_sess_a")
	fill(t, j, 9, 20, "wc_sess_b")
	fill(t, j, 29, 4, "wc_sess_a")
	b, err := j.ExportBundle(ctx, "wc_sess_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.ExportBundle(ctx, "nobody"); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("empty session: %v", err)
	}
	j.Close()
	data, _ := json.Marshal(b)
	os.RemoveAll(dir) // no database, no key files
	rep, err := evidence.VerifyBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds(t, rep)
	if rep.Records != 13 || rep.OK != 13 || rep.LastCheckpoint.Size != 33 {
		t.Fatalf("%+v", rep)
	}

	tamper := func(f func(b *evidence.Bundle)) evidence.Report {
		var c evidence.Bundle
		json.Unmarshal(data, &c)
		f(&c)
		out, _ := json.Marshal(c)
		rep, err := evidence.VerifyBundle(out)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	wantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[2].Record.Outcome = evidence.OutcomeFailed }), evidence.FindingBadLeaf)
	wantKinds(t, tamper(func(b *evidence.Bundle) {
		i := bytes.Index(b.Records[3].Canonical, []byte("read_files"))
		b.Records[3].Canonical[i] = 'R'
	}), evidence.FindingBadLeaf, evidence.FindingNotInTree)
	wantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[4].InclusionProof[0][0] ^= 1 }), evidence.FindingNotInTree)
	wantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[4].Index++ }), evidence.FindingBadLeaf, evidence.FindingNotInTree)
	wantKinds(t, tamper(func(b *evidence.Bundle) { b.Records = append(b.Records, b.Records[0]) }), evidence.FindingDuplicateID)
	wantKinds(t, tamper(func(b *evidence.Bundle) { b.Checkpoint = strings.Replace(b.Checkpoint, "\n33\n", "\n32\n", 1) }), evidence.FindingBadSignature, evidence.FindingNotInTree)
	other, _ := evidence.NewKeySet()
	_ = other
	skey, vkey, _ := note.GenerateKey(nil, b.Origin)
	s, _ := note.NewSigner(skey)
	wantKinds(t, tamper(func(b *evidence.Bundle) {
		cp, _ := evidence.ParseCheckpointBody(strings.SplitN(b.Checkpoint, "\n\n", 2)[0] + "\n")
		msg, _ := note.Sign(&note.Note{Text: cp.Body()}, s)
		b.Checkpoint = string(msg) // signed by a key the bundle does not list
	}), evidence.FindingUnknownKey, evidence.FindingNotInTree)
	// Trusting a key out of band overrides the bundle's own keys.
	rep, _ = evidence.VerifyBundleWith(data, []string{vkey})
	if !rep.Has(evidence.FindingUnknownKey) {
		t.Fatalf("%v", rep.Totals)
	}
	if _, err := evidence.VerifyBundle([]byte(`{"format":"nope"}`)); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("not a bundle: %v", err)
	}
}

func TestRunSignsPeriodically(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{CheckpointInterval: 5 * time.Millisecond, Now: func() time.Time { return t0 }})
	defer j.Close()
	if _, err := j.Latest(context.Background()); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("latest before any checkpoint: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	fill(t, j, 0, 3, "s")
	deadline := time.Now().Add(5 * time.Second)
	for {
		cp, err := j.Latest(context.Background())
		if err == nil && cp.Size == 3 {
			if !cp.CreatedAt.Equal(t0) {
				t.Fatalf("created_at %v, want the injected clock", cp.CreatedAt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not sign the head: %+v %v", cp, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
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
	exec(t, db, `INSERT INTO records SELECT 3, 'inv-000003', key_id, at_ns, tool, source, transport_era,
		claim_recording_session_id, claim_business_session_id, claim_project, claim_principal_kind, claim_client_window,
		verified_session_id, verified_project, verified_authority, verified_lifecycle, session_binding, binding_reasons,
		checked_keys, skipped_keys, session_record_digest, outcome, error_kind, duration_ms, arguments_digest, result_digest,
		?, ?, replay_of FROM records WHERE idx = 1`, c, evidence.LeafHash(c))
	// Row 1 was sessionless too (kinds cycle), but its digests differ from
	// rec(3): make the columns match the canonical bytes.
	exec(t, db, `UPDATE records SET at_ns = ?, duration_ms = ?, arguments_digest = ?, result_digest = ? WHERE idx = 3`,
		r.At.UnixNano(), r.DurationMS, r.ArgumentsDigest, r.ResultDigest)
	e := fill(t, j, 4, 1, "s")[0]
	if e.Index != 4 {
		t.Fatalf("index %d, want 4", e.Index)
	}
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}

// TestTwoWritersShareAJournal: two journals open on one data directory
// (a server and `webcodex mcp`) append in turns; each picks up the other's
// leaves, indexes stay dense and the journal verifies.
func TestTwoWritersShareAJournal(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir, evidence.Options{})
	defer a.Close()
	b := open(t, dir, evidence.Options{})
	defer b.Close()
	for i := 0; i < 20; i++ {
		j := a
		if i%3 == 0 {
			j = b
		}
		if e := fill(t, j, i, 1, "s")[0]; e.Index != uint64(i) {
			t.Fatalf("append %d got index %d", i, e.Index)
		}
	}
	ca, err := a.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Checkpoint(context.Background())
	if err != nil || cb.Size != 20 || !bytes.Equal(ca.Root, cb.Root) {
		t.Fatalf("the two writers disagree: %+v vs %+v (%v)", ca.Checkpoint, cb.Checkpoint, err)
	}
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
}
