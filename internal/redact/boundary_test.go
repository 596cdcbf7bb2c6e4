package redact_test

import (
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/redact/redacttest"
)

// after is what may directly follow a credential.
var after = []string{"", " tail", "_tail", "-tail", ".tail", "/tail", "7", "x", "X"}

// TestCredentialAtAnyBoundary plants every credential pattern behind
// every kind of preceding character (issue 24: x_AKIAIOSFODNN7EXAMPLE
// was kept) and in front of every kind of following one.
func TestCredentialAtAnyBoundary(t *testing.T) {
	for _, c := range redacttest.Credentials {
		for _, b := range redacttest.Before {
			for _, a := range after {
				in := b.Text + c.Planted + a
				out := redact.String(in)
				if strings.Contains(out, c.Secret) || !strings.Contains(out, redact.Marker) {
					t.Errorf("%s after %s: redact(%q) = %q", c.Name, b.Name, in, out)
				}
			}
		}
	}
}

// TestOrdinaryTextAtNoBoundary: text that holds a credential prefix
// glued to ordinary words, and identifiers that resemble credentials,
// survive unchanged.
func TestOrdinaryTextAtNoBoundary(t *testing.T) {
	for _, s := range []string{
		"9fe1410c0a1d3b5e7f9a2c4e6b8d0f1a3c5e7b9d",                // a git SHA
		"123e4567-e89b-12d3-a456-426614174000",                    // a UUID
		"git checkout task-implement-fair-scheduling",             // sk- ends "task"
		"git checkout risk-assessment-framework-v2",               // sk- with a digit
		"du -sh disk-usage-by-directory-2024",                     // sk- with digits
		"mask-all-the-outputs-now and flask-sqlalchemy-extension", // sk- twice
		"written in VisualBasic compiler-generated code",          // basic ends a word
		"the flagbearer marched ahead",                            // bearer ends a word
		"weighs_and_measures highs_and_lows",                      // ghs_ ends a word
		"wc_sess_0123456789abcdef01234567",                        // a Workflow Session id
		"wc_job_0123456789abcdef0123456789abcdef",                 // a job id
		"AKIA is the prefix of an AWS access key id",              // the prefix alone
		"internal/redact/redact_test.go:41",
	} {
		if got := redact.String(s); got != s {
			t.Errorf("redact(%q) = %q, want unchanged", s, got)
		}
	}
}

// TestCredentialSamplesAreDistinct: a scan for one sample's secret finds
// only that sample.
func TestCredentialSamplesAreDistinct(t *testing.T) {
	for _, a := range redacttest.Credentials {
		for _, b := range redacttest.Credentials {
			if a.Name != b.Name && strings.Contains(b.Planted, a.Secret) {
				t.Errorf("%s's secret occurs in %s", a.Name, b.Name)
			}
		}
	}
}

// TestWordTailKeepsWordsAndTakesCredentials: in one text, a prefix that
// ends a word is kept and a credential after it is still redacted.
func TestWordTailKeepsWordsAndTakesCredentials(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"VisualBasic compiler, then Bearer eyJhbGciOiJIUzI1NiJ9", "VisualBasic compiler, then " + redact.Marker},
		{"git checkout task-implement-fair-scheduling; key=xsk-Hb4Rn9Lc2Xw7Pf5Jd8Qs1", "git checkout task-implement-fair-scheduling; key=x" + redact.Marker},
		{"xsk-Hb4Rn9Lc2Xw7Pf5Jd8Qs1 and task-implement-fair-scheduling", "x" + redact.Marker + " and task-implement-fair-scheduling"},
	} {
		if got := redact.String(c.in); got != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
