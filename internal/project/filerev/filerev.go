// Package filerev names the content of a project file so that an edit can be
// fenced by what the agent last read.
//
// A read revision is "rv1:" followed by the first 32 hex digits of the
// SHA-256 of the file's bytes: equal bytes always give equal revisions, on
// any host and across restarts, and the prefix lets the scheme change
// without ambiguity. The full SHA-256 is also reported and accepted as a
// fence.
package filerev

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Prefix starts every read revision of this scheme.
const Prefix = "rv1:"

// SHA256 returns the lowercase hex SHA-256 of content.
func SHA256(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

// Of returns the read revision of content.
func Of(content []byte) string { return FromSHA256(SHA256(content)) }

// FromSHA256 returns the read revision of the content whose lowercase hex
// SHA-256 is sum (for callers that hash a stream).
func FromSHA256(sum string) string { return Prefix + sum[:32] }

// Matches reports whether fence (a read revision or a full SHA-256, in any
// letter case) names content.
func Matches(fence string, content []byte) bool {
	fence = strings.ToLower(strings.TrimSpace(fence))
	sum := SHA256(content)
	if strings.HasPrefix(fence, Prefix) {
		return fence == Prefix+sum[:32]
	}
	return fence == sum
}

// IsSHA256 reports whether s is a lowercase hex SHA-256, as SHA256
// returns it.
func IsSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
