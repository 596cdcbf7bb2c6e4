package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// The Session-local message board (migration 0005): one message_boards
// row of counters per session with messages, and one messages row per
// retained message. The board's rules live in workflow.Board; this file
// only reads and writes rows, inside one read snapshot (ViewBoard) or one
// writer transaction (UpdateBoard).

var _ workflow.BoardStore = (*Store)(nil)

var selectMessage = `SELECT ` + workflowrow.MessageColumns + ` FROM messages WHERE session_id = ?`

// ViewBoard implements workflow.BoardStore: fn reads one committed
// snapshot (a read-only transaction on the read pool).
func (s *Store) ViewBoard(ctx context.Context, id string, fn func(workflow.BoardReader) error) error {
	// The board as every acknowledged call left it: its behind writes
	// (projection facts, fetches) are committed first.
	if err := s.waitFor(ctx, &s.boardPending, id); err != nil {
		return storeErr(err)
	}
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	// The snapshot is not interrupted mid-way (with a cancellable context
	// the driver arms a watcher per transaction and per query, which costs
	// as much as these small reads); a cancellation is reported after it.
	rctx := context.WithoutCancel(ctx)
	s.boardReads.Do(func() { s.db.Prepare(rctx, boardReadQueries...) })
	tx, err := s.db.Read.BeginTx(rctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return storeErr(err)
	}
	defer tx.Rollback()
	err = fn(&boardTx{ctx: rctx, tx: tx, id: id, read: s.db})
	if err == nil {
		err = ctx.Err()
	}
	return storeErr(err)
}

// qAttentionPossible is whether any message qualifies for a
// session_attention block (the condition of qAttention).
var qAttentionPossible = `SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = ?` + attentionWhere + `)`

// AttentionPossible implements workflow.BoardStore: one statement on the
// read pool (no transaction, no wait for behind writes: they only ever
// record projections and fetches, which never make a message eligible).
func (s *Store) AttentionPossible(ctx context.Context, id string, before time.Time) (bool, error) {
	if err := s.check(ctx, id); err != nil {
		return false, storeErr(err)
	}
	var possible bool
	if err := s.db.QueryRow(context.WithoutCancel(ctx), qAttentionPossible, id, before.UnixNano()).Scan(&possible); err != nil {
		return false, storeErr(err)
	}
	return possible, storeErr(ctx.Err())
}

// UpdateBoard implements workflow.BoardStore: fn runs in the writer's
// transaction and UpdateBoard returns once it is durably committed.
func (s *Store) UpdateBoard(ctx context.Context, id string, fn func(workflow.BoardWriter) error) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	prepared := s.board.get(ctx, s.db.Writer)
	return storeErr(s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(&boardTx{ctx: ctx, tx: tx, id: id, prepared: prepared})
	}))
}

// UpdateBoardBehind implements workflow.BoardStore: fn is queued on the
// writer (Writer.Go) and runs in a later batch, which commits lazily
// (synchronous=NORMAL, decision 0025) unless it also carries a durable
// write. The caller does not wait; done receives the outcome.
func (s *Store) UpdateBoardBehind(ctx context.Context, id string, fn func(workflow.BoardWriter) error, done func(error)) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	prepared := s.board.get(ctx, s.db.Writer)
	s.boardMu.Lock()
	defer s.boardMu.Unlock()
	var ticket atomic.Uint64
	t, err := s.db.Writer.Go(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(&boardTx{ctx: ctx, tx: tx, id: id, prepared: prepared})
	}, func(err error) {
		// Ended: board readers need not wait for it.
		s.boardPending.CompareAndDelete(id, ticket.Load())
		if done != nil {
			done(storeErr(err))
		}
	})
	if err != nil {
		return storeErr(err)
	}
	ticket.Store(t)
	s.boardPending.Store(id, t)
	return nil
}

// boardStatements are the board's writer statements, prepared once on the
// writer's connection (outside Do) at the first UpdateBoard. A query
// without one (or when preparing failed) is parsed per call: slower, not
// different.
type boardStatements struct {
	once     sync.Once
	prepared map[string]*sql.Stmt
}

