package redact

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fullScan is String without the needle prefilter: every pattern runs.
func fullScan(s string) string {
	if s == "" {
		return s
	}
	for _, r := range rules {
		s = r.replace(s)
	}
	re := secretAssign.re
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if sub[2] == Marker {
			return m
		}
		return sub[1] + Marker
	})
}

var prefilterSeeds = []string{
	"plain text", "Authorization: Bearer abcdefgh12345678", "BASIC dXNlcjpwYXNzd29yZA==",
	"wc_pat_0123456789abcdef", "x wck_abcdefghij", "sk-ABCDEFGHIJKLMNOPQRST", "ghp_" + strings.Repeat("a", 24),
	"github_pat_" + strings.Repeat("B", 22), "xoxb-1234567890-abc", "AKIAABCDEFGHIJKLMNOP", "AIza" + strings.Repeat("x", 35),
	"PASSWORD=hunter2", "Api-Key: 'abc def'", "paſſword=hunter2", "client_secret=\"s3\"", "accessKey=zz",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "token: wc_pat_aaaaaaaaaaaa",
	"api_token", "password hunter2", "token\t=\tx", "secret\n:\nx",
	"wc_sess_0123456789abcdef01234567", "WC_PAT_0123456789abcdef", "x wc_agent_abcdefgh wc_pair_abcdefgh wc_csec_abcdefgh",
	"x_AKIAIOSFODNN7EXAMPLE", "v7ghp_" + strings.Repeat("a", 24), "xsk-Ab1" + strings.Repeat("c", 16), "task-implement-fair-scheduling",
	"VisualBasic compiler", "xBearer Ab1defghij", "build-xoxb-1234567890-abc", "AIza" + strings.Repeat("x", 36),
}

func TestPrefilterAgreesWithFullScan(t *testing.T) {
	for _, s := range prefilterSeeds {
		if got, want := String(s), fullScan(s); got != want {
			t.Errorf("String(%q) = %q, full scan %q", s, got, want)
		}
	}
}

func FuzzPrefilterAgreesWithFullScan(f *testing.F) {
	for _, s := range prefilterSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := String(s), fullScan(s); got != want {
			t.Fatalf("String(%q) = %q, full scan %q", s, got, want)
		}
	})
}

func BenchmarkString(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"label", "apply_text_edits"},
		{"session_id", "wc_sess_0123456789abcdef01234567"},
		{"prose", "Refactor the parser so that nested groups are handled; see docs/parser.md for the grammar."},
	} {
		b.Run(c.name+"/prefiltered", func(b *testing.B) {
			for b.Loop() {
				String(c.s)
			}
		})
		b.Run(c.name+"/full-scan", func(b *testing.B) {
			for b.Loop() {
				fullScan(c.s)
			}
		})
	}
}

// candidates relies on every needle being lower-case ASCII of at least two
// bytes (it compares ASCII-lower-cased text pairwise).
func TestNeedleShape(t *testing.T) {
	for _, r := range append(rules[:len(rules):len(rules)], secretAssign) {
		for _, n := range r.needles {
			if len(n) < 2 || n != strings.ToLower(n) {
				t.Errorf("needle %q: want lower-case, at least 2 bytes", n)
			}
			for i := 0; i < len(n); i++ {
				if n[i] >= 0x80 {
					t.Errorf("needle %q is not ASCII", n)
				}
			}
		}
	}
}

// wordBoundRules is rules as they were before issue 24, each vendor
// pattern anchored at a word boundary: the baseline of
// BenchmarkAnyBoundary.
func wordBoundRules() []rule {
	t := slices.Clone(rules)
	for i, re := range map[int]string{
		1: `(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`,
		4: `\bsk-[A-Za-z0-9_-]{16,}`,
		5: `\bgh[pousr]_[A-Za-z0-9]{20,}`,
		6: `\bgithub_pat_[A-Za-z0-9_]{20,}`,
		7: `\bxox[abprs]-[A-Za-z0-9-]{10,}`,
		8: `\bAKIA[0-9A-Z]{16}\b`,
		9: `\bAIza[0-9A-Za-z_-]{35}\b`,
	} {
		t[i] = rule{re: regexp.MustCompile(re), needles: t[i].needles}
	}
	return t
}

// BenchmarkAnyBoundary measures String against the word-bound rules it
// replaced, on text that holds no credential, on text whose needles
// match nothing (the wordTail rules' extra work) and on credentials.
func BenchmarkAnyBoundary(b *testing.B) {
	before := wordBoundRules()
	for _, c := range []struct{ name, s string }{
		{"label", "apply_text_edits"},
		{"prose", "Refactor the parser so that nested groups are handled; see docs/parser.md for the grammar."},
		{"slug", "git checkout task-implement-fair-scheduling && git push origin task-implement-fair-scheduling"},
		{"output", strings.Repeat("ok  \tgithub.com/webcodex/webcodex/internal/redact\t0.011s\n", 40)},
		{"credentials", "export AWS=x_AKIAIOSFODNN7EXAMPLE GH=ghp_R8mX2kQ9vL4nT7bW1cZ5yH3jF6gD0sA2eP8u; curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc'"},
	} {
		b.Run(c.name+"/word-bound", func(b *testing.B) {
			for b.Loop() {
				redactWith(before, c.s)
			}
		})
		b.Run(c.name+"/any-boundary", func(b *testing.B) {
			for b.Loop() {
				String(c.s)
			}
		})
	}
}

// TestWordBoundRulesShape: the baseline keeps rules' needles in order,
// which candidates' bit positions rely on.
func TestWordBoundRulesShape(t *testing.T) {
	before := wordBoundRules()
	if len(before) != len(rules) {
		t.Fatalf("%d baseline rules, %d rules", len(before), len(rules))
	}
	for i := range rules {
		if !slices.Equal(before[i].needles, rules[i].needles) {
			t.Errorf("rule %d: needles %v, baseline %v", i, rules[i].needles, before[i].needles)
		}
	}
}
