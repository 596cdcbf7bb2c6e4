// Package evidence is the tamper-evident invocation journal's domain: one
// [Record] per kernel invocation (refused ones included), its canonical
// versioned byte encoding, RFC 6962 leaf hashing, signed checkpoints (C2SP
// signed notes, Ed25519), the signing-key policy, streaming verification and
// self-contained per-session bundles.
//
// A Record keeps the caller's CLAIM (the session ids, project, principal kind
// and hashed client window it presented) apart from the VERIFIED values the
// runtime copied from the session store, and states which of the two
// supports the attribution ([Binding]). Integrity (this package) proves that
// a record is unchanged since it was appended; it never proves the claim was
// true — only a verified binding does that, and only for attribution.
//
// This package owns no database. The SQLite journal that appends records,
// keeps the Merkle tree state and signs checkpoints is
// internal/evidence/evidencedb; the format is specified in docs/evidence.md
// so that an outside verifier can reimplement it.
package evidence

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
)

// The versions of the canonical record encoding this build writes and
// reads; verification reports any other version as unsupported_schema.
// Version 2 is version 1 followed by replay_of, and is written exactly for
// the records of unsalted replays ([Record.Replayed]). Version 3 is
// version 1 followed by replay_of ("" for a record that is no replay) and
// the record's 32-byte random salt ([Record.Salt]); the journals write
// every new record as version 3 (docs/decisions/0086-evidence-payload-purge.md),
// so that once its payload is purged its leaf hash no longer confirms a
// guessed payload. A record without a salt is written as version 1 or 2,
// byte for byte as before version 3 existed, so that each record has one
// encoding and journals written earlier keep verifying.
const (
	// MinSchemaVersion is the oldest version this build reads.
	MinSchemaVersion = 1
	// SchemaVersion is the newest version this build writes and reads.
	SchemaVersion = 3
	// SaltedSchemaVersion is the version of a record with a salt.
	SaltedSchemaVersion = 3
)

// SaltBytes is the length of a record's salt ([Record.Salt]).
const SaltBytes = 32

// Bounds of a record's fields. Validate rejects values beyond them.
const (
	// MaxFieldBytes bounds every string field of a record.
	MaxFieldBytes = 512
	// MaxListItems bounds binding_reasons, checked_keys and skipped_keys.
	MaxListItems = 16
	// DigestHexChars is the length of every digest field: lowercase hex
	// SHA-256.
	DigestHexChars = 64
)

// Source is where an invocation entered the runtime.
type Source string

// The evidence sources (closed list).
const (
	SourceMCP      Source = "mcp"
	SourceREST     Source = "rest"
	SourceCLI      Source = "cli"
	SourceInternal Source = "internal"
	SourceConsole  Source = "console"
)

// Sources lists every Source.
var Sources = []Source{SourceMCP, SourceREST, SourceCLI, SourceInternal, SourceConsole}

// Binding is the evidence state of the recorder claim.
type Binding string

// The binding states (closed list).
const (
	// BindingVerified: the claimed session exists in the session store and
	// every checked key matched; Verified holds the store's values.
	BindingVerified Binding = "verified"
	// BindingSessionless: no session was claimed and the runtime, not the
	// caller, chose a sessionless reason from SessionlessReasons.
	BindingSessionless Binding = "sessionless"
	// BindingInvalidClaim: a session was claimed and at least one check
	// failed; every failing reason is listed. The claim is kept verbatim as
	// negative evidence and never rewritten.
	BindingInvalidClaim Binding = "invalid_claim"
	// BindingUnknown: the call was refused before the recorder claim was
	// checked (unknown tool, malformed arguments, ...); reason not_checked.
	BindingUnknown Binding = "unknown"
)

// Bindings lists every Binding.
var Bindings = []Binding{BindingVerified, BindingSessionless, BindingInvalidClaim, BindingUnknown}

// Reason is one binding reason.
type Reason string

// Binding reasons (closed list). Exactly ReasonStoreMatch for verified; one
// of SessionlessReasons for sessionless; one or more of InvalidReasons for
// invalid_claim; ReasonNotChecked for unknown.
const (
	ReasonStoreMatch Reason = "runtime_session_store_match"

	ReasonNotRegistered      Reason = "not_registered"
	ReasonMalformedSessionID Reason = "malformed_session_id"
	ReasonSessionClosed      Reason = "session_closed"
	ReasonAuthorityMismatch  Reason = "authority_mismatch"
	ReasonProjectMismatch    Reason = "project_mismatch"
	ReasonGuardDenied        Reason = "guard_denied"
	ReasonStoreUnavailable   Reason = "store_unavailable"
	ReasonStoreCorrupt       Reason = "store_corrupt"

	ReasonNoRecorderRequested Reason = "no_recorder_requested"
	ReasonRuntimeInternal     Reason = "runtime_internal_operation"

	ReasonNotChecked Reason = "not_checked"
)

