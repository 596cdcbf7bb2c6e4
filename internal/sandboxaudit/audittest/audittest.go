// Package audittest lets a test turn the kernel's audit on for its own
// duration, so that Landlock denials are logged where a sandboxaudit
// Reader can count them. The server never does this (decision 0088).
package audittest

import (
	"errors"
	"testing"

	"github.com/webcodex/webcodex/internal/sandboxaudit"
)

// Enable turns the kernel's audit on until t ends, then restores what it
// found (off stays off afterwards). It skips t, saying why, when the audit
// status cannot be read or set (not Linux, no CAP_AUDIT_CONTROL, not the
// initial namespaces).
func Enable(t testing.TB) {
	t.Helper()
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
