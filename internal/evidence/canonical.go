package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/transparency-dev/merkle/rfc6962"
)

// Magic opens every canonical record encoding.
const Magic = "WCEV"

// MaxCanonicalBytes bounds one canonical encoding (decoders refuse more).
const MaxCanonicalBytes = 64 << 10

// Canonical errors, distinguished by verification.
var (
	// ErrUnsupportedSchema: the bytes carry a schema version this build
	// cannot decode.
	ErrUnsupportedSchema = errors.New("evidence: unsupported schema version")
	// ErrMalformed: the bytes are not a canonical encoding.
	ErrMalformed = errors.New("evidence: malformed canonical record")
)

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

// Header is the part of the canonical bytes that binds a record to its
// journal, its signing key and its leaf position.
type Header struct {
	Version   uint16
	JournalID string
	KeyID     string
	Index     uint64
}

// Canonical returns the deterministic encoding of r, in version
// r.Schema(), as the leaf at index of journal journalID, appended while key
// keyID was current. The format (docs/evidence.md) is: the 4 bytes "WCEV",
// the schema version as a big-endian uint16, then every field in a fixed
// order, with no names (version 2 ends with replay_of after the fields of
// version 1; version 3 ends with replay_of, "" for no replay, and the 32
// raw bytes of the salt):
// strings as a big-endian uint32 byte length followed by the UTF-8 bytes,
// integers as 8-byte big-endian two's complement, lists as a big-endian
// uint32 count followed by each string, SHA-256 digests as one length byte
// (0 for none, 32) followed by the raw bytes. The time is Unix nanoseconds.
// r must be valid ([Record.Validate]).
func (r Record) Canonical(journalID, keyID string, index uint64) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if journalID == "" || keyID == "" || len(journalID) > MaxFieldBytes || len(keyID) > MaxFieldBytes {
		return nil, fmt.Errorf("evidence: canonical: journal id and key id must be 1..%d bytes", MaxFieldBytes)
	}
	var e enc
	e.b = make([]byte, 0, 512)
	e.b = append(e.b, Magic...)
	e.b = binary.BigEndian.AppendUint16(e.b, r.Schema())
	e.str(journalID)
	e.str(keyID)
	e.u64(index)
	e.str(r.InvocationID)
	e.u64(uint64(r.At.UnixNano()))
	e.str(r.Tool)
	e.str(string(r.Source))
	e.str(r.TransportEra)
	e.str(r.Claim.RecordingSessionID)
	e.str(r.Claim.BusinessSessionID)
	e.str(r.Claim.Project)
	e.str(r.Claim.PrincipalKind)
	e.digest(r.Claim.ClientWindow)
	e.str(r.Verified.SessionID)
	e.str(r.Verified.Project)
	e.str(r.Verified.Authority)
	e.str(r.Verified.Lifecycle)
	e.str(string(r.Binding))
	e.list(len(r.Reasons), func(i int) string { return string(r.Reasons[i]) })
	e.list(len(r.CheckedKeys), func(i int) string { return string(r.CheckedKeys[i]) })
	e.list(len(r.SkippedKeys), func(i int) string { return string(r.SkippedKeys[i]) })
	e.digest(r.SessionRecordDigest)
	e.str(string(r.Outcome))
	e.str(r.ErrorKind)
	e.u64(uint64(r.DurationMS))
	e.digest(r.ArgumentsDigest)
	e.digest(r.ResultDigest)
	switch {
	case len(r.Salt) > 0:
		e.str(r.ReplayOf)
		e.b = append(e.b, r.Salt...)
	case r.Replayed:
		e.str(r.ReplayOf)
	}
	return e.b, nil
}

// SetCanonicalIndex returns canonical bytes (of a version this build writes) with
// the index field replaced, without re-encoding: it lets a caller encode a
// record before its index is known. It copies b.
func SetCanonicalIndex(b []byte, index uint64) []byte {
	out := bytes.Clone(b)
	off := len(Magic) + 2
	for i := 0; i < 2; i++ { // journal id, key id
		off += 4 + int(binary.BigEndian.Uint32(out[off:]))
	}
	binary.BigEndian.PutUint64(out[off:], index)
	return out
}

type enc struct{ b []byte }

func (e *enc) str(s string) {
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(len(s)))
	e.b = append(e.b, s...)
}

// digest writes a hex digest field as a length byte (0 or 32) and the raw
// bytes. Validate guarantees the hex is valid.
func (e *enc) digest(h string) {
	if h == "" {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(e.b, 32)
	e.b, _ = hex.AppendDecode(e.b, []byte(h))
}

func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) list(n int, at func(int) string) {
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	for i := 0; i < n; i++ {
		e.str(at(i))
	}
}

// SchemaOf returns the schema version of canonical bytes, or ErrMalformed
// when they do not start with the magic and a version.
func SchemaOf(b []byte) (uint16, error) {
	if len(b) < len(Magic)+2 || !bytes.HasPrefix(b, []byte(Magic)) {
		return 0, ErrMalformed
	}
	return binary.BigEndian.Uint16(b[len(Magic):]), nil
}