// InvalidReasons are the reasons an invalid_claim may carry.
var InvalidReasons = []Reason{ReasonNotRegistered, ReasonMalformedSessionID, ReasonSessionClosed,
	ReasonAuthorityMismatch, ReasonProjectMismatch, ReasonGuardDenied, ReasonStoreUnavailable, ReasonStoreCorrupt}

// SessionlessReasons is the runtime's allowlist for sessionless records.
var SessionlessReasons = []Reason{ReasonNoRecorderRequested, ReasonRuntimeInternal}

// CheckKey names one comparison made against the session store.
type CheckKey string

// The check keys (closed list).
const (
	KeyRegistration CheckKey = "registration" // the session id exists in the store
	KeyAuthority    CheckKey = "authority"    // the caller's authority group owns it
	KeyProject      CheckKey = "project"      // bound to the resolved project
	KeyLifecycle    CheckKey = "lifecycle"    // active (for mutating tools)
	KeyGuard        CheckKey = "guard"        // the session's guard permits the tool
)

// CheckKeys lists every CheckKey.
var CheckKeys = []CheckKey{KeyRegistration, KeyAuthority, KeyProject, KeyLifecycle, KeyGuard}

// Outcome is how the invocation ended.
type Outcome string

// The outcomes (closed list).
const (
	OutcomeOK      Outcome = "ok"
	OutcomeFailed  Outcome = "failed"
	OutcomeRefused Outcome = "refused" // refused before the handler ran
	OutcomeUnknown Outcome = "unknown" // e.g. interrupted: effects unknown
)

// Outcomes lists every Outcome.
var Outcomes = []Outcome{OutcomeOK, OutcomeFailed, OutcomeRefused, OutcomeUnknown}

// Claim is what the caller presented. It is recorded verbatim (bounded),
// whatever the binding, and never promoted to a verified fact.
type Claim struct {
	RecordingSessionID string `json:"recording_session_id"`
	BusinessSessionID  string `json:"business_session_id"`
	Project            string `json:"project"`
	PrincipalKind      string `json:"principal_kind"`
	// ClientWindow is the hex SHA-256 of the client window (never the raw
	// window id), or "".
	ClientWindow string `json:"client_window"`
}

// Verified holds values copied from the session store at check time. It is
// set only when Binding is verified and is all-empty otherwise.
type Verified struct {
	SessionID string `json:"session_id"`
	Project   string `json:"project"`
	Authority string `json:"authority"`
	Lifecycle string `json:"lifecycle"`
}

// Record is one journal record: one kernel invocation. It carries digests,
// never arguments or results.
type Record struct {
	// InvocationID and At are assigned by the runtime, never by a caller.
	InvocationID string    `json:"invocation_id"`
	At           time.Time `json:"at"`
	Tool         string    `json:"tool"`
	Source       Source    `json:"source"`
	// TransportEra is the MCP protocol era ("2025-11-25", ...) or "".
	TransportEra string   `json:"transport_era"`
	Claim        Claim    `json:"claim"`
	Verified     Verified `json:"verified"`
	Binding      Binding  `json:"session_binding"`
	Reasons      []Reason `json:"binding_reasons"`
	// CheckedKeys were compared against the store; SkippedKeys were not
	// (absent on one side or not applicable to the tool), so verified never
	// reads as "every key matched".
	CheckedKeys []CheckKey `json:"checked_keys"`
	SkippedKeys []CheckKey `json:"skipped_keys"`
	// SessionRecordDigest is the hex SHA-256 of the session store record as
	// observed at check time ("" when none was read).
	SessionRecordDigest string  `json:"session_record_digest"`
	Outcome             Outcome `json:"outcome"`
	// ErrorKind is the failure.Kind of a failed or refused call, or "".
	ErrorKind       string `json:"error_kind"`
	DurationMS      int64  `json:"duration_ms"`
	ArgumentsDigest string `json:"arguments_digest"`
	ResultDigest    string `json:"result_digest"`
	// Replayed marks the record of an idempotent replay: a call that
	// repeated an earlier one under an idempotency key and returned that
	// call's result, changing nothing; ReplayOf is then the id of the
	// original effect as the domain's store holds it (a wc_msg_ message id
	// of a replayed post, a wc_cmp_ completion id of a replayed
	// completion). Both are set together, only with outcome ok.
	Replayed bool   `json:"replayed"`
	ReplayOf string `json:"replay_of"`
	// Salt is nil or SaltBytes random bytes the canonical encoding (version
	// 3) commits to, stored only inside the canonical bytes and destroyed
	// with them when the payload is purged. It is never shown in JSON: a
	// reader re-encoding a record takes it from the canonical bytes.
	Salt []byte `json:"-"`
}

