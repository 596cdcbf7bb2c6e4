// Package workflowdb implements [workflow.Store] on SQLite (workflow.db).
//
// Session headers are kept as canonical JSON (the exact bytes restore
// returns) beside a few indexed columns; events are stored column by column
// so that a session's rows validate without decoding a document per row. Every mutation goes through the database's group-commit writer
// and is durable (WAL, synchronous=FULL) when the method returns.
//
// # Restore
//
// [Open] reads no session or event row, so start-up does not grow with
// the ledger (decision 0021). Each session is validated the first time this
// process uses it (Get, Update, Events, or a List that meets a malformed
// header): a header or event that does not validate is moved to the
// discarded_rows table (kept for forensics, never served) and counted in
// [workflow.StoreStatus.DiscardedRows] from then on; valid rows are
// unaffected. [Store.ValidateAll] is the full pass over every row.
package workflowdb

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite Workflow Session store.
type Store struct {
	db  *sqlitedb.DB
	now func() time.Time
	// inst is this process's claim on the ledger; open calls carry it.
	inst *instance
	// checked holds the ids of sessions this process has validated (or
	// written itself); see check.
	checked sync.Map
	// report counts what the checks found; see Restored.
	report struct {
		sessions, events, discarded, nanos atomic.Int64
	}
	// board holds the message board's writer statements (messages.go).
	board boardStatements
	// boardReads puts the board's fixed read queries in the read pool's
	// statement cache, once, before the first read snapshot.
	boardReads sync.Once
	// stmts are Update's statements, prepared once on the writer.
	stmts struct {
		header, insertEvent, trim, updateHeader, updateKnown, openCall, closeCall, outbox, readMark *sql.Stmt
	}
	// headers caches each session's last decoded header and its retained
	// count (see scanHeader, and appendKnown, which writes on it).
	headers sync.Map
	// pending maps a session id to the ticket of its newest behind write
	// (see AppendCall); readSeq numbers this process's behind writes.
	pending sync.Map
	readMu  sync.Mutex
	readSeq int64
	// boardPending maps a session id to the ticket of its newest behind
	// board write (see UpdateBoardBehind), which board readers wait for;
	// boardMu orders those tickets as pending's are ordered by readMu.
	boardPending sync.Map
	boardMu      sync.Mutex
	// unrecorded is the number of reads acknowledged by dead processes
	// and never committed, found by Open.
	unrecorded int64
	// obsKey authenticates observation tokens (serverkey.go).
	obsKey []byte
}

const (
	sqlHeader       = `SELECT header_json, retained FROM sessions WHERE session_id = ?`
	sqlInsertEvent  = `INSERT INTO events (session_id, ` + eventColumns + `) VALUES ` + eventValues
	sqlTrim         = `DELETE FROM events WHERE session_id = ? AND seq <= ?`
	sqlUpdateHeader = `UPDATE sessions SET lifecycle = ?, updated_at = ?, retained = ?, header_json = ? WHERE session_id = ?`
	// sqlUpdateKnown is sqlUpdateHeader on the condition that the row still
	// holds the header and retained count the update was computed from.
	sqlUpdateKnown = `UPDATE sessions SET lifecycle = ?, updated_at = ?, retained = ?, header_json = ? WHERE session_id = ? AND header_json = ? AND retained = ?`
	sqlOpenCall    = `INSERT OR IGNORE INTO open_calls (session_id, call_id, invocation_id, tool, role, started_at, started_seq, instance) VALUES (?,?,?,?,?,?,?,?)`
	sqlCloseCall   = `DELETE FROM open_calls WHERE session_id = ? AND call_id = ?`
	sqlOutbox      = `INSERT INTO evidence_outbox (body) VALUES (?)`
	sqlReadMark    = `INSERT INTO read_marks (instance, seq) VALUES (?1, ?2) ON CONFLICT (instance) DO UPDATE SET seq = MAX(seq, ?2)`
)

var _ workflow.Store = (*Store)(nil)

// RestoreReport counts rows validated and moved aside: by this process's
// first-use checks so far ([Store.Restored]) or by one full pass
// ([Store.ValidateAll]). Duration is the time spent validating.
type RestoreReport struct {
	Sessions  int64
	Events    int64
	Discarded int64
	Duration  time.Duration
}

// BehindGather is how long a batch of behind writes (read-only calls'
// events, board and outbox upkeep) waits for more before it commits
// (sqlitedb.Writer.GatherBehind): sequential calls arrive a millisecond or
// two apart, and each would otherwise pay a transaction of its own. Every
// reader of the ledger, a mutation and Close end the wait at once.
const BehindGather = 10 * time.Millisecond

