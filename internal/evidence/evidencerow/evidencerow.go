// Package evidencerow is the stored form of an evidence journal's rows,
// shared by the SQLite journal (evidencedb) and the PostgreSQL journal
// (evidencepg) so that both keep exactly the same values: one column per
// record field, lists comma-joined, times as Unix nanoseconds, the
// canonical bytes and the leaf hash as blobs; and the query rules both
// journals apply (session ids, limits).
package evidencerow

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// ColumnsV1 are the columns of a record row of a journal written before
// replays were recorded; Columns adds replay_of. Args and Decode use the
// order of Columns.
const (
	ColumnsV1 = `idx, invocation_id, key_id, at_ns, tool, source, transport_era,
	claim_recording_session_id, claim_business_session_id, claim_project, claim_principal_kind, claim_client_window,
	verified_session_id, verified_project, verified_authority, verified_lifecycle,
	session_binding, binding_reasons, checked_keys, skipped_keys, session_record_digest,
	outcome, error_kind, duration_ms, arguments_digest, result_digest, canonical, leaf_hash`
	Columns = ColumnsV1 + `, replay_of`
	// NumColumns is how many columns Columns names.
	NumColumns = 29
)

// Args are the values of Columns for r stored at index under keyID with
// its canonical bytes and leaf hash.
func Args(index uint64, keyID string, r evidence.Record, canon, leaf []byte) []any {
	return []any{int64(index), r.InvocationID, keyID, r.At.UnixNano(), r.Tool, string(r.Source), r.TransportEra,
		r.Claim.RecordingSessionID, r.Claim.BusinessSessionID, r.Claim.Project, r.Claim.PrincipalKind, r.Claim.ClientWindow,
		r.Verified.SessionID, r.Verified.Project, r.Verified.Authority, r.Verified.Lifecycle,
		string(r.Binding), joinList(r.Reasons), joinList(r.CheckedKeys), joinList(r.SkippedKeys), r.SessionRecordDigest,
		string(r.Outcome), r.ErrorKind, r.DurationMS, r.ArgumentsDigest, r.ResultDigest, canon, leaf, r.ReplayOf}
}

func joinList[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

func splitList[T ~string](s string) []T {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]T, len(parts))
	for i, p := range parts {
		out[i] = T(p)
	}
	return out
}

