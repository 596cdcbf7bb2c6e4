package workflow

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
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

// A LedgerRow is one session header with its retained events and, when
// the session has had messages, its message board.
type LedgerRow struct {
	Session
	Events []Event `json:"events"`
	// Board is the exported board (nil: the session never had a message,
	// or the store exported has no boards).
	Board *LedgerBoard `json:"board,omitempty"`
	// Restored is the board import stores, checked and adjusted from the
	// row's board member (nil without one); never written by export.
	Restored *RestoredBoard `json:"-"`
}

// Export returns the ledger of the given sessions (all retained events of
// each, and the message board of each that has one, when st also stores
// boards: a [BoardStore] such as workflowdb's), in the order given. Each
// board is read in one snapshot of its own.
func Export(ctx context.Context, st Store, ids []string, now time.Time) (Ledger, error) {
	boards, _ := st.(BoardStore)
	l := Ledger{Version: LedgerVersion, Kind: LedgerKind, ExportedAt: now.UTC(), Sessions: []LedgerRow{}}
	for _, id := range ids {
		sess, evs, err := exportSession(ctx, st, id)
		if err != nil {
			return Ledger{}, err
		}
		row := LedgerRow{Session: sess, Events: evs}
		if boards != nil {
			if row.Board, err = exportBoard(ctx, boards, id); err != nil {
				return Ledger{}, err
			}
		}
		l.Sessions = append(l.Sessions, row)
	}
	return l, nil
}

// ExportReads bounds how many times Export reads a session whose header
// changed while its events were read (a retention purge or an append
// committed between the reads) before it fails.
const ExportReads = 3

// exportSession reads session id's header and events so that they agree:
// the header is read again after the events, and the events are read
// again while the two headers differ in what the events depend on
// (events_observed, events_purged). After ExportReads reads it fails
// with failure.Conflict, exporting nothing.
func exportSession(ctx context.Context, st Store, id string) (Session, []Event, error) {
	sess, err := st.Get(ctx, id)
	if err != nil {
		return Session{}, nil, err
	}
	for range ExportReads {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			return Session{}, nil, err
		}
		after, err := st.Get(ctx, id)
		if err != nil {
			return Session{}, nil, err
		}
		if after.EventsObserved == sess.EventsObserved && after.EventsPurged == sess.EventsPurged {
			if evs == nil {
				evs = []Event{}
			}
			return after, evs, nil
		}
		sess = after
	}
	return Session{}, nil, failure.New(failure.Conflict,
		"session %s changed while it was exported (a retention purge or new events, %d times): export it again", id, ExportReads)
}