func (bs *boardStatements) get(ctx context.Context, w *sqlitedb.Writer) map[string]*sql.Stmt {
	bs.once.Do(func() {
		m := map[string]*sql.Stmt{}
		qs := []string{qState, qSetState, qMessage, qByDeliveryKey, qReplies, qInsert, qSave, qRemoveOne}
		for _, q := range qOldest {
			qs = append(qs, q)
		}
		for _, q := range qs {
			st, err := w.Prepare(context.WithoutCancel(ctx), q)
			if err != nil {
				return
			}
			m[q] = st
		}
		bs.prepared = m
	})
	return bs.prepared
}

// boardTx is one session's board inside one transaction.
type boardTx struct {
	ctx      context.Context
	tx       *sql.Tx
	id       string
	prepared map[string]*sql.Stmt // nil in a read snapshot
	// read is the database of a read snapshot, whose statements come from
	// its read pool's cache, filled before the snapshot began (nil in the
	// writer's transaction).
	read *sqlitedb.DB
}

func (b *boardTx) stmt(q string) *sql.Stmt {
	if st := b.prepared[q]; st != nil {
		return b.tx.StmtContext(b.ctx, st)
	}
	if b.read != nil {
		if st := b.read.Cached(q); st != nil {
			return b.tx.StmtContext(b.ctx, st)
		}
	}
	return nil
}

func (b *boardTx) rows(q string, args ...any) (*sql.Rows, error) {
	if st := b.stmt(q); st != nil {
		return st.QueryContext(b.ctx, args...)
	}
	return b.tx.QueryContext(b.ctx, q, args...)
}

func (b *boardTx) row(q string, args ...any) *sql.Row {
	if st := b.stmt(q); st != nil {
		return st.QueryRowContext(b.ctx, args...)
	}
	return b.tx.QueryRowContext(b.ctx, q, args...)
}

func (b *boardTx) exec(q string, args ...any) (sql.Result, error) {
	if st := b.stmt(q); st != nil {
		return st.ExecContext(b.ctx, args...)
	}
	return b.tx.ExecContext(b.ctx, q, args...)
}

// boardReadQueries are the read snapshot's prepared queries (List's,
// built from its filter, run as text).
var boardReadQueries = []string{qState, qMessage, qByDeliveryKey, qReplies, qChanged, qAttention, qAttentionCount}

// The board's queries (the prepared ones by their exact text).
var (
	qState = `SELECT s.lifecycle, m.generation, m.posted, m.retained, m.removed, m.observation_revision, m.observation_low_watermark
		FROM sessions s LEFT JOIN message_boards m ON m.session_id = s.session_id WHERE s.session_id = ?`
	qSetState = `INSERT INTO message_boards (session_id, generation, posted, retained, removed, observation_revision, observation_low_watermark)
		VALUES (?,?,?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation, posted = excluded.posted,
		retained = excluded.retained, removed = excluded.removed, observation_revision = excluded.observation_revision,
		observation_low_watermark = excluded.observation_low_watermark`
	qMessage       = selectMessage + ` AND message_id = ? LIMIT 1`
	qByDeliveryKey = selectMessage + ` AND delivery_key = ? LIMIT 1`
	qReplies       = selectMessage + ` AND reply_to = ? AND reply_to != '' ORDER BY seq LIMIT ?` // != '': the partial messages_by_reply
	qInsert        = `INSERT INTO messages (session_id, ` + workflowrow.MessageColumns + `) VALUES (?` + strings.Repeat(",?", workflowrow.MessageColumnCount) + `)`
	qSave          = `UPDATE messages SET ` + saveSet() + ` WHERE session_id = ? AND message_id = ?`
	qRemoveOne     = `DELETE FROM messages WHERE session_id = ? AND message_id = ?`
	qChanged       = selectMessage + ` AND observation_revision > ? ORDER BY observation_revision LIMIT ?`
	// qOldest is Oldest's query of each list of classes retention asks
	// for (workflow.RetentionPasses); each excludes up to oldestExclude
	// message ids (padded with '').
	qOldest = map[string]string{}
)

