package runner

import (
	"strings"
	"testing"
)

// TestNoLandlockIsReportedUnavailable checks the rule every system
// without Landlock (an old Linux kernel, macOS, Windows) relies on: a
// mode asked for is in force as Unavailable, never as the mode asked for;
// Off stays Off; network off is reported unavailable below ABI 4; and the
// banner line says that processes run unconfined.
func TestNoLandlockIsReportedUnavailable(t *testing.T) {
	for _, m := range []Mode{WorkspaceWrite, ReadOnly} {
		if got := inForce(m, 0); got != Unavailable {
			t.Errorf("inForce(%s, ABI 0) = %s, want %s", m, got, Unavailable)
		}
		if got := inForce(m, 1); got != m {
			t.Errorf("inForce(%s, ABI 1) = %s, want %s", m, got, m)
		}
	}
	if got := inForce(Off, 0); got != Off {
		t.Errorf("inForce(off, ABI 0) = %s, want off", got)
	}
	if got := netInForce(NetworkOff, 0); got != NetworkUnavailable {
		t.Errorf("netInForce(off, ABI 0) = %s, want %s", got, NetworkUnavailable)
	}
	if s := (Status{Mode: Unavailable, Network: NetworkOn}).String(); !strings.Contains(s, "unconfined") {
		t.Errorf("status line %q does not say processes run unconfined", s)
	}
}

// TestConfinementInForceOnThisSystem checks that what a policy reports
// and what a child is started under agree with this system: Unavailable
// exactly when it has no Landlock.
func TestConfinementInForceOnThisSystem(t *testing.T) {
	p := &Policy{Mode: WorkspaceWrite}
	defer p.Close()
	req := Sandbox{Project: t.TempDir()}
	c, err := p.Confine(req)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(p)
	want := WorkspaceWrite
	if LandlockABI() == 0 {
		want = Unavailable
	}
	if c.Mode() != want || p.Status().Mode != want || p.InForce(req) != want {
		t.Fatalf("confinement %s, status %s, in force %s; want %s (Landlock ABI %d)", c.Mode(), p.Status().Mode, p.InForce(req), want, LandlockABI())
	}
}
