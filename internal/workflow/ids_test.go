package workflow

import (
	"regexp"
	"strings"
	"testing"
)

// TestIDFormsMatchTheirPatterns: the hand-written checks of a session id
// and an owner fingerprint accept exactly what the documented patterns
// accept, including near misses (length ±1, uppercase hex, a newline
// after, a wrong prefix).
func TestIDFormsMatchTheirPatterns(t *testing.T) {
	sessionRE := regexp.MustCompile(`^wc_sess_[0-9a-f]{32}$`)
	fingerprintRE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex32 := strings.Repeat("0123456789abcdef", 2)
	hex64 := hex32 + hex32
	check := func(s string) {
		t.Helper()
		if got, want := isSessionID(s), sessionRE.MatchString(s); got != want {
			t.Errorf("isSessionID(%q) = %v, want %v", s, got, want)
		}
		if got, want := isFingerprint(s), fingerprintRE.MatchString(s); got != want {
			t.Errorf("isFingerprint(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{
		"", "wc_sess_", "wc_sess_" + hex32, "wc_sess_" + hex32[:31], "wc_sess_" + hex32 + "0", "wc_sess_" + hex32 + "\n",
		"WC_SESS_" + hex32, "wc_ses_" + hex32 + "0", "wc_sess_" + strings.ToUpper(hex32), "wc_sess_" + hex32[:31] + "g",
		"xwc_sess_" + hex32, hex64, hex64[:63], hex64 + "a", strings.ToUpper(hex64), hex64[:63] + "\n", hex64[:63] + "G",
	} {
		check(s)
	}
}

func FuzzIDForms(f *testing.F) {
	f.Add("wc_sess_0123456789abcdef0123456789abcdef")
	f.Add("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	sessionRE := regexp.MustCompile(`^wc_sess_[0-9a-f]{32}$`)
	fingerprintRE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if isSessionID(s) != sessionRE.MatchString(s) {
			t.Fatalf("isSessionID(%q) disagrees with the pattern", s)
		}
		if isFingerprint(s) != fingerprintRE.MatchString(s) {
			t.Fatalf("isFingerprint(%q) disagrees with the pattern", s)
		}
	})
}
