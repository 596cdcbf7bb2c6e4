package kernel

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

// TestDigestAndIDEncoding holds the direct hex encodings equal to
// hex.EncodeToString: digests are lower-case SHA-256 hex, ids a prefix and
// 24 random hex digits, argument digests those of the compacted JSON
// (or of the bytes as received when they are not JSON), at any size.
func TestDigestAndIDEncoding(t *testing.T) {
	for _, in := range []string{"", "x", `{"a":1}`, strings.Repeat("z", 5000)} {
		sum := sha256.Sum256([]byte(in))
		if got, want := digest([]byte(in)), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("digest(%.20q) = %s, want %s", in, got, want)
		}
	}
	for _, c := range []struct{ raw, hashed string }{
		{`{"a": 1, "b" : [ 1, 2 ]}`, `{"a":1,"b":[1,2]}`},
		{`{"a":"` + strings.Repeat("y", 3000) + `"} `, `{"a":"` + strings.Repeat("y", 3000) + `"}`},
		{`{"a":`, `{"a":`},
		{"not json", "not json"},
	} {
		if got, want := argsDigest([]byte(c.raw)), digest([]byte(c.hashed)); got != want {
			t.Errorf("argsDigest(%.30q) = %s, want the digest of %.30q", c.raw, got, c.hashed)
		}
	}
	long := strings.Repeat("p", 40) + "_"
	for _, prefix := range []string{"inv_", "call_", long} {
		id := newID(prefix)
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `[0-9a-f]{24}$`).MatchString(id) {
			t.Errorf("newID(%q) = %q", prefix, id)
		}
		if newID(prefix) == id {
			t.Errorf("newID(%q) repeated %q", prefix, id)
		}
	}
}