// Open opens (creating if needed) the ledger at path. It reads no session
// or event row: each session is validated at its first use. now may be nil.
func Open(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	inst, err := newInstance(path)
	if err != nil {
		db.Close()
		return nil, err
	}
	db.Writer.GatherBehind(BehindGather)
	s := &Store{db: db, now: now, inst: inst}
	if err := db.Writer.PrepareAll(ctx, sqlitedb.Stmt{Dst: &s.stmts.header, Query: sqlHeader}, sqlitedb.Stmt{Dst: &s.stmts.insertEvent, Query: sqlInsertEvent},
		sqlitedb.Stmt{Dst: &s.stmts.trim, Query: sqlTrim}, sqlitedb.Stmt{Dst: &s.stmts.updateHeader, Query: sqlUpdateHeader},
		sqlitedb.Stmt{Dst: &s.stmts.updateKnown, Query: sqlUpdateKnown},
		sqlitedb.Stmt{Dst: &s.stmts.openCall, Query: sqlOpenCall}, sqlitedb.Stmt{Dst: &s.stmts.closeCall, Query: sqlCloseCall},
		sqlitedb.Stmt{Dst: &s.stmts.outbox, Query: sqlOutbox}, sqlitedb.Stmt{Dst: &s.stmts.readMark, Query: sqlReadMark}); err != nil {
		db.Close()
		inst.close()
		return nil, fmt.Errorf("workflowdb: prepare: %w", err)
	}
	if s.unrecorded, err = s.countUnrecorded(ctx); err != nil {
		db.Close()
		inst.close()
		return nil, fmt.Errorf("workflowdb: read marks: %w", err)
	}
	if s.obsKey, err = loadObservationKey(ctx, db); err != nil {
		db.Close()
		inst.close()
		return nil, err
	}
	return s, nil
}

// Close closes the database after queued writes commit.
func (s *Store) Close() error {
	err := s.db.Close()
	s.inst.close()
	return err
}

// Restored reports what this process's first-use checks have validated and
// moved aside so far (rows moved by ValidateAll are in Discarded too).
func (s *Store) Restored() RestoreReport {
	return RestoreReport{Sessions: s.report.sessions.Load(), Events: s.report.events.Load(),
		Discarded: s.report.discarded.Load(), Duration: time.Duration(s.report.nanos.Load())}
}

// DB exposes the underlying database for benchmarks and tests in this
// module.
func (s *Store) DB() *sqlitedb.DB { return s.db }

func decodeHeader(b []byte) (workflow.Session, error) {
	var sess workflow.Session
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&sess); err != nil {
		return workflow.Session{}, fmt.Errorf("header: %v", err)
	}
	if err := workflow.ValidateSession(sess); err != nil {
		return workflow.Session{}, err
	}
	return sess, nil
}

const eventColumns = `seq, at, kind, tool, call_id, invocation_id, role, outcome, error_kind, duration_ms, text, observed_json, changed_json, facts_json, validation_json, replay_of`

type eventRow struct {
	seq, at, durationMS                                              int64
	kind, tool, callID, invocationID, role, outcome, errorKind, text string
	observed, changed, facts, validation, replayOf                   string
}

func (r *eventRow) dest() []any {
	return []any{&r.seq, &r.at, &r.kind, &r.tool, &r.callID, &r.invocationID, &r.role, &r.outcome,
		&r.errorKind, &r.durationMS, &r.text, &r.observed, &r.changed, &r.facts, &r.validation, &r.replayOf}
}

func (r *eventRow) event() (workflow.Event, error) {
	e := workflow.Event{
		Seq: r.seq, At: time.Unix(0, r.at).UTC(), Kind: workflow.EventKind(r.kind), Tool: r.tool,
		CallID: r.callID, InvocationID: r.invocationID, Role: workflow.Role(r.role),
		Outcome: workflow.Outcome(r.outcome), ErrorKind: r.errorKind, DurationMS: r.durationMS, Text: r.text,
		Replayed: r.replayOf != "", ReplayOf: r.replayOf,
	}
	if r.observed != "" {
		if err := json.Unmarshal([]byte(r.observed), &e.ObservedPaths); err != nil {
			return e, fmt.Errorf("observed_paths: %v", err)
		}
	}
	if r.changed != "" {
		if err := json.Unmarshal([]byte(r.changed), &e.ChangedPaths); err != nil {
			return e, fmt.Errorf("changed_paths: %v", err)
		}
	}
	if r.facts != "" {
		if err := json.Unmarshal([]byte(r.facts), &e.Facts); err != nil {
			return e, fmt.Errorf("facts: %v", err)
		}
	}
	if r.validation != "" {
		e.Validation = new(workflow.Validation)
		if err := json.Unmarshal([]byte(r.validation), e.Validation); err != nil {
			return e, fmt.Errorf("validation: %v", err)
		}
	}
	if err := workflow.ValidateEvent(e); err != nil {
		return e, err
	}
	return e, nil
}

