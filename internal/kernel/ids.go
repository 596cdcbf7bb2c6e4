package kernel

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// newID is prefix followed by 24 random hex digits (one allocation: the
// string, for a prefix of at most 32 bytes).
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	if len(prefix) > 32 {
		return prefix + hex.EncodeToString(b[:])
	}
	var out [32 + 2*len(b)]byte
	n := copy(out[:], prefix)
	hex.Encode(out[n:], b[:])
	return string(out[:n+2*len(b)])
}

// digest is the lower-case hex SHA-256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], s[:])
	return string(out[:])
}

// argsDigest digests the arguments in compact JSON form (insignificant
// whitespace removed), or as received when they are not valid JSON.
func argsDigest(raw json.RawMessage) string {
	var small [1024]byte
	buf := bytes.NewBuffer(small[:0])
	if json.Compact(buf, raw) == nil {
		return digest(buf.Bytes())
	}
	return digest(raw)
}