// Schema returns the canonical schema version r is written in: 3 for a
// salted record, 2 for an unsalted replay, 1 for every other record.
func (r Record) Schema() uint16 {
	switch {
	case len(r.Salt) > 0:
		return SaltedSchemaVersion
	case r.Replayed:
		return 2
	}
	return 1
}

// Salted returns r with a fresh random salt (crypto/rand) unless it has
// one already: what the journals do to every record they append.
func Salted(r Record) Record {
	if len(r.Salt) == 0 {
		r.Salt = make([]byte, SaltBytes)
		rand.Read(r.Salt) // never fails (crypto/rand panics instead)
	}
	return r
}

// Validate rejects a record with a value outside the closed lists, an
// inconsistent binding, an over-long field or a malformed digest. Errors are
// failure.InvalidArguments.
func (r Record) Validate() error {
	bad := func(format string, args ...any) error {
		return failure.New(failure.InvalidArguments, "evidence record: "+format, args...)
	}
	if r.InvocationID == "" {
		return bad("invocation_id is empty")
	}
	if r.At.IsZero() {
		return bad("at is zero")
	}
	if r.Tool == "" {
		return bad("tool is empty")
	}
	type field struct{ name, s string }
	for _, f := range [...]field{
		{"invocation_id", r.InvocationID}, {"tool", r.Tool}, {"transport_era", r.TransportEra},
		{"claim.recording_session_id", r.Claim.RecordingSessionID}, {"claim.business_session_id", r.Claim.BusinessSessionID},
		{"claim.project", r.Claim.Project}, {"claim.principal_kind", r.Claim.PrincipalKind},
		{"verified.session_id", r.Verified.SessionID}, {"verified.project", r.Verified.Project},
		{"verified.authority", r.Verified.Authority}, {"verified.lifecycle", r.Verified.Lifecycle},
		{"error_kind", r.ErrorKind}, {"replay_of", r.ReplayOf},
	} {
		name, s := f.name, f.s
		if len(s) > MaxFieldBytes {
			return bad("%s is %d bytes; the limit is %d", name, len(s), MaxFieldBytes)
		}
		if !utf8.ValidString(s) {
			return bad("%s is not valid UTF-8", name)
		}
	}
	for _, f := range [...]field{
		{"claim.client_window", r.Claim.ClientWindow}, {"session_record_digest", r.SessionRecordDigest},
		{"arguments_digest", r.ArgumentsDigest}, {"result_digest", r.ResultDigest},
	} {
		name, d := f.name, f.s
		if d != "" && !isHexDigest(d) {
			return bad("%s must be %d lowercase hex characters", name, DigestHexChars)
		}
	}
	if !slices.Contains(Sources, r.Source) {
		return bad("unknown source %q", r.Source)
	}
	if !slices.Contains(Outcomes, r.Outcome) {
		return bad("unknown outcome %q", r.Outcome)
	}
	if r.DurationMS < 0 {
		return bad("duration_ms is negative")
	}
	if r.Replayed != (r.ReplayOf != "") {
		return bad("replayed is set exactly when replay_of names the original")
	}
	if len(r.Salt) != 0 && len(r.Salt) != SaltBytes {
		return bad("salt is %d bytes; it is absent or %d", len(r.Salt), SaltBytes)
	}
	if r.Replayed && r.Outcome != OutcomeOK {
		return bad("a replay's outcome is ok")
	}
	if len(r.Reasons) == 0 || len(r.Reasons) > MaxListItems {
		return bad("binding_reasons must hold 1..%d reasons", MaxListItems)
	}
	if hasDup(r.Reasons) {
		return bad("binding_reasons has a duplicate")
	}
	for _, keys := range [][]CheckKey{r.CheckedKeys, r.SkippedKeys} {
		if len(keys) > MaxListItems || hasDup(keys) {
			return bad("checked_keys and skipped_keys hold at most %d distinct keys", MaxListItems)
		}
		for _, k := range keys {
			if !slices.Contains(CheckKeys, k) {
				return bad("unknown check key %q", k)
			}
		}
	}
	for _, k := range r.CheckedKeys {
		if slices.Contains(r.SkippedKeys, k) {
			return bad("key %q is both checked and skipped", k)
		}
	}
	verifiedEmpty := r.Verified == Verified{}
	switch r.Binding {
	case BindingVerified:
		if len(r.Reasons) != 1 || r.Reasons[0] != ReasonStoreMatch {
			return bad("a verified binding has exactly the reason %s", ReasonStoreMatch)
		}
		// The verified values are the recorder's, or the business
		// session's when no recorder was claimed.
		claimed := r.Claim.RecordingSessionID
		if claimed == "" {
			claimed = r.Claim.BusinessSessionID
		}
		if r.Verified.SessionID == "" || r.Verified.SessionID != claimed {
			return bad("a verified binding needs the verified session id equal to the claimed one")
		}
	case BindingSessionless:
		if len(r.Reasons) != 1 || !slices.Contains(SessionlessReasons, r.Reasons[0]) {
			return bad("a sessionless binding has exactly one reason from %v", SessionlessReasons)
		}
		if r.Claim.RecordingSessionID != "" {
			return bad("a sessionless binding claims no recording session")
		}
	case BindingInvalidClaim:
		for _, x := range r.Reasons {
			if !slices.Contains(InvalidReasons, x) {
				return bad("reason %q is not an invalid_claim reason", x)
			}
		}
	case BindingUnknown:
		if len(r.Reasons) != 1 || r.Reasons[0] != ReasonNotChecked {
			return bad("an unknown binding has exactly the reason %s", ReasonNotChecked)
		}
	default:
		return bad("unknown session_binding %q", r.Binding)
	}
	if r.Binding != BindingVerified && !verifiedEmpty {
		return bad("verified values are set only for a verified binding")
	}
	return nil
}

