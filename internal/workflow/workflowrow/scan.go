package workflowrow

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// resultRows is what both drivers' result sets offer (database/sql's
// *sql.Rows, pgx's Rows); the caller closes them.
type resultRows = interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanHeaders reads (session_id, header_json) rows: the discards of the
// malformed headers, their session ids, and the count of valid ones.
func ScanHeaders(rows resultRows) (bad []Discard, badSession map[string]bool, valid int64, err error) {
	badSession = map[string]bool{}
	for rows.Next() {
		var id, hdr string
		if err := rows.Scan(&id, &hdr); err != nil {
			return nil, nil, 0, err
		}
		if err := CheckHeader(id, hdr); err != nil {
			bad = append(bad, HeaderDiscard(id, hdr, err))
			badSession[id] = true
			continue
		}
		valid++
	}
	return bad, badSession, valid, rows.Err()
}

// ScanEvents reads events rows: EventColumns of session id, or, when id
// is "", session_id followed by EventColumns. It returns the discards of
// the malformed rows (every row of a session headerBad names among them)
// and the count of valid ones.
func ScanEvents(rows resultRows, id string, headerBad func(id string) bool) (bad []Discard, valid int64, err error) {
	// One set of scan destinations serves every row: building them per
	// row cost as much as validating it.
	var r EventRow
	sid := id
	dest := r.Dest()
	if id == "" {
		dest = append([]any{&sid}, dest...)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		if d, ok := CheckEvent(sid, &r, headerBad(sid)); !ok {
			bad = append(bad, d)
			continue
		}
		valid++
	}
	return bad, valid, rows.Err()
}

// ScanListed reads (session_id, header_json) rows as List serves them:
// the sessions that decode, and the ids of those that do not (never
// served; the caller moves them aside).
func ScanListed(rows resultRows) (out []workflow.Session, bad []string, err error) {
	for rows.Next() {
		var id, hdr string
		if err := rows.Scan(&id, &hdr); err != nil {
			return nil, nil, err
		}
		sess, err := DecodeHeader([]byte(hdr))
		if err != nil || sess.ID != id {
			bad = append(bad, id)
			continue
		}
		out = append(out, sess)
	}
	return out, bad, rows.Err()
}

// ScanTail reads EventColumns rows in descending seq order and returns
// the events in ascending order. A row that does not decode (malformed
// after its session's check: a store fault) is never served.
func ScanTail(rows resultRows) ([]workflow.Event, error) {
	var out []workflow.Event
	var r EventRow
	dest := r.Dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if e, err := r.Event(); err == nil {
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// CheckImported checks one imported session again (Store.Import):
// failure.InvalidLedger unless the header and every event validate and
// the events are at most TailLimit, in seq order, none beyond
// events_observed.
func CheckImported(sess workflow.Session, events []workflow.Event) error {
	if err := workflow.ValidateSession(sess); err != nil {
		return failure.New(failure.InvalidLedger, "session: %v", err)
	}
	if len(events) > workflow.TailLimit {
		return failure.New(failure.InvalidLedger, "session %s holds more than %d events", sess.ID, workflow.TailLimit)
	}
	var last int64
	for _, e := range events {
		if err := workflow.ValidateEvent(e); err != nil {
			return failure.New(failure.InvalidLedger, "event %d: %v", e.Seq, err)
		}
		if e.Seq <= last || e.Seq > sess.EventsObserved {
			return failure.New(failure.InvalidLedger, "event seq %d out of order or beyond events_observed", e.Seq)
		}
		last = e.Seq
	}
	return nil
}

// Checks is a store's first-use validation: the sessions this process
// has validated (or written itself), and the counts its checks found.
type Checks struct {
	checked                            sync.Map
	sessions, events, discarded, nanos atomic.Int64
}

// Mark records session id as validated (written validated).
func (c *Checks) Mark(id string) { c.checked.Store(id, struct{}{}) }

// Known reports whether session id has been validated.
func (c *Checks) Known(id string) bool {
	_, ok := c.checked.Load(id)
	return ok
}

// Check validates session id's rows the first time this process uses the
// session: scan reads them (the malformed ones, and the counts of valid
// headers, 0 or 1, and events), move moves the malformed ones to
// discarded_rows and returns how many it moved. A session with no row has
// nothing to check and is not remembered. Later calls cost one map
// lookup.
func (c *Checks) Check(ctx context.Context, id string,
	scan func(ctx context.Context, id string) (bad []Discard, sessions, events int64, err error),
	move func(ctx context.Context, bad []Discard) (int64, error)) error {
	if c.Known(id) {
		return nil
	}
	start := time.Now()
	bad, sessions, events, err := scan(ctx, id)
	if err != nil {
		return fmt.Errorf("check session %s: %w", id, err)
	}
	if sessions == 0 && len(bad) == 0 {
		return nil
	}
	var moved int64
	if len(bad) > 0 {
		if moved, err = move(ctx, bad); err != nil {
			return err
		}
	}
	c.Mark(id)
	c.sessions.Add(sessions)
	c.events.Add(events)
	c.discarded.Add(moved)
	c.nanos.Add(int64(time.Since(start)))
	return nil
}

// Discarded counts n rows moved aside by a full pass.
func (c *Checks) Discarded(n int64) { c.discarded.Add(n) }

// Report is what the checks have validated and moved aside so far.
func (c *Checks) Report() RestoreReport {
	return RestoreReport{Sessions: c.sessions.Load(), Events: c.events.Load(),
		Discarded: c.discarded.Load(), Duration: time.Duration(c.nanos.Load())}
}