const oldestExclude = 2

func init() {
	for _, classes := range workflow.RetentionPasses {
		qOldest[fmt.Sprint(classes)] = oldestQuery(classes)
	}
}

// oldestQuery selects, for session ?1, the oldest ?4 messages (by seq) of
// each of classes that are not ?2 or ?3, each row with its class's index
// in classes: one statement with an arm per class, each limited on its
// own index. The rows of a compound SELECT come in no defined order, so
// Oldest orders them itself; a sort in SQL would cost more than a second
// statement.
func oldestQuery(classes []workflow.RetentionClass) string {
	arms := make([]string, len(classes))
	for i, class := range classes {
		arms[i] = fmt.Sprintf(`SELECT * FROM (SELECT %d AS class, m.message_id, m.seq, m.reply_to, m.observation_revision FROM messages m
			WHERE m.session_id = ?1 AND %s AND m.message_id != ?2 AND m.message_id != ?3 ORDER BY m.seq LIMIT ?4)`, i, workflowrow.RetentionClass(class, "messages"))
	}
	return strings.Join(arms, ` UNION ALL `)
}

func saveSet() string {
	cols := strings.Split(workflowrow.MessageColumns, ",")
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = strings.TrimSpace(c) + ` = ?`
	}
	return strings.Join(set, ", ")
}

func (b *boardTx) State() (workflow.BoardState, error) {
	st := workflow.BoardState{SessionID: b.id}
	var lifecycle string
	var gen, posted, retained, removed, rev, low sql.NullInt64
	err := b.row(qState, b.id).Scan(&lifecycle, &gen, &posted, &retained, &removed, &rev, &low)
	if errors.Is(err, sql.ErrNoRows) {
		return st, failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", b.id)
	}
	if err != nil {
		return st, err
	}
	st.Lifecycle = workflow.Lifecycle(lifecycle)
	st.Generation, st.Posted, st.Retained, st.Removed = gen.Int64, posted.Int64, retained.Int64, removed.Int64
	st.ObservationRevision, st.ObservationLowWatermark = rev.Int64, low.Int64
	return st, nil
}

func (b *boardTx) SetState(st workflow.BoardState) error {
	_, err := b.exec(qSetState, b.id, st.Generation, st.Posted, st.Retained, st.Removed, st.ObservationRevision, st.ObservationLowWatermark)
	return err
}

func (b *boardTx) one(query string, args ...any) (workflow.Message, bool, error) {
	ms, err := b.query(query, args...)
	if err != nil || len(ms) == 0 {
		return workflow.Message{}, false, err
	}
	return ms[0], true, nil
}

func (b *boardTx) Message(id string) (workflow.Message, bool, error) {
	return b.one(qMessage, b.id, id)
}

func (b *boardTx) ByDeliveryKey(key string) (workflow.Message, bool, error) {
	return b.one(qByDeliveryKey, b.id, key)
}

func (b *boardTx) Replies(id string, limit int) ([]workflow.Message, error) {
	return b.query(qReplies, b.id, id, limit)
}

func (b *boardTx) List(f workflow.MessageFilter) ([]workflow.Message, bool, error) {
	q, args := boardListQuery(b.id, f)
	ms, err := b.query(q, args...)
	if err != nil {
		return nil, false, err
	}
	if len(ms) > f.Limit {
		return ms[:f.Limit], true, nil
	}
	return ms, false, nil
}