func jsonOrEmpty(v any, empty bool) string {
	if empty {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// eventRowArgs is the number of values of one events row (eventArgs), and
// maxEventRowsPerInsert the most rows one INSERT of insertEvents binds:
// SQLite binds at most 32,766 values per statement.
const (
	eventRowArgs          = 17
	maxEventRowsPerInsert = 32766 / eventRowArgs
)

// insertEvents inserts evs for session id with multi-row INSERTs of at
// most maxEventRowsPerInsert rows each.
func insertEvents(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	for len(evs) > maxEventRowsPerInsert {
		if err := insertEventRows(ctx, tx, id, evs[:maxEventRowsPerInsert]); err != nil {
			return err
		}
		evs = evs[maxEventRowsPerInsert:]
	}
	return insertEventRows(ctx, tx, id, evs)
}

// insertEventRows inserts evs for session id with one INSERT.
func insertEventRows(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO events (session_id, ` + eventColumns + `) VALUES `)
	args := make([]any, 0, len(evs)*eventRowArgs)
	for i, e := range evs {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString(eventValues)
		args = append(args, eventArgs(id, e)...)
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// eventValues are the placeholders of one events row, in the order of
// session_id, eventColumns. A text column other than session_id and kind
// takes NULL for the empty string (see eventArgs): most of them are empty
// in most events, and a NULL is bound without the copy of its text the
// driver makes for every string.
const eventValues = `(?,?,?,?,COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),?,` +
	`COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''),COALESCE(?,''))`

// eventArgs are the values of one events row for eventValues.
func eventArgs(id string, e workflow.Event) []any {
	return []any{id, e.Seq, e.At.UnixNano(), string(e.Kind), orNull(e.Tool), orNull(e.CallID), orNull(e.InvocationID),
		orNull(string(e.Role)), orNull(string(e.Outcome)), orNull(e.ErrorKind), e.DurationMS, orNull(e.Text),
		pathsOrNull(e.ObservedPaths), pathsOrNull(e.ChangedPaths),
		orNull(jsonOrEmpty(e.Facts, len(e.Facts) == 0)),
		orNull(jsonOrEmpty(e.Validation, e.Validation == nil)), orNull(e.ReplayOf)}
}

// pathsOrNull is a path list's JSON (as json.Marshal writes it), or nil
// (NULL, stored as the empty string) for an empty one.
func pathsOrNull(paths []string) any {
	if len(paths) == 0 {
		return nil
	}
	return string(workflow.AppendJSONStrings(make([]byte, 0, 64), paths))
}

// orNull is s, or nil (NULL) for "", which eventValues stores as the
// empty string.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// trackCalls keeps open_calls in step with appended events: a started
// event opens its call and a finished event closes it, unless both are in
// the same append (the call was never open in a durable state).
func (s *Store) trackCalls(ctx context.Context, tx *sql.Tx, id string, evs []workflow.Event) error {
	both := pairedCalls(evs)
	// A transaction's statement lives until it is closed or the
	// transaction ends: bind each at most once per append and close it, so
	// that a long transaction (an import) does not accumulate them.
	var open, closing *sql.Stmt
	defer func() {
		if open != nil {
			open.Close()
		}
		if closing != nil {
			closing.Close()
		}
	}()
	for _, e := range evs {
		if e.CallID == "" || both(e.CallID) {
			continue
		}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			if open == nil {
				open = tx.StmtContext(ctx, s.stmts.openCall)
			}
			if _, err := open.ExecContext(ctx, id, e.CallID, e.InvocationID, e.Tool,
				string(e.Role), e.At.UnixNano(), e.Seq, s.inst.id); err != nil {
				return err
			}
		case workflow.EventToolCallFinished:
			if closing == nil {
				closing = tx.StmtContext(ctx, s.stmts.closeCall)
			}
			if _, err := closing.ExecContext(ctx, id, e.CallID); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairedCalls returns whether a call id has both a started and a finished
// event in evs. The common appends (a call's started event, its finished
// event, or both) are judged by a scan; long ones (an import) by a map.
func pairedCalls(evs []workflow.Event) func(callID string) bool {
	if len(evs) <= 8 {
		return func(callID string) bool {
			var started, finished bool
			for _, e := range evs {
				if e.CallID == callID {
					started = started || e.Kind == workflow.EventToolCallStarted
					finished = finished || e.Kind == workflow.EventToolCallFinished
				}
			}
			return started && finished
		}
	}
	const started, finished = 1, 2
	seen := map[string]int{}
	for _, e := range evs {
		switch {
		case e.CallID == "":
		case e.Kind == workflow.EventToolCallStarted:
			seen[e.CallID] |= started
		case e.Kind == workflow.EventToolCallFinished:
			seen[e.CallID] |= finished
		}
	}
	return func(callID string) bool { return seen[callID] == started|finished }
}

// OpenCalls implements workflow.Store. It reads the open_calls table only,
// and leaves out the calls of processes that still have the ledger open
// (this one included): those calls are running, not cut off.
func (s *Store) OpenCalls(ctx context.Context, limit int) ([]workflow.OpenCall, error) {
	if limit <= 0 {
		limit = workflow.RecoveryBatch
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT o.session_id, s.project, o.call_id, o.invocation_id, o.tool, o.role, o.started_at, o.started_seq, o.instance
		FROM open_calls o JOIN sessions s ON s.session_id = o.session_id
		ORDER BY o.invocation_id, o.session_id, o.call_id`)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	alive := map[string]bool{}
	var out []workflow.OpenCall
	for len(out) < limit && rows.Next() {
		var c workflow.OpenCall
		var role, inst string
		var at int64
		if err := rows.Scan(&c.SessionID, &c.Project, &c.CallID, &c.InvocationID, &c.Tool, &role, &at, &c.StartedSeq, &inst); err != nil {
			return nil, storeErr(err)
		}
		live, ok := alive[inst]
		if !ok {
			live = s.inst.alive(inst)
			alive[inst] = live
		}
		if live {
			continue
		}
		c.Role, c.StartedAt = workflow.Role(role), time.Unix(0, at).UTC()
		out = append(out, c)
	}
	return out, storeErr(rows.Err())
}