// Decode converts one scanned row (Columns order, NumColumns values)
// without trusting its types: any value of the wrong type makes the row's
// columns undecodable (ColumnsErr), never a panic.
func Decode(v []any) evidence.StoredRow {
	var row evidence.StoredRow
	var errs []error
	str := func(i int) string {
		switch x := v[i].(type) {
		case string:
			return x
		case []byte:
			return string(x)
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want text", i, v[i]))
		return ""
	}
	num := func(i int) int64 {
		if x, ok := v[i].(int64); ok {
			return x
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want integer", i, v[i]))
		return 0
	}
	blob := func(i int) []byte {
		switch x := v[i].(type) {
		case []byte:
			return append([]byte(nil), x...)
		case string:
			return []byte(x)
		}
		errs = append(errs, fmt.Errorf("column %d is %T, want blob", i, v[i]))
		return nil
	}
	row.Index = uint64(num(0))
	row.InvocationID = str(1)
	row.KeyID = str(2)
	r := &row.Columns
	r.InvocationID = row.InvocationID
	r.At = time.Unix(0, num(3)).UTC()
	r.Tool = str(4)
	r.Source = evidence.Source(str(5))
	r.TransportEra = str(6)
	r.Claim = evidence.Claim{RecordingSessionID: str(7), BusinessSessionID: str(8), Project: str(9), PrincipalKind: str(10), ClientWindow: str(11)}
	r.Verified = evidence.Verified{SessionID: str(12), Project: str(13), Authority: str(14), Lifecycle: str(15)}
	r.Binding = evidence.Binding(str(16))
	r.Reasons = splitList[evidence.Reason](str(17))
	r.CheckedKeys = splitList[evidence.CheckKey](str(18))
	r.SkippedKeys = splitList[evidence.CheckKey](str(19))
	r.SessionRecordDigest = str(20)
	r.Outcome = evidence.Outcome(str(21))
	r.ErrorKind = str(22)
	r.DurationMS = num(23)
	r.ArgumentsDigest = str(24)
	r.ResultDigest = str(25)
	row.Canonical = blob(26)
	row.LeafHash = blob(27)
	r.ReplayOf = str(28)
	r.Replayed = r.ReplayOf != ""
	if len(errs) > 0 {
		row.ColumnsErr = errors.Join(errs...)
	} else if err := r.Validate(); err != nil {
		row.ColumnsErr = err
	}
	return row
}

// Checkpoint is the stored checkpoint row (size, key id, signed note,
// creation time in Unix nanoseconds) as a SignedCheckpoint, its origin,
// size and root read from the note; a row whose size disagrees with its
// note, or whose note does not parse, is an error.
func Checkpoint(size int64, keyID, note string, createdAtNS int64) (evidence.SignedCheckpoint, error) {
	sc := evidence.SignedCheckpoint{KeyID: keyID, Note: note}
	body, _, _ := strings.Cut(note, "\n\n")
	cp, err := evidence.ParseCheckpointBody(body + "\n")
	if err != nil {
		return sc, err
	}
	sc.Checkpoint = cp
	sc.CreatedAt = time.Unix(0, createdAtNS).UTC()
	if uint64(size) != cp.Size {
		return sc, fmt.Errorf("checkpoint row size %d disagrees with its note", size)
	}
	return sc, nil
}

// CheckSessionID rejects the empty id, which would match every record
// without a claimed session, and one longer than a record field.
func CheckSessionID(id string) error {
	if id == "" || len(id) > evidence.MaxFieldBytes {
		return failure.New(failure.InvalidArguments, "session id must be 1..%d bytes", evidence.MaxFieldBytes)
	}
	return nil
}

// ClampLimit applies the SessionRecords limit rule: negative is
// failure.InvalidArguments, 0 is evidence.DefaultSessionRecords, above
// evidence.MaxSessionRecords is that maximum.
func ClampLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, failure.New(failure.InvalidArguments, "limit must not be negative")
	case limit == 0:
		return evidence.DefaultSessionRecords, nil
	case limit > evidence.MaxSessionRecords:
		return evidence.MaxSessionRecords, nil
	}
	return limit, nil
}

// CheckOrigin rejects an origin that cannot name a signing key: "" is
// allowed (the journal's default); otherwise 1..evidence.MaxFieldBytes
// bytes of UTF-8 without spaces or '+' (failure.InvalidArguments).
func CheckOrigin(o string) error {
	if o != "" && (len(o) > evidence.MaxFieldBytes || strings.ContainsAny(o, "+ \t\r\n") || !utf8.ValidString(o)) {
		return failure.New(failure.InvalidArguments, "evidence origin %q must be 1..%d bytes of UTF-8 without spaces or '+' (it names the signing key)", o, evidence.MaxFieldBytes)
	}
	return nil
}

// Defaults is opts with every unset field given its default: time.Now,
// evidence.CheckpointEvery, evidence.CheckpointInterval, slog.Default().
func Defaults(opts evidence.Options) evidence.Options {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CheckpointEvery == 0 {
		opts.CheckpointEvery = evidence.CheckpointEvery
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = evidence.CheckpointInterval
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return opts
}

// PurgeSet is the SET list of the UPDATE that purges a record's payload
// (docs/decisions/0086-evidence-payload-purge.md) after the canonical
// bytes (and with them the salt) were set empty, in each database's
// spelling of an empty blob: every column of the record's content becomes
// empty. Kept: the index, leaf hash, key id, invocation id,
// time (the retention cutoff reads it), the claimed and verified session
// ids, the binding and replay_of (session reads, counts and bundles find
// and count a purged session's records by them).
const PurgeSet = `tool = '', source = '', transport_era = '',
	claim_project = '', claim_principal_kind = '', claim_client_window = '',
	verified_project = '', verified_authority = '', verified_lifecycle = '',
	binding_reasons = '', checked_keys = '', skipped_keys = '', session_record_digest = '',
	outcome = '', error_kind = '', duration_ms = 0, arguments_digest = '', result_digest = ''`
