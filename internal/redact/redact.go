// Package redact removes credentials from text before it is persisted or
// logged. It is applied at write time by every store that keeps caller text
// (the Workflow Session ledger, and later the audit trail and evidence
// journal), so that a secret never reaches disk.
//
// Redaction is conservative: it replaces bearer tokens, WebCodex tokens,
// well-known API key shapes, key=value / key: value pairs whose key names a
// secret, and PEM private key blocks with the marker [REDACTED]. Ordinary
// prose, paths, commands and code survive.
package redact

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Marker replaces every redacted span.
const Marker = "[REDACTED]"

// rule is a credential pattern and the lower-case literals of which at
// least one occurs in (the lower-cased form of) every text it can match:
// a cheap necessary condition checked before the regular expression runs.
type rule struct {
	re      *regexp.Regexp
	needles []string
}

var rules = []rule{
	// PEM private keys, whole block.
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)`), []string{"private key"}},
	// Authorization headers and bearer tokens.
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), []string{"bearer", "basic"}},
	// WebCodex credentials and common vendor token shapes.
	{regexp.MustCompile(`wc_(pat|agent|pair|csec)_[A-Za-z0-9_-]{8,}`), []string{"wc_pat_", "wc_agent_", "wc_pair_", "wc_csec_"}},
	{regexp.MustCompile(`wck_[A-Za-z0-9_-]{8,}`), []string{"wck_"}},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), []string{"sk-"}},
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), []string{"github_pat_"}},
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}},
	{regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), []string{"akia"}},
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), []string{"aiza"}},
}

// secretAssign matches key=value and key: value where the key names a
// secret; group 1 is the key and separator, kept in the output.
var secretAssign = rule{
	regexp.MustCompile(`(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credential)s?["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`),
	[]string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
		"privatekey", "private_key", "private-key", "credential"},
}

// byFirst indexes every needle by its first byte: byFirst[c] lists the
// (rule, needle) pairs whose needle starts with c. Rule index len(rules)
// is secretAssign.
var byFirst = func() (t [256][]struct {
	rule   int
	needle string
}) {
	add := func(i int, r rule) {
		for _, n := range r.needles {
			t[n[0]] = append(t[n[0]], struct {
				rule   int
				needle string
			}{i, n})
		}
	}
	for i, r := range rules {
		add(i, r)
	}
	add(len(rules), secretAssign)
	return t
}()

// pairs has bit a<<8|b set when some needle starts with the bytes a, b:
// most positions of a text start no needle, and this rules them out with
// one load.
var pairs = func() (t [1 << 16 / 64]uint64) {
	for _, list := range byFirst {
		for _, e := range list {
			k := uint(e.needle[0])<<8 | uint(e.needle[1])
			t[k/64] |= 1 << (k % 64)
		}
	}
	return t
}()

// lower is ASCII lower-casing, which is what strings.ToLower does to
// ASCII text.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasLowerPrefix reports whether the lower-cased ASCII s starts with
// needle (lower-case).
func hasLowerPrefix(s, needle string) bool {
	if len(s) < len(needle) {
		return false
	}
	for i := 0; i < len(needle); i++ {
		if lower(s[i]) != needle[i] {
			return false
		}
	}
	return true
}

// candidates returns which rules (bit i: rules[i]; bit len(rules):
// secretAssign) may match s: those with a needle in the lower-cased s.
// Non-ASCII text is a candidate for every rule: case-insensitive patterns
// fold letters such as U+017F (ſ) to ASCII ones that lower-casing keeps.
func candidates(s string) uint64 {
	var set uint64
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return 1<<(len(rules)+1) - 1
		}
		if i+1 == len(s) {
			break // every needle is longer than one byte
		}
		a := lower(s[i])
		k := uint(a)<<8 | uint(lower(s[i+1]))
		if pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, e := range byFirst[a] {
			if hasLowerPrefix(s[i:], e.needle) {
				set |= 1 << e.rule
			}
		}
	}
	return set
}

// String returns s with every recognised credential replaced by Marker.
func String(s string) string {
	if s == "" {
		return s
	}
	set := candidates(s)
	if set == 0 {
		return s
	}
	changed := false
	for i, r := range rules {
		if set&(1<<i) != 0 {
			s = r.re.ReplaceAllString(s, Marker)
			changed = true
		}
	}
	if changed {
		set = candidates(s) // a replacement can remove (never add) needles
	}
	// secretAssign also needs its separator: a key=value or key: value
	// pair cannot exist without a ':' or '=' (labels such as api_token
	// hold a needle but never a separator).
	if set&(1<<len(rules)) == 0 || !strings.ContainsAny(s, ":=") {
		return s
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

// Truncate returns s cut to at most max runes (not bytes) and whether it was
// cut. It never splits a UTF-8 sequence.
func Truncate(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String(), true
}

// TrimIncompleteRune returns b without a trailing incomplete UTF-8
// sequence (for a byte-bounded cut that must not split a character).
func TrimIncompleteRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// Bounded redacts s and then truncates it to max runes.
func Bounded(s string, max int) string {
	out, _ := Truncate(String(s), max)
	return out
}