// Create implements workflow.Store.
func (s *Store) Create(ctx context.Context, sess workflow.Session, events []workflow.Event) (workflow.Session, []workflow.Event, error) {
	var out []workflow.Event
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE session_id = ?`, sess.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return failure.New(failure.Conflict, "session %s already exists", sess.ID)
		}
		cp := sess
		evs, drop := workflow.Apply(&cp, events, s.now().UTC(), 0)
		if err := workflow.ValidateSession(cp); err != nil {
			return failure.New(failure.InvalidArguments, "invalid session: %v", err)
		}
		if err := insertEvents(ctx, tx, cp.ID, evs); err != nil {
			return err
		}
		if err := s.trackCalls(ctx, tx, cp.ID, evs); err != nil {
			return err
		}
		retained := int64(len(evs))
		if drop > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE session_id = ? AND seq <= ?`, cp.ID, cp.EventsObserved-workflow.TailLimit); err != nil {
				return err
			}
			retained -= int64(drop)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json) VALUES (?,?,?,?,?,?,?)`,
			cp.ID, cp.Project, cp.OwnerFingerprint, string(cp.Lifecycle), cp.UpdatedAt.UnixNano(), retained, encodeHeader(cp)); err != nil {
			return err
		}
		sess, out = cp, evs
		return nil
	})
	if err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	s.checked.Store(sess.ID, struct{}{}) // written validated
	return sess, out, nil
}

func storeErr(err error) error { return sqlitedb.StoreError(err, "session store") }

func getHeader(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (workflow.Session, int64, error) {
	return scanHeader(q.QueryRowContext(ctx, sqlHeader, id), id)
}

func scanHeader(row *sql.Row, id string) (workflow.Session, int64, error) {
	return scanHeaderWith(nil, row, id)
}

// decodedHeader is a header as stored, its decoded, validated value, and
// the retained count stored beside it when it was read or written.
type decodedHeader struct {
	json     string
	sess     workflow.Session
	retained int64
}

// scanHeader reads a header row, decoding its JSON only when it differs
// from the bytes this session's header was last decoded from: a call
// reads the same header for its claim check and its started append.
func (s *Store) scanHeader(row *sql.Row, id string) (workflow.Session, int64, error) {
	return scanHeaderWith(&s.headers, row, id)
}

func scanHeaderWith(cache *sync.Map, row *sql.Row, id string) (workflow.Session, int64, error) {
	var hdr string
	var retained int64
	err := row.Scan(&hdr, &retained)
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.Session{}, 0, failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", id)
	}
	if err != nil {
		return workflow.Session{}, 0, err
	}
	if cache != nil {
		if v, ok := cache.Load(id); ok && v.(*decodedHeader).json == hdr {
			d := v.(*decodedHeader)
			if d.retained != retained {
				cache.Store(id, &decodedHeader{json: d.json, sess: d.sess, retained: retained})
			}
			return copySession(d.sess), retained, nil
		}
	}
	sess, err := decodeHeader([]byte(hdr))
	if err != nil {
		// The first-use check moved malformed headers aside; one appearing
		// later is a store fault, not a caller error.
		return workflow.Session{}, 0, fmt.Errorf("session %s: %v", id, err)
	}
	if cache != nil {
		cache.Store(id, &decodedHeader{json: hdr, sess: copySession(sess), retained: retained})
	}
	return sess, retained, nil
}

// rememberHeader caches sess as the decoding of hdr, its encoding just
// written with retained, so the next read of this header (the next call's
// claim check) need not decode it again and the next AppendCall need not
// read it (see appendKnown). The cache is keyed by the
// exact bytes, so a write that is rolled back leaves an entry no stored
// header matches: a miss, never a wrong session. A session whose decoding
// would differ from it (see asDecoded) or that would fail decodeHeader's
// validation is not cached: its next read decodes it.
func (s *Store) rememberHeader(id, hdr string, sess workflow.Session, retained int64) {
	d, ok := asDecoded(sess)
	if !ok || workflow.ValidateSession(sess) != nil {
		s.headers.Delete(id)
		return
	}
	s.headers.Store(id, &decodedHeader{json: hdr, sess: d, retained: retained})
}

// asDecoded is what decodeHeader returns from encodeHeader(sess), sharing
// nothing with sess, and true; false when that is not known without
// decoding. JSON keeps an instant and its offset but not its Location, and
// replaces invalid UTF-8, so only times in UTC and valid strings qualify;
// the monotonic reading is dropped, and an empty job marker list (omitted
// when empty) decodes as nil.
func asDecoded(sess workflow.Session) (workflow.Session, bool) {
	utc := func(t time.Time) bool { return t.Location() == time.UTC }
	if !utc(sess.CreatedAt) || !utc(sess.UpdatedAt) || (sess.ClosedAt != nil && !utc(*sess.ClosedAt)) {
		return workflow.Session{}, false
	}
	for _, v := range [...]string{sess.ID, sess.Project, sess.Title, string(sess.Mode), string(sess.Lifecycle),
		sess.OwnerFingerprint, sess.ExecutionContext.DefaultCwd, string(sess.ExecutionContext.DefaultShell)} {
		if !utf8.ValidString(v) {
			return workflow.Session{}, false
		}
	}
	for _, v := range sess.JobMarkers {
		if !utf8.ValidString(v) {
			return workflow.Session{}, false
		}
	}
	sess = copySession(sess)
	sess.CreatedAt, sess.UpdatedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC()
	if sess.ClosedAt != nil {
		*sess.ClosedAt = sess.ClosedAt.UTC()
	}
	if len(sess.JobMarkers) == 0 {
		sess.JobMarkers = nil
	}
	return sess, true
}

// copySession is s with nothing shared with the original (the header
// cache's copy is never changed through a caller's).
func copySession(s workflow.Session) workflow.Session {
	s.JobMarkers = slices.Clone(s.JobMarkers)
	if s.ClosedAt != nil {
		t := *s.ClosedAt
		s.ClosedAt = &t
	}
	return s
}

// Get implements workflow.Store.
func (s *Store) Get(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.waitPending(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	sess, _, err := s.scanHeader(s.db.QueryRow(ctx, sqlHeader, id), id)
	return sess, storeErr(err)
}

// GetCommitted is Get without waiting for this session's behind writes:
// the header as last committed. A behind write only appends a read-only
// call's events (and counts them), so the lifecycle, owner, project and
// mode it returns are exactly Get's; claim checks use it.
func (s *Store) GetCommitted(ctx context.Context, id string) (workflow.Session, error) {
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, storeErr(err)
	}
	// A primary-key read is not interrupted mid-way (with a cancellable
	// context the drivers arm two watcher goroutines per query, which
	// costs as much as the read); a cancellation is reported after it.
	// At an idle writer it reads on the writer's connection, whose cache
	// holds the header its last commit wrote.
	rctx := context.WithoutCancel(ctx)
	var sess workflow.Session
	done, err := s.db.Writer.ReadIdle(func() error {
		var err error
		sess, _, err = s.scanHeader(s.stmts.header.QueryRowContext(rctx, id), id)
		return err
	})
	if !done {
		sess, _, err = s.scanHeader(s.db.QueryRow(rctx, sqlHeader, id), id)
	}
	if err == nil {
		err = ctx.Err()
	}
	return sess, storeErr(err)
}

// Remembered returns the header this store last read or wrote for
// session id, decoded and as stored (its JSON), without reading the
// database (see workflow.Service.RememberedClaim); false when it holds
// none. Another process may have changed the row since: an AppendCall
// given the JSON as CallWrite.Claimed then fails with
// workflow.ErrClaimChanged, writing nothing.
func (s *Store) Remembered(id string) (workflow.Session, string, bool) {
	if _, ok := s.checked.Load(id); !ok {
		return workflow.Session{}, "", false
	}
	v, ok := s.headers.Load(id)
	if !ok {
		return workflow.Session{}, "", false
	}
	d := v.(*decodedHeader)
	return copySession(d.sess), d.json, true
}

// Update implements workflow.Store.
func (s *Store) Update(ctx context.Context, id string, fn workflow.UpdateFunc) (workflow.Session, []workflow.Event, error) {
	var (
		outSess workflow.Session
		outEvs  []workflow.Event
	)
	if err := s.check(ctx, id); err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	err := s.db.Writer.Do(ctx, s.updateTx(id, fn, false, "", nil, 0, &outSess, &outEvs))
	if err != nil {
		return workflow.Session{}, nil, storeErr(err)
	}
	return outSess, outEvs, nil
}

// AppendCall implements workflow.Store.
func (s *Store) AppendCall(ctx context.Context, id string, fn workflow.UpdateFunc, w workflow.CallWrite) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	if !w.Behind {
		return storeErr(s.db.Writer.Do(ctx, s.updateTx(id, fn, true, w.Claimed, w.Outbox, 0, nil, nil)))
	}
	// A behind write: numbered among this process's reads, queued, and
	// its number written to the instance file before the caller
	// acknowledges the call (see read_marks).
	s.readMu.Lock()
	defer s.readMu.Unlock()
	seq := s.readSeq + 1
	var ticket atomic.Uint64
	t, err := s.db.Writer.Go(ctx, s.updateTx(id, fn, true, w.Claimed, w.Outbox, seq, nil, nil), func(err error) {
		// Ended: readers need not wait for it (an entry stored after
		// this runs is removed by the next reader's wait).
		s.pending.CompareAndDelete(id, ticket.Load())
		if w.Done != nil {
			w.Done(storeErr(err))
		}
	})
	if err != nil {
		return storeErr(err)
	}
	ticket.Store(t)
	s.readSeq = seq
	s.pending.Store(id, t)
	s.inst.markAcknowledged(seq)
	return nil
}

// QueueRecord stores body, the evidence record of a read-only call
// recorded in no session, in the evidence outbox, behind the caller as a
// recorded read's events are: numbered among this process's reads, its
// number written to the instance file before QueueRecord returns, so that
// a kill -9 that loses it is counted in unrecorded_reads_at_start as a
// read's lost events are. done (which may be nil) is called with the
// outcome from the writer, once the batch has ended; it must not block.
// ctx bounds only the wait for room in the writer's queue.
func (s *Store) QueueRecord(ctx context.Context, body []byte, done func(error)) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	seq := s.readSeq + 1
	_, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.writeMarks(ctx, tx, body, seq)
	}, func(err error) {
		if done != nil {
			done(storeErr(err))
		}
	})
	if err != nil {
		return storeErr(err)
	}
	s.readSeq = seq
	s.inst.markAcknowledged(seq)
	return nil
}

// waitPending waits until the behind writes queued for session id so far
// have ended, so that a reader sees every acknowledged call.
func (s *Store) waitPending(ctx context.Context, id string) error {
	return s.waitFor(ctx, &s.pending, id)
}

// waitFor waits until the write whose ticket pending holds for id (if
// any) has ended.
func (s *Store) waitFor(ctx context.Context, pending *sync.Map, id string) error {
	t, ok := pending.Load(id)
	if !ok {
		return nil
	}
	if err := s.db.Writer.Wait(ctx, t.(uint64)); err != nil {
		return err
	}
	pending.CompareAndDelete(id, t)
	return nil
}

// Flush waits until every write queued so far (behind writes included) has
// ended.
func (s *Store) Flush(ctx context.Context) error {
	return storeErr(s.db.Writer.Wait(ctx, s.db.Writer.Queued()))
}

// updateTx is the transaction function of an update of session id by fn,
// storing outbox (when not nil) in the evidence outbox and, when readSeq
// is not 0, this process's read mark. out and evs (when not nil) receive
// the session and the appended events. When known is true (AppendCall),
// fn may first run on the header this store last read or wrote (see
// appendKnown); claimed is CallWrite.Claimed, which the stored header must
// be (workflow.ErrClaimChanged otherwise).
func (s *Store) updateTx(id string, fn workflow.UpdateFunc, known bool, claimed string, outbox []byte, readSeq int64, out *workflow.Session, evsOut *[]workflow.Event) sqlitedb.TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		now := s.now().UTC()
		if known {
			if done, err := s.appendKnown(ctx, tx, id, fn, claimed, now, outbox, readSeq); done {
				return err
			}
			if claimed != "" {
				// The stored header is not the claimed one, or fn
				// refused it: nothing is written.
				return workflow.ErrClaimChanged
			}
		}
		sess, retained, err := s.scanHeader(tx.StmtContext(ctx, s.stmts.header).QueryRowContext(ctx, id), id)
		if err != nil {
			return err
		}
		events, err := fn(&sess)
		if err != nil {
			return err
		}
		if err := workflow.ValidateSession(sess); err != nil {
			return failure.New(failure.InvalidArguments, "invalid session: %v", err)
		}
		evs, drop := workflow.Apply(&sess, events, now, int(retained))
		trimmed, err := s.writeEvents(ctx, tx, id, sess, evs, drop)
		if err != nil {
			return err
		}
		retained += int64(len(evs)) - trimmed
		hdr := encodeHeader(sess)
		if _, err := tx.StmtContext(ctx, s.stmts.updateHeader).ExecContext(ctx,
			string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, hdr, id); err != nil {
			return err
		}
		s.rememberHeader(id, hdr, sess, retained)
		if err := s.writeMarks(ctx, tx, outbox, readSeq); err != nil {
			return err
		}
		if out != nil {
			*out, *evsOut = sess, evs
		}
		return nil
	}
}

// appendKnown runs fn on the header and retained count this store last
// read or wrote for session id (s.headers) instead of reading them again,
// and stores the result with an UPDATE that matches only while the row
// still holds exactly that header and count: what it then writes is what
// updateTx's read of the row would have led to. It reports false, having
// written nothing, when there is no such entry, when fn or the validation
// refuses the remembered header (the stored one is judged again), or when
// the row holds something else; updateTx then reads the row and runs fn
// again.
func (s *Store) appendKnown(ctx context.Context, tx *sql.Tx, id string, fn workflow.UpdateFunc, claimed string, now time.Time, outbox []byte, readSeq int64) (bool, error) {
	v, ok := s.headers.Load(id)
	if !ok {
		return false, nil
	}
	d := v.(*decodedHeader)
	if claimed != "" && d.json != claimed {
		return false, nil
	}
	sess := copySession(d.sess)
	events, err := fn(&sess)
	if err != nil || workflow.ValidateSession(sess) != nil {
		return false, nil
	}
	evs, drop := workflow.Apply(&sess, events, now, int(d.retained))
	retained := d.retained + int64(len(evs)) - int64(drop)
	hdr := encodeHeader(sess)
	res, err := tx.StmtContext(ctx, s.stmts.updateKnown).ExecContext(ctx,
		string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), retained, hdr, id, d.json, d.retained)
	if err != nil {
		return true, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return err != nil, err
	}
	trimmed, err := s.writeEvents(ctx, tx, id, sess, evs, drop)
	if err != nil {
		return true, err
	}
	if trimmed != int64(drop) {
		// Fewer rows were retained than counted: store the count the
		// trim leaves, as updateTx would.
		retained = d.retained + int64(len(evs)) - trimmed
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET retained = ? WHERE session_id = ?`, retained, id); err != nil {
			return true, err
		}
	}
	s.rememberHeader(id, hdr, sess, retained)
	return true, s.writeMarks(ctx, tx, outbox, readSeq)
}

