package workflow

import (
	"context"
	"time"
)

// LedgerVersion is the only JSON ledger version export writes and import
// accepts. Earlier versions are rejected, never migrated.
const LedgerVersion = 2

// LedgerKind names the document type inside the ledger.
const LedgerKind = "webcodex.workflow_ledger"

// MaxLedgerRowBytes bounds the JSON text of one imported ledger row (one
// session with its retained events). A ledger is read one row at a time, so
// this, not the size of the file, bounds the memory an import needs.
const MaxLedgerRowBytes = 64 << 20

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
