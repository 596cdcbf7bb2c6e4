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

var patterns = []*regexp.Regexp{
	// PEM private keys, whole block.
	regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	// Authorization headers and bearer tokens.
	regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`),
	// WebCodex credentials and common vendor token shapes.
	regexp.MustCompile(`wc_(pat|agent|pair|csec)_[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`wck_[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`),
}

// secretAssign matches key=value and key: value where the key names a
// secret; group 1 is the key and separator, kept in the output.
var secretAssign = regexp.MustCompile(`(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credential)s?["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"']+)`)

// String returns s with every recognised credential replaced by Marker.
func String(s string) string {
	if s == "" {
		return s
	}
	for _, p := range patterns {
		s = p.ReplaceAllString(s, Marker)
	}
	s = secretAssign.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretAssign.FindStringSubmatch(m)
		if sub[2] == Marker {
			return m
		}
		return sub[1] + Marker
	})
	return s
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

// Bounded redacts s and then truncates it to max runes.
func Bounded(s string, max int) string {
	out, _ := Truncate(String(s), max)
	return out
}
