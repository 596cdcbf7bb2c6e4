// Package cursortoken makes and checks the opaque, authenticated cursor
// tokens that observation calls hand out (the board's
// observe_session_messages, wait_for_agent_events): a token names a
// position (a few unsigned integers) in one scope (a session, an owner's
// project) and can be made only with the store's secret key.
//
// A token is Prefix + base64url(tag || fields XOR mask(tag)): fields are
// the position's integers, big-endian; tag is the first TagBytes of the
// HMAC-SHA256 of scope, a zero byte and the fields under a key derived
// from the secret; mask is the HMAC-SHA256 of the tag under a second
// derived key. The position is therefore not in clear, the same position
// always gives the same token (a synthetic-IV construction), and a token
// edited, forged without the key, or issued for another scope fails Parse.
// The package knows no domain: a caller judges the position it gets back.
package cursortoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// Bounds of a format.
const (
	// KeyBytes is the size of the secret key a store holds for its tokens.
	KeyBytes = 32
	// TagBytes is the size of a token's authentication tag.
	TagBytes = 16
	// MaxFields bounds a format's integers: the mask is one HMAC-SHA256.
	MaxFields = sha256.Size / 8
)

// Why Parse refused a token.
var (
	// ErrTooLong: the token is longer than the format's MaxChars.
	ErrTooLong = errors.New("cursortoken: token too long")
	// ErrMalformed: not the format's prefix, base64url or length.
	ErrMalformed = errors.New("cursortoken: not a token of this format")
	// ErrForeign: edited, forged without the key or of another scope.
	ErrForeign = errors.New("cursortoken: not issued for this scope")
)

// Format describes one kind of token.
type Format struct {
	// Prefix starts every token of the format.
	Prefix string
	// Label is the key-derivation label; formats with different labels
	// have independent keys even when they share a secret.
	Label string
	// Fields is the number of integers a token carries (1 to MaxFields).
	Fields int
	// MaxChars bounds a token as accepted by Parse.
	MaxChars int
}

// Keys make and parse tokens of one format under one secret.
type Keys struct {
	f        Format
	mac, enc []byte
}

// New derives the keys of format f from secret. It panics when secret is
// not KeyBytes long or f.Fields is not 1 to MaxFields: a store must not
// issue cursors it cannot authenticate.
func New(f Format, secret []byte) Keys {
	if len(secret) != KeyBytes {
		panic("cursortoken: the secret key is not KeyBytes long")
	}
	if f.Fields < 1 || f.Fields > MaxFields {
		panic("cursortoken: a format carries 1 to MaxFields integers")
	}
	derive := func(use string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(f.Label + use))
		return m.Sum(nil)
	}
	return Keys{f: f, mac: derive("mac"), enc: derive("enc")}
}

func (k Keys) tag(scope string, fields []byte) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(fields)
	return m.Sum(nil)[:TagBytes]
}

func (k Keys) mask(tag []byte) []byte {
	m := hmac.New(sha256.New, k.enc)
	m.Write(tag)
	return m.Sum(nil)[:8*k.f.Fields]
}

func xorInto(dst, a, b []byte) {
	for i := range dst {
		dst[i] = a[i] ^ b[i]
	}
}

// Make returns the token of position fields in scope. It panics when
// len(fields) is not the format's Fields.
func (k Keys) Make(scope string, fields ...uint64) string {
	if len(fields) != k.f.Fields {
		panic("cursortoken: wrong number of fields")
	}
	plain := make([]byte, 8*len(fields))
	for i, v := range fields {
		binary.BigEndian.PutUint64(plain[8*i:], v)
	}
	b := make([]byte, TagBytes+len(plain))
	tag := k.tag(scope, plain)
	copy(b, tag)
	xorInto(b[TagBytes:], plain, k.mask(tag))
	return k.f.Prefix + base64.RawURLEncoding.EncodeToString(b)
}

// Parse returns the position of a token Make issued for scope under the
// same secret and format. Errors: ErrTooLong, ErrMalformed, ErrForeign.
func (k Keys) Parse(tok, scope string) ([]uint64, error) {
	if len(tok) > k.f.MaxChars {
		return nil, ErrTooLong
	}
	rest, ok := strings.CutPrefix(tok, k.f.Prefix)
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if !ok || err != nil || len(b) != TagBytes+8*k.f.Fields {
		return nil, ErrMalformed
	}
	tag := b[:TagBytes]
	plain := make([]byte, 8*k.f.Fields)
	xorInto(plain, b[TagBytes:], k.mask(tag))
	if !hmac.Equal(tag, k.tag(scope, plain)) {
		return nil, ErrForeign
	}
	out := make([]uint64, k.f.Fields)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(plain[8*i:])
	}
	return out, nil
}