func hasDup[T comparable](xs []T) bool {
	for i := range xs {
		if slices.Contains(xs[i+1:], xs[i]) {
			return true
		}
	}
	return false
}

func isHexDigest(s string) bool {
	if len(s) != DigestHexChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Digest returns the lowercase hex SHA-256 of b: the form of every digest
// field (arguments, result, client window, session record).
func Digest(b []byte) string {
	sum := sha256Sum(b)
	return hex.EncodeToString(sum[:])
}

// Entry is a record as stored: its leaf index in the journal's Merkle tree,
// its canonical bytes and leaf hash, and the key id bound into them.
type Entry struct {
	Index     uint64 `json:"index"`
	KeyID     string `json:"key_id"`
	Canonical []byte `json:"canonical"`
	LeafHash  []byte `json:"leaf_hash"`
	Record    Record `json:"record"`
	// Purged is set when the record's payload (canonical bytes, salt and
	// every column but the identifiers) was purged by retention: Canonical
	// is then empty, Record holds only the identifiers the journal keeps
	// (invocation id, time, claimed and verified session ids, binding,
	// replay_of: stored, no longer provable), and LeafHash is all that
	// remains to prove the record's place in the tree.
	Purged bool `json:"purged,omitempty"`
}

// Counts is the number of records of a session per binding state, and
// how many of them are replays (Record.Replayed: calls that returned an
// earlier call's result and changed nothing), whatever their binding.
type Counts struct {
	Verified     int64 `json:"verified"`
	Sessionless  int64 `json:"sessionless"`
	InvalidClaim int64 `json:"invalid_claim"`
	Unknown      int64 `json:"unknown"`
	Replays      int64 `json:"replays"`
}

// Add counts one record of binding b.
func (c *Counts) Add(b Binding, n int64) {
	switch b {
	case BindingVerified:
		c.Verified += n
	case BindingSessionless:
		c.Sessionless += n
	case BindingInvalidClaim:
		c.InvalidClaim += n
	default:
		c.Unknown += n
	}
}

func (r Record) String() string {
	return fmt.Sprintf("%s %s %s %s", r.InvocationID, r.Tool, r.Binding, r.Outcome)
}
