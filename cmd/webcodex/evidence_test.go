package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
)

// runEvidence runs `webcodex evidence ARGS` in-process against dataDir. The
// root command does not wire newEvidenceCmd yet, so the test builds it
// directly; an error return is what makes main exit 1.
func runEvidence(t *testing.T, dataDir string, args ...string) (string, error) {
	t.Helper()
	out, _, err := runEvidenceErr(t, dataDir, args...)
	return out, err
}

// runEvidenceErr also returns what the command wrote to standard error.
func runEvidenceErr(t *testing.T, dataDir string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newEvidenceCmd(&globals{dataDir: dataDir})
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func evidenceRecord(i int, b evidence.Binding, sess string) evidence.Record {
	r := evidence.Record{
		InvocationID: fmt.Sprintf("inv-%d", i), At: time.Unix(1767225600+int64(i), 0).UTC(), Tool: "run_command",
		Source: evidence.SourceREST, Binding: b, Outcome: evidence.OutcomeOK,
		ArgumentsDigest: evidence.Digest([]byte(fmt.Sprint(i))), ResultDigest: evidence.Digest([]byte("r")),
	}
	switch b {
	case evidence.BindingVerified:
		r.Claim.RecordingSessionID = sess
		r.Verified = evidence.Verified{SessionID: sess, Project: "p", Authority: "a", Lifecycle: "active"}
		r.Reasons = []evidence.Reason{evidence.ReasonStoreMatch}
		r.CheckedKeys = []evidence.CheckKey{evidence.KeyRegistration}
	case evidence.BindingSessionless:
		r.Claim.BusinessSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNoRecorderRequested}
	case evidence.BindingInvalidClaim:
		r.Claim.RecordingSessionID = sess
		r.Reasons = []evidence.Reason{evidence.ReasonNotRegistered}
		r.Outcome, r.ErrorKind = evidence.OutcomeRefused, "unknown_session_id"
	}
	return r
}