// writeEvents inserts the events an update of session id appends (sess is
// the header after them), keeps open_calls in step and, when drop > 0,
// trims the oldest events beyond TailLimit; it returns the number of rows
// trimmed.
func (s *Store) writeEvents(ctx context.Context, tx *sql.Tx, id string, sess workflow.Session, evs []workflow.Event, drop int) (int64, error) {
	if len(evs) <= 2 {
		// The common appends (one event, or a call's started and
		// finished pair): each row through the prepared insert, which
		// costs less than compiling a multi-row INSERT.
		insert := tx.StmtContext(ctx, s.stmts.insertEvent)
		for _, e := range evs {
			if _, err := insert.ExecContext(ctx, eventArgs(id, e)...); err != nil {
				return 0, err
			}
		}
	} else if err := insertEvents(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if err := s.trackCalls(ctx, tx, id, evs); err != nil {
		return 0, err
	}
	if drop <= 0 {
		return 0, nil
	}
	res, err := tx.StmtContext(ctx, s.stmts.trim).ExecContext(ctx, id, sess.EventsObserved-workflow.TailLimit)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// writeMarks stores outbox (when not nil) in the evidence outbox and, when
// readSeq is not 0, this process's read mark.
func (s *Store) writeMarks(ctx context.Context, tx *sql.Tx, outbox []byte, readSeq int64) error {
	if outbox != nil {
		if _, err := tx.StmtContext(ctx, s.stmts.outbox).ExecContext(ctx, outbox); err != nil {
			return err
		}
	}
	if readSeq != 0 {
		if _, err := tx.StmtContext(ctx, s.stmts.readMark).ExecContext(ctx, s.inst.id, readSeq); err != nil {
			return err
		}
	}
	return nil
}

// List implements workflow.Store.
func (s *Store) List(ctx context.Context, f workflow.ListFilter) ([]workflow.Session, int, error) {
	where := []string{"1=1"}
	var args []any
	if f.Project != "" {
		where = append(where, "project = ?")
		args = append(args, f.Project)
	}
	if f.Fingerprint != "" {
		where = append(where, "owner_fp = ?")
		args = append(args, f.Fingerprint)
	}
	if f.Lifecycle != "" {
		where = append(where, "lifecycle = ?")
		args = append(args, string(f.Lifecycle))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, storeErr(err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id, header_json FROM sessions WHERE `+cond+` ORDER BY updated_at DESC, session_id LIMIT ? OFFSET ?`,
		append(args, limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	defer rows.Close()
	var out []workflow.Session
	var bad []string
	for rows.Next() {
		var id, hdr string
		if err := rows.Scan(&id, &hdr); err != nil {
			return nil, 0, storeErr(err)
		}
		sess, err := decodeHeader([]byte(hdr))
		if err != nil || sess.ID != id {
			bad = append(bad, id) // never served; moved aside below
			continue
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, storeErr(err)
	}
	rows.Close()
	for _, id := range bad {
		if err := s.check(ctx, id); err != nil {
			return nil, 0, storeErr(err)
		}
	}
	return out, total, nil
}

// Events implements workflow.Store.
func (s *Store) Events(ctx context.Context, id string, limit int) ([]workflow.Event, error) {
	if limit <= 0 {
		limit = workflow.TailLimit
	}
	if err := s.waitPending(ctx, id); err != nil {
		return nil, storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return nil, storeErr(err)
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT ?`, id, limit)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	var out []workflow.Event
	for rows.Next() {
		var r eventRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, storeErr(err)
		}
		e, err := r.event()
		if err != nil {
			continue // malformed after its check: a store fault, never served
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr(err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Import implements workflow.Store.
func (s *Store) Import(ctx context.Context, next func() (workflow.LedgerRow, error)) (int, error) {
	var n int
	var ids []string
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n, ids = 0, ids[:0]
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			row, err := next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.importRow(ctx, tx, row.Session, row.Events); err != nil {
				return err
			}
			if err := importBoard(ctx, tx, row.Session.ID, row.Restored); err != nil {
				return err
			}
			ids = append(ids, row.Session.ID)
			n++
		}
	})
	if err != nil {
		return 0, storeErr(err)
	}
	for _, id := range ids {
		s.checked.Store(id, struct{}{}) // validated by importRow
	}
	return n, nil
}

// importRow checks one imported session again and inserts it in tx.
func (s *Store) importRow(ctx context.Context, tx *sql.Tx, sess workflow.Session, events []workflow.Event) error {
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
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE session_id = ?`, sess.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return failure.New(failure.Conflict, "session %s already exists (in the store or earlier in this ledger)", sess.ID)
	}
	if err := insertEvents(ctx, tx, sess.ID, events); err != nil {
		return err
	}
	// Calls the ledger shows started and never finished are open here
	// too: recovery at start finishes them as outcome_unknown.
	if err := s.trackCalls(ctx, tx, sess.ID, events); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, project, owner_fp, lifecycle, updated_at, retained, header_json) VALUES (?,?,?,?,?,?,?)`,
		sess.ID, sess.Project, sess.OwnerFingerprint, string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), len(events), encodeHeader(sess))
	return err
}

// Status implements workflow.Store.
func (s *Store) Status(ctx context.Context) (workflow.StoreStatus, error) {
	var st workflow.StoreStatus
	err := s.db.Read.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM sessions),
		(SELECT COUNT(*) FROM sessions WHERE lifecycle = 'active'),
		(SELECT COALESCE(SUM(retained), 0) FROM sessions),
		(SELECT COUNT(*) FROM discarded_rows)`).Scan(&st.Sessions, &st.ActiveSessions, &st.Events, &st.DiscardedRows)
	st.UnrecordedReads = s.unrecorded
	return st, storeErr(err)
}
