// Package audittest lets a test turn the kernel's audit on for its own
// duration, so that Landlock denials are logged where a sandboxaudit
// Reader can count them. The server never does this (decision 0088).
//
// The audit state is the whole machine's, and go test runs packages in
// parallel processes: every test that turns it on or depends on it being
// off holds Lock, a file lock shared by the processes, for its duration.
package audittest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/sandboxaudit"
)

// Enable turns the kernel's audit on until t ends, then restores what it
// found (off stays off afterwards). It skips t, saying why, when the audit
// status cannot be read or set (not Linux, no CAP_AUDIT_CONTROL, not the
// initial namespaces).
func Enable(t testing.TB) {
	t.Helper()
	Lock(t)
	on, err := sandboxaudit.AuditEnabled()
	if err != nil {
		t.Skipf("kernel audit status unavailable: %v", err)
	}
	if on {
		return
	}
	if err := sandboxaudit.SetAuditEnabled(true); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skip(err)
		}
		t.Skipf("cannot turn kernel audit on for this test: %v", err)
	}
	t.Cleanup(func() {
		if err := sandboxaudit.SetAuditEnabled(false); err != nil {
			t.Errorf("restore kernel audit off: %v", err)
		}
	})
}

// LockFile is the file, in the temporary directory, whose lock Lock
// holds.
const LockFile = "webcodex-audittest.lock"

// Lock holds the machine-wide lock of the tests that depend on the
// kernel's audit state until t ends (waiting for another process's test to
// end first).
func Lock(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("audit test lock: %v", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		t.Fatalf("audit test lock: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}