// TestEvidenceListShowsReplays: `webcodex evidence list` counts the
// replays and names each one's original.
func TestEvidenceListShowsReplays(t *testing.T) {
	data := t.TempDir()
	j, err := evidencedb.Open(context.Background(), data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r := evidenceRecord(i, evidence.BindingVerified, "wc_sess_x")
		if i > 0 {
			r.Replayed, r.ReplayOf = true, "wc_cmp_1"
		}
		if _, err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	out, err := runEvidence(t, data, "list", "--session", "wc_sess_x")
	if err != nil || !strings.Contains(out, "verified 3, sessionless 0, invalid_claim 0, unknown 0; replays 2") ||
		strings.Count(out, "ok, replay of wc_cmp_1") != 2 {
		t.Fatalf("list: %v\n%s", err, out)
	}
}

func TestEvidenceCommands(t *testing.T) {
	data := t.TempDir()
	j, err := evidencedb.Open(context.Background(), data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := []evidence.Binding{evidence.BindingVerified, evidence.BindingSessionless, evidence.BindingInvalidClaim}
	for i := 0; i < 9; i++ {
		if _, err := j.Append(context.Background(), evidenceRecord(i, bs[i%3], "wc_sess_x")); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	out, err := runEvidence(t, data, "list", "--session", "wc_sess_x")
	if err != nil || !strings.Contains(out, "verified 3, sessionless 3, invalid_claim 3") || !strings.Contains(out, "not_registered") ||
		!strings.Contains(out, "never that the work was correct") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, _ = runEvidence(t, data, "list", "--session", "wc_sess_x", "--json", "--limit", "2")
	var listed struct {
		Records []evidence.Entry
		Counts  evidence.Counts
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Records) != 2 || listed.Records[0].Index != 8 {
		t.Fatalf("list --json: %v %s", err, out)
	}

	cp, err := runEvidence(t, data, "checkpoint")
	if err != nil || !strings.Contains(cp, "\n9\n") || !strings.Contains(cp, "\n\n— ") {
		t.Fatalf("checkpoint: %v %q", err, cp)
	}
	cpFile := filepath.Join(t.TempDir(), "cp.txt")
	os.WriteFile(cpFile, []byte(cp), 0o600)

	out, err = runEvidence(t, data, "verify", "--from", cpFile)
	if err != nil || !strings.Contains(out, "Evidence verification: OK") || !strings.Contains(out, "--from      size 9: consistent") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	_, stderr, err := runEvidenceErr(t, data, "verify", "--progress")
	if err != nil || !strings.Contains(stderr, "verifying records") || !strings.Contains(stderr, "9/9") {
		t.Fatalf("verify --progress: %v\n%q", err, stderr)
	}
	out, err = runEvidence(t, data, "verify", "--json")
	var rep evidence.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.Clean || rep.Records != 9 {
		t.Fatalf("verify --json: %v %s", err, out)
	}

	bundle := filepath.Join(t.TempDir(), "bundle.json")
	if _, err := runEvidence(t, data, "export", "--session", "wc_sess_x", "-o", bundle); err != nil {
		t.Fatal(err)
	}
	if _, err := runEvidence(t, data, "export", "--session", "nobody", "-o", filepath.Join(t.TempDir(), "x.json")); err == nil {
		t.Fatal("export of an unknown session succeeded")
	}

	// Tamper with one column: verify fails (non-zero exit) and names the record.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, evidencedb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE record_payloads SET outcome = 'failed' WHERE idx = 4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err = runEvidence(t, data, "verify")
	if err == nil || !strings.Contains(out, "FAILED") || !strings.Contains(out, "bad_leaf") || !strings.Contains(out, "inv-4") {
		t.Fatalf("verify after tampering: %v\n%s", err, out)
	}

	// The bundle verifies with the data directory gone.
	os.RemoveAll(data)
	out, err = runEvidence(t, t.TempDir(), "verify-bundle", bundle)
	if err != nil || !strings.Contains(out, "records     9 read, 9 ok") {
		t.Fatalf("verify-bundle: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(bundle)
	os.WriteFile(bundle, bytes.Replace(b, []byte(`"tool": "run_command"`), []byte(`"tool": "read_files"`), 1), 0o600)
	out, err = runEvidence(t, t.TempDir(), "verify-bundle", bundle, "--json")
	if err == nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.Has(evidence.FindingBadLeaf) {
		t.Fatalf("tampered bundle: %v\n%s", err, out)
	}
}

// TestEvidenceVerifyReportsPurged: after a purge, `evidence verify` is OK
// and lists the purged ranges apart from findings, and a session's bundle
// marks its purged records and verifies without the data directory.
func TestEvidenceVerifyReportsPurged(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		if _, err := j.Append(ctx, evidenceRecord(i, evidence.BindingVerified, "wc_sess_x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err := j.PurgeBefore(ctx, "evidence_days", time.Unix(1767225605, 0), 0)
	j.Close()
	if err != nil || sum.Purged != 5 {
		t.Fatalf("purge %+v %v", sum, err)
	}
	out, err := runEvidence(t, data, "verify")
	if err != nil || !strings.Contains(out, "Evidence verification: OK") || !strings.Contains(out, "records     9 read, 4 ok") ||
		!strings.Contains(out, "purged      5 record(s)") || !strings.Contains(out, ": 0..4\n") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	out, err = runEvidence(t, data, "list", "--session", "wc_sess_x")
	if err != nil || strings.Count(out, "purged (payload dropped by retention)") != 5 || !strings.Contains(out, "verified 9,") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	bundle := filepath.Join(t.TempDir(), "b.json")
	if _, err := runEvidence(t, data, "export", "--session", "wc_sess_x", "-o", bundle); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(data)
	out, err = runEvidence(t, t.TempDir(), "verify-bundle", bundle, "--json")
	var rep evidence.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.Clean || rep.Purged != 5 || rep.OK != 4 {
		t.Fatalf("verify-bundle: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(bundle)
	if n := bytes.Count(b, []byte(`"purged": true`)); n != 5 {
		t.Fatalf("the bundle marks %d records purged, want 5", n)
	}
}
