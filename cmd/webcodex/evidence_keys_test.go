package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
)

// signedJournal makes a journal of n records with a checkpoint at n in
// dataDir and returns its key.
func signedJournal(t *testing.T, dataDir string, n int) *evidence.Key {
	t.Helper()
	j, err := evidencedb.Open(context.Background(), dataDir, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := j.Append(context.Background(), evidenceRecord(i, evidence.BindingSessionless, "wc_sess_x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	k, err := evidence.LoadKey(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvidenceRotateKeyCommand: rotate-key prints the old and new key ids,
// the journal verifies clean afterwards, and the old checkpoint verifies
// with the retired key alone.
func TestEvidenceRotateKeyCommand(t *testing.T) {
	data := t.TempDir()
	old := signedJournal(t, data, 4)
	out, err := runEvidence(t, data, "rotate-key")
	if err != nil {
		t.Fatalf("rotate-key: %v\n%s", err, out)
	}
	nk, err := evidence.LoadKey(data)
	if err != nil || nk.ID == old.ID {
		t.Fatalf("key after rotation: %v %v", nk, err)
	}
	if !strings.Contains(out, "old key     "+old.ID) || !strings.Contains(out, "new key     "+nk.ID) ||
		!strings.Contains(out, "checkpoint  size 4 signed with the new key") || strings.Contains(out, "with the old key") {
		t.Fatalf("rotate-key output:\n%s", out)
	}
	if st, err := os.Stat(filepath.Join(data, evidence.KeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, st)
	}
	out, err = runEvidence(t, data, "verify", "--json")
	var rep evidence.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || !rep.Clean || rep.LastCheckpoint.KeyID != nk.ID || len(rep.TrustedKeys) != 2 {
		t.Fatalf("verify after rotation: %v\n%s", err, out)
	}
	// Trusting only the retired key: the old checkpoint verifies, the new one is unknown.
	out, err = runEvidence(t, data, "verify", "--json", "--key", old.VerifierKey)
	if err == nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Totals[evidence.FindingUnknownKey] != 1 || len(rep.Totals) != 1 ||
		rep.LastCheckpoint == nil || rep.LastCheckpoint.KeyID != old.ID {
		t.Fatalf("verify with the retired key: %v\n%s", err, out)
	}
	if _, err := runEvidence(t, t.TempDir(), "rotate-key"); err == nil || !strings.Contains(err.Error(), "no evidence journal") {
		t.Fatalf("rotate-key without a journal: %v", err)
	}
}

// TestEvidenceRotateKeyRefusedWhileServing: a running `webcodex serve` has
// the journal open; rotate-key refuses and changes nothing, then succeeds
// once the server has stopped.
func TestEvidenceRotateKeyRefusedWhileServing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server process")
	}
	data := t.TempDir()
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o600)
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	args := map[string]any{"project": "agent:local:demo", "files": []any{map[string]any{"path": "a.txt"}}}
	if _, err := callTool(context.Background(), srv.base, "read_files", args, ""); err != nil {
		t.Fatal(err)
	}
	keyPath, pubPath := filepath.Join(data, evidence.KeyFile), filepath.Join(data, evidence.PublicKeysFile)
	key, pub := readFile(t, keyPath), readFile(t, pubPath)
	out, err := runEvidence(t, data, "rotate-key")
	if err == nil || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("rotate-key while serving: %v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, keyPath), key) || !bytes.Equal(readFile(t, pubPath), pub) {
		t.Fatal("a refused rotation changed the key files")
	}
	stopServe(t, srv)
	// The server signed its head at shutdown; the rotation signs it again with the new key.
	if out, err := runEvidence(t, data, "rotate-key"); err != nil || !strings.Contains(out, "checkpoint  size 1 signed with the new key") {
		t.Fatalf("rotate-key after the server stopped: %v\n%s", err, out)
	}
	if out, err := runEvidence(t, data, "verify"); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}

// TestServeRefusesForeignEvidenceKey: another journal's evidence.key copied
// into the data directory makes `webcodex serve` exit at start with an
// error naming both key ids, and evidence.db is left byte for byte.
func TestServeRefusesForeignEvidenceKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server process")
	}
	data, other := t.TempDir(), t.TempDir()
	own := signedJournal(t, data, 3)
	foreign := signedJournal(t, other, 2)
	copyTo := filepath.Join(data, evidence.KeyFile)
	if err := os.WriteFile(copyTo, readFile(t, filepath.Join(other, evidence.KeyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(data, evidencedb.FileName)
	before := sha256.Sum256(readFile(t, dbPath))

	argv, _ := json.Marshal([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", data})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv), "WEBCODEX_TOKEN="+testToken)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("serve with a foreign key: exit %d (%v)\n%s", code, err, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, foreign.ID) || !strings.Contains(msg, own.ID) || !strings.Contains(msg, "never adopted") {
		t.Fatalf("the refusal does not name both keys:\n%s", msg)
	}
	if sha256.Sum256(readFile(t, dbPath)) != before {
		t.Fatal("the refused start changed evidence.db")
	}
}