// boardListQuery is List's query of session id's messages by f, and its
// arguments: one more than a page, newest first.
func boardListQuery(id string, f workflow.MessageFilter) (string, []any) {
	q := selectMessage
	args := []any{id}
	for _, c := range []struct{ col, v string }{{"kind", string(f.Kind)}, {"status", string(f.Status)},
		{"message_id", f.MessageID}, {"reply_to", f.ReplyTo}} {
		if c.v != "" {
			q += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	if f.ReplyTo != "" {
		q += ` AND reply_to != ''` // lets the planner use the partial messages_by_reply
	}
	return q + ` ORDER BY seq DESC LIMIT ?`, append(args, f.Limit+1)
}

func (b *boardTx) Changed(after int64, limit int) ([]workflow.Message, error) {
	return b.query(qChanged, b.id, after, limit)
}

func (b *boardTx) Counts() (map[workflow.MessageKind]map[workflow.MessageStatus]int, error) {
	rows, err := b.tx.QueryContext(b.ctx, `SELECT kind, status, COUNT(*) FROM messages WHERE session_id = ? GROUP BY kind, status`, b.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanCounts(rows)
}

// attentionWhere selects the messages a session_attention block may show.
var attentionWhere = workflowrow.AttentionWhere("?")

var (
	qAttention      = selectMessage + attentionWhere + ` ORDER BY requires_ack DESC, seq LIMIT ?`
	qAttentionCount = `SELECT COUNT(*) FROM messages WHERE session_id = ?` + attentionWhere
)

func (b *boardTx) Attention(before time.Time, limit int) ([]workflow.Message, int, error) {
	ms, err := b.query(qAttention, b.id, before.UnixNano(), limit)
	if err != nil || len(ms) < limit {
		return ms, len(ms), err
	}
	// A full page: count them all (same snapshot).
	var total int
	err = b.row(qAttentionCount, b.id, before.UnixNano()).Scan(&total)
	return ms, total, err
}

func (b *boardTx) Oldest(classes []workflow.RetentionClass, exclude []string, limit int) ([]workflow.Message, error) {
	q, ok := qOldest[fmt.Sprint(classes)]
	if !ok || len(exclude) > oldestExclude {
		return nil, fmt.Errorf("retention classes %v excluding %d messages", classes, len(exclude))
	}
	args := []any{b.id}
	for i := range oldestExclude {
		id := ""
		if i < len(exclude) {
			id = exclude[i]
		}
		args = append(args, id)
	}
	rows, err := b.rows(q, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanOldest(rows, b.id, limit)
}

func (b *boardTx) Insert(m workflow.Message) error {
	_, err := b.exec(qInsert, append([]any{b.id}, workflowrow.MessageArgs(m)...)...)
	return err
}

func (b *boardTx) Save(m workflow.Message) error {
	res, err := b.exec(qSave, append(workflowrow.MessageArgs(m), b.id, m.ID)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("save message %s: %d rows", m.ID, n)
	}
	return nil
}

func (b *boardTx) Remove(ids []string) error {
	switch len(ids) {
	case 0:
		return nil
	case 1:
		_, err := b.exec(qRemoveOne, b.id, ids[0])
		return err
	}
	args := []any{b.id}
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := b.tx.ExecContext(b.ctx, `DELETE FROM messages WHERE session_id = ? AND message_id IN (?`+
		strings.Repeat(",?", len(ids)-1)+`)`, args...)
	return err
}

func (b *boardTx) query(q string, args ...any) ([]workflow.Message, error) {
	rows, err := b.rows(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanMessages(rows, b.id)
}

// Fetches implements workflow.BoardReader.
func (b *boardTx) Fetches(ids []string) (map[string]workflow.TodoFetch, error) {
	out := map[string]workflow.TodoFetch{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{b.id}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := b.tx.QueryContext(b.ctx, `SELECT message_id, fetch_window, fetched_at FROM messages
		WHERE session_id = ? AND fetch_window != '' AND message_id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanFetches(rows)
}

// SetFetch implements workflow.BoardWriter.
func (b *boardTx) SetFetch(id string, f workflow.TodoFetch) error {
	_, err := b.tx.ExecContext(b.ctx, `UPDATE messages SET fetch_window = ?, fetched_at = ? WHERE session_id = ? AND message_id = ?`,
		f.Window, f.At.UnixNano(), b.id, id)
	return err
}
