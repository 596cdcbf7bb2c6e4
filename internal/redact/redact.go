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
//
// No pattern needs a word boundary on either side: a credential glued to
// the text around it (x_AKIA…, build-ghp_…, 7sk-…, path/wc_pat_…) is
// still a credential. A pattern whose prefix can also end an ordinary
// word (task-…, VisualBasic …) sets wordTail; its regular expression's
// first group is the credential's body.
type rule struct {
	re      *regexp.Regexp
	needles []string
	// wordTail: directly after an ASCII letter the match is a credential
	// only when its body looks generated (see generated).
	wordTail bool
}

var rules = []rule{
	// PEM private keys, whole block.
	{re: regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)`), needles: []string{"private key"}},
	// Authorization headers and bearer tokens.
	{re: regexp.MustCompile(`(?i)(?:bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})`), needles: []string{"bearer", "basic"}, wordTail: true},
	// WebCodex credentials and common vendor token shapes.
	{re: regexp.MustCompile(`wc_(pat|agent|pair|csec)_[A-Za-z0-9_-]{8,}`), needles: []string{"wc_pat_", "wc_agent_", "wc_pair_", "wc_csec_"}},
	{re: regexp.MustCompile(`wck_[A-Za-z0-9_-]{8,}`), needles: []string{"wck_"}},
	{re: regexp.MustCompile(`sk-([A-Za-z0-9_-]{16,})`), needles: []string{"sk-"}, wordTail: true},
	{re: regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`), needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{re: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), needles: []string{"github_pat_"}},
	{re: regexp.MustCompile(`xox[abprs]-[A-Za-z0-9-]{10,}`), needles: []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}},
	{re: regexp.MustCompile(`AKIA[0-9A-Z]{16}`), needles: []string{"akia"}},
	{re: regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`), needles: []string{"aiza"}},
}

// replace returns s with every match of r replaced by Marker.
func (r rule) replace(s string) string {
	if !r.wordTail {
		return r.re.ReplaceAllString(s, Marker)
	}
	locs := r.re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] > 0 && isLetter(s[l[0]-1]) && !generated(s[l[2]:l[3]]) {
			continue // task-implement-fair-scheduling, VisualBasic compiler
		}
		b.WriteString(s[last:l[0]])
		b.WriteString(Marker)
		last = l[1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// generated reports whether a credential body looks machine-generated
// rather than like words: it holds an upper-case letter, a lower-case
// letter and a digit, as random base62 or base64 text of a credential's
// length almost always does and slugs and prose almost never do.
func generated(body string) bool {
	var upper, lowerCase, digit bool
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lowerCase = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	return upper && lowerCase && digit
}

// secretAssign matches key=value and key: value where the key names a
// secret; group 1 is the key and separator, kept in the output.
var secretAssign = rule{
	re: regexp.MustCompile(`(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credential)s?["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`),
	needles: []string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
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
func String(s string) string { return redactWith(rules, s) }

// redactWith is String with table in place of rules: a table with the
// same needles in the same order (a benchmark's baseline).
func redactWith(table []rule, s string) string {
	if s == "" {
		return s
	}
	set := candidates(s)
	if set == 0 {
		return s
	}
	changed := false
	for i, r := range table {
		if set&(1<<i) != 0 {
			s = r.replace(s)
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
