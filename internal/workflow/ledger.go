package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// LedgerVersion is the only JSON ledger version export writes and import
// accepts. Earlier versions are rejected, never migrated.
const LedgerVersion = 2

// LedgerKind names the document type inside the ledger.
const LedgerKind = "webcodex.workflow_ledger"

// MaxLedgerBytes bounds one imported ledger document.
const MaxLedgerBytes = 256 << 20

// A Ledger is the version-2 JSON export of Workflow Sessions.
type Ledger struct {
	Version    int         `json:"version"`
	Kind       string      `json:"kind"`
	ExportedAt time.Time   `json:"exported_at"`
	Sessions   []LedgerRow `json:"sessions"`
}

// A LedgerRow is one session header with its retained events.
type LedgerRow struct {
	Session
	Events []Event `json:"events"`
}

// compatSinks are members accepted on a row for read-only compatibility and
// never restored into live state.
var compatSinks = map[string]bool{"context_revision": true}

// RowError reports a ledger row that failed closed.
type RowError struct {
	Index     int    `json:"index"`
	SessionID string `json:"session_id,omitempty"`
	Reason    string `json:"reason"`
}

// Export returns the ledger of the given sessions (all retained events of
// each), in the order given.
func Export(ctx context.Context, st Store, ids []string, now time.Time) (Ledger, error) {
	l := Ledger{Version: LedgerVersion, Kind: LedgerKind, ExportedAt: now.UTC(), Sessions: []LedgerRow{}}
	for _, id := range ids {
		sess, err := st.Get(ctx, id)
		if err != nil {
			return Ledger{}, err
		}
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			return Ledger{}, err
		}
		if evs == nil {
			evs = []Event{}
		}
		l.Sessions = append(l.Sessions, LedgerRow{Session: sess, Events: evs})
	}
	return l, nil
}

// ParseLedger reads a version-2 ledger. A document that is not a ledger, or
// has another version, fails as a whole with failure.InvalidLedger. Each row
// is then checked on its own: a row with an unknown member or an invalid
// header or event fails closed and is reported in rejected, while valid rows
// are returned.
func ParseLedger(r io.Reader) (rows []LedgerRow, rejected []RowError, err error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxLedgerBytes+1))
	if err != nil {
		return nil, nil, failure.Wrap(failure.InvalidLedger, err, "cannot read ledger")
	}
	if len(data) > MaxLedgerBytes {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger is larger than %d bytes", MaxLedgerBytes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger is not a JSON object: %v", err)
	}
	var version int
	if err := json.Unmarshal(top["version"], &version); err != nil || top["version"] == nil {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger has no numeric version")
	}
	if version != LedgerVersion {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger version %d is not supported: only version %d can be imported, and older ledgers are rejected rather than migrated", version, LedgerVersion)
	}
	for k := range top {
		switch k {
		case "version", "kind", "exported_at", "sessions":
		default:
			return nil, nil, failure.New(failure.InvalidLedger, "ledger has unknown top-level member %q", k)
		}
	}
	var kind string
	if err := json.Unmarshal(top["kind"], &kind); err != nil || kind != LedgerKind {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger kind must be %q", LedgerKind)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(top["sessions"], &raws); err != nil {
		return nil, nil, failure.New(failure.InvalidLedger, "ledger sessions must be an array")
	}
	seen := map[string]bool{}
	for i, raw := range raws {
		row, err := parseRow(raw)
		if err == nil && seen[row.ID] {
			err = fmt.Errorf("session_id appears twice in the ledger")
		}
		if err != nil {
			rejected = append(rejected, RowError{Index: i, SessionID: row.ID, Reason: err.Error()})
			continue
		}
		seen[row.ID] = true
		rows = append(rows, row)
	}
	return rows, rejected, nil
}

func parseRow(raw json.RawMessage) (LedgerRow, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return LedgerRow{}, fmt.Errorf("row is not an object")
	}
	var idOnly struct {
		ID string `json:"session_id"`
	}
	json.Unmarshal(raw, &idOnly)
	for k := range compatSinks {
		delete(members, k)
	}
	clean, _ := json.Marshal(members)
	var row LedgerRow
	d := json.NewDecoder(bytes.NewReader(clean))
	d.DisallowUnknownFields()
	if err := d.Decode(&row); err != nil {
		return LedgerRow{Session: Session{ID: idOnly.ID}}, fmt.Errorf("row: %v", err)
	}
	for _, req := range []string{"session_id", "project", "mode", "lifecycle", "owner_authority_fingerprint", "created_at", "updated_at", "events_observed", "events"} {
		if _, ok := members[req]; !ok {
			return LedgerRow{Session: Session{ID: idOnly.ID}}, fmt.Errorf("row: missing member %q", req)
		}
	}
	if err := ValidateSession(row.Session); err != nil {
		return row, err
	}
	if len(row.Events) > TailLimit {
		return row, fmt.Errorf("events: more than %d", TailLimit)
	}
	var last int64
	for _, e := range row.Events {
		if err := ValidateEvent(e); err != nil {
			return row, fmt.Errorf("event %d: %v", e.Seq, err)
		}
		if e.Seq <= last || e.Seq > row.EventsObserved {
			return row, fmt.Errorf("event seq %d out of order or beyond events_observed", e.Seq)
		}
		last = e.Seq
	}
	if row.Events == nil {
		row.Events = []Event{}
	}
	return row, nil
}