// SupportedSchema reports whether this build reads canonical schema
// version v.
func SupportedSchema(v uint16) bool { return v >= MinSchemaVersion && v <= SchemaVersion }

// ParseCanonical decodes canonical bytes. It fails with ErrUnsupportedSchema
// for a schema version this build does not read and ErrMalformed for
// anything that is not exactly one valid encoding (truncated, trailing
// bytes, invalid UTF-8, a record that fails Validate, a version-2
// encoding of a record that is no replay, or a version-3 encoding whose
// salt is not exactly SaltBytes). Canonical(h.JournalID, h.KeyID,
// h.Index) of the result reproduces b byte for byte.
func ParseCanonical(b []byte) (Header, Record, error) {
	v, err := SchemaOf(b)
	if err != nil {
		return Header{}, Record{}, err
	}
	if !SupportedSchema(v) {
		return Header{Version: v}, Record{}, fmt.Errorf("%w %d", ErrUnsupportedSchema, v)
	}
	if len(b) > MaxCanonicalBytes {
		return Header{}, Record{}, ErrMalformed
	}
	d := dec{b: b[len(Magic)+2:]}
	h := Header{Version: v}
	var r Record
	h.JournalID = d.str()
	h.KeyID = d.str()
	h.Index = d.u64()
	r.InvocationID = d.str()
	r.At = time.Unix(0, int64(d.u64())).UTC()
	r.Tool = d.str()
	r.Source = Source(d.str())
	r.TransportEra = d.str()
	r.Claim.RecordingSessionID = d.str()
	r.Claim.BusinessSessionID = d.str()
	r.Claim.Project = d.str()
	r.Claim.PrincipalKind = d.str()
	r.Claim.ClientWindow = d.digest()
	r.Verified.SessionID = d.str()
	r.Verified.Project = d.str()
	r.Verified.Authority = d.str()
	r.Verified.Lifecycle = d.str()
	r.Binding = Binding(d.str())
	for _, s := range d.list() {
		r.Reasons = append(r.Reasons, Reason(s))
	}
	for _, s := range d.list() {
		r.CheckedKeys = append(r.CheckedKeys, CheckKey(s))
	}
	for _, s := range d.list() {
		r.SkippedKeys = append(r.SkippedKeys, CheckKey(s))
	}
	r.SessionRecordDigest = d.digest()
	r.Outcome = Outcome(d.str())
	r.ErrorKind = d.str()
	r.DurationMS = int64(d.u64())
	r.ArgumentsDigest = d.digest()
	r.ResultDigest = d.digest()
	switch v {
	case 2:
		r.ReplayOf = d.str()
		// Version 2 is a replay's encoding and names its original.
		r.Replayed = true
		if r.ReplayOf == "" {
			d.bad = true
		}
	case SaltedSchemaVersion:
		r.ReplayOf = d.str()
		r.Replayed = r.ReplayOf != ""
		if len(d.b) != SaltBytes {
			d.bad = true
		} else {
			r.Salt, d.b = bytes.Clone(d.b), nil
		}
	}
	if d.bad || len(d.b) != 0 {
		return Header{}, Record{}, ErrMalformed
	}
	if err := r.Validate(); err != nil {
		return Header{}, Record{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if h.JournalID == "" || h.KeyID == "" {
		return Header{}, Record{}, ErrMalformed
	}
	return h, r, nil
}

type dec struct {
	b   []byte
	bad bool
}

func (d *dec) u32() uint32 {
	if len(d.b) < 4 {
		d.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) u64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) str() string {
	n := d.u32()
	if d.bad || uint64(n) > uint64(len(d.b)) || n > MaxFieldBytes {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	if !utf8.ValidString(s) {
		d.bad = true
	}
	return s
}

func (d *dec) digest() string {
	if len(d.b) < 1 {
		d.bad = true
		return ""
	}
	n := int(d.b[0])
	d.b = d.b[1:]
	if n == 0 {
		return ""
	}
	if n != 32 || len(d.b) < 32 {
		d.bad = true
		return ""
	}
	s := hex.EncodeToString(d.b[:32])
	d.b = d.b[32:]
	return s
}

func (d *dec) list() []string {
	n := d.u32()
	if d.bad || n > MaxListItems {
		d.bad = true
		return nil
	}
	out := make([]string, 0, n)
	for i := uint32(0); i < n && !d.bad; i++ {
		out = append(out, d.str())
	}
	return out
}

// Hasher is the RFC 6962 SHA-256 tree hasher every journal uses.
var Hasher = rfc6962.DefaultHasher

// LeafHash returns the RFC 6962 leaf hash of canonical bytes:
// SHA-256(0x00 || canonical).
func LeafHash(canonical []byte) []byte { return Hasher.HashLeaf(canonical) }
