package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// boardTx is one session's board inside one transaction: a read snapshot
// (ViewBoard) or a writer transaction holding the board's row locked
// (UpdateBoard, a behind batch). It reads and writes exactly the rows
// workflowdb's boardTx does, through workflowrow's codec.
type boardTx struct {
	ctx context.Context
	tx  pgx.Tx
	id  string
	// writes are queued here and sent before the next read and at the
	// end (notify), in one round trip.
	writes pgdb.Pipeline
	// lockedRev is the observation revision the board row held when it
	// was locked (or last notified), rev the one SetState stored last: a
	// writer notifies BoardChannel when rev is above lockedRev.
	lockedRev, rev int64
}

var _ workflow.BoardWriter = (*boardTx)(nil)

const selectMessage = `SELECT ` + workflowrow.MessageColumns + ` FROM workflow.messages WHERE session_id = $1`

// The board's queries.
var (
	qState = `SELECT s.lifecycle, m.generation, m.posted, m.retained, m.removed, m.observation_revision, m.observation_low_watermark
		FROM workflow.sessions s LEFT JOIN workflow.message_boards m ON m.session_id = s.session_id WHERE s.session_id = $1`
	qSetState = `INSERT INTO workflow.message_boards (session_id, generation, posted, retained, removed, observation_revision, observation_low_watermark)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session_id) DO UPDATE SET generation = excluded.generation, posted = excluded.posted,
		retained = excluded.retained, removed = excluded.removed, observation_revision = excluded.observation_revision,
		observation_low_watermark = excluded.observation_low_watermark`
	qMessage       = selectMessage + ` AND message_id = $2 LIMIT 1`
	qByDeliveryKey = selectMessage + ` AND delivery_key = $2 LIMIT 1`
	qReplies       = selectMessage + ` AND reply_to = $2 AND reply_to <> '' ORDER BY seq LIMIT $3` // <> '': the partial messages_by_reply
	qInsert        = `INSERT INTO workflow.messages (session_id, ` + workflowrow.MessageColumns + `) VALUES (` + placeholders(1, workflowrow.MessageColumnCount+1) + `)`
	qSave          = `UPDATE workflow.messages SET ` + saveSet() + fmt.Sprintf(` WHERE session_id = $%d AND message_id = $%d`,
		workflowrow.MessageColumnCount+1, workflowrow.MessageColumnCount+2)
	qRemove          = `DELETE FROM workflow.messages WHERE session_id = $1 AND message_id = ANY($2)`
	qChanged         = selectMessage + ` AND observation_revision > $2 ORDER BY observation_revision LIMIT $3`
	qCounts          = `SELECT kind, status, count(*) FROM workflow.messages WHERE session_id = $1 GROUP BY kind, status`
	qAttention       = selectMessage + workflowrow.AttentionWhere("$2") + ` ORDER BY requires_ack DESC, seq LIMIT $3`
	qAttentionCount  = `SELECT count(*) FROM workflow.messages WHERE session_id = $1` + workflowrow.AttentionWhere("$2")
	qFetches         = `SELECT message_id, fetch_window, fetched_at FROM workflow.messages WHERE session_id = $1 AND fetch_window <> '' AND message_id = ANY($2)`
	qSetFetch        = `UPDATE workflow.messages SET fetch_window = $3, fetched_at = $4 WHERE session_id = $1 AND message_id = $2`
	qOldestByClasses = map[string]string{}
)

func init() {
	for _, classes := range workflow.RetentionPasses {
		qOldestByClasses[fmt.Sprint(classes)] = oldestQuery(classes)
	}
}

// placeholders is "$from, …, $to".
func placeholders(from, to int) string {
	ps := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		ps = append(ps, fmt.Sprintf("$%d", i))
	}
	return strings.Join(ps, ", ")
}

func saveSet() string {
	cols := strings.Split(workflowrow.MessageColumns, ",")
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = fmt.Sprintf("%s = $%d", strings.TrimSpace(c), i+1)
	}
	return strings.Join(set, ", ")
}

// oldestQuery selects, for session $1, the oldest $3 messages (by seq) of
// each of classes whose id is not in $2, each row with its class's index
// in classes: one statement with an arm per class, each limited on its
// own. Oldest orders the rows.
func oldestQuery(classes []workflow.RetentionClass) string {
	arms := make([]string, len(classes))
	for i, class := range classes {
		arms[i] = fmt.Sprintf(`(SELECT %d AS class, m.message_id, m.seq, m.reply_to, m.observation_revision FROM workflow.messages m
			WHERE m.session_id = $1 AND %s AND m.message_id <> ALL($2) ORDER BY m.seq LIMIT $3)`, i, workflowrow.RetentionClass(class, "workflow.messages"))
	}
	return strings.Join(arms, ` UNION ALL `)
}

// flush sends the queued writes, before a read (which must see them).
func (b *boardTx) flush() error { return b.writes.Flush(b.ctx, b.tx) }

func (b *boardTx) State() (workflow.BoardState, error) {
	st := workflow.BoardState{SessionID: b.id}
	if err := b.flush(); err != nil {
		return st, err
	}
	var lifecycle string
	var gen, posted, retained, removed, rev, low *int64
	err := b.tx.QueryRow(b.ctx, qState, b.id).Scan(&lifecycle, &gen, &posted, &retained, &removed, &rev, &low)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", b.id)
	}
	if err != nil {
		return st, err
	}
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	st.Lifecycle = workflow.Lifecycle(lifecycle)
	st.Generation, st.Posted, st.Retained, st.Removed = val(gen), val(posted), val(retained), val(removed)
	st.ObservationRevision, st.ObservationLowWatermark = val(rev), val(low)
	return st, nil
}

func (b *boardTx) SetState(st workflow.BoardState) error {
	b.writes.Exec(qSetState, b.id, st.Generation, st.Posted, st.Retained, st.Removed, st.ObservationRevision, st.ObservationLowWatermark)
	b.rev = st.ObservationRevision
	return nil
}

func (b *boardTx) query(q string, args ...any) ([]workflow.Message, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	rows, err := b.tx.Query(b.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanMessages(rows, b.id)
}

func (b *boardTx) one(q string, args ...any) (workflow.Message, bool, error) {
	ms, err := b.query(q, args...)
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
	q := selectMessage
	args := []any{b.id}
	for _, c := range []struct{ col, v string }{{"kind", string(f.Kind)}, {"status", string(f.Status)},
		{"message_id", f.MessageID}, {"reply_to", f.ReplyTo}} {
		if c.v != "" {
			args = append(args, c.v)
			q += fmt.Sprintf(` AND %s = $%d`, c.col, len(args))
		}
	}
	if f.ReplyTo != "" {
		q += ` AND reply_to <> ''` // lets the planner use the partial messages_by_reply
	}
	args = append(args, f.Limit+1)
	ms, err := b.query(q+fmt.Sprintf(` ORDER BY seq DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, false, err
	}
	if len(ms) > f.Limit {
		return ms[:f.Limit], true, nil
	}
	return ms, false, nil
}

func (b *boardTx) Changed(after int64, limit int) ([]workflow.Message, error) {
	return b.query(qChanged, b.id, after, limit)
}

func (b *boardTx) Counts() (map[workflow.MessageKind]map[workflow.MessageStatus]int, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	rows, err := b.tx.Query(b.ctx, qCounts, b.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanCounts(rows)
}

func (b *boardTx) Attention(before time.Time, limit int) ([]workflow.Message, int, error) {
	ms, err := b.query(qAttention, b.id, before.UnixNano(), limit)
	if err != nil || len(ms) < limit {
		return ms, len(ms), err
	}
	// A full page: count them all (same snapshot).
	var total int
	err = b.tx.QueryRow(b.ctx, qAttentionCount, b.id, before.UnixNano()).Scan(&total)
	return ms, total, err
}

func (b *boardTx) Oldest(classes []workflow.RetentionClass, exclude []string, limit int) ([]workflow.Message, error) {
	q, ok := qOldestByClasses[fmt.Sprint(classes)]
	if !ok {
		return nil, fmt.Errorf("retention classes %v", classes)
	}
	if exclude == nil {
		exclude = []string{}
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	rows, err := b.tx.Query(b.ctx, q, b.id, exclude, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanOldest(rows, b.id, limit)
}

func (b *boardTx) Insert(m workflow.Message) error {
	b.writes.Exec(qInsert, append([]any{b.id}, workflowrow.MessageArgs(m)...)...)
	return nil
}

// Save queues the update of message m; a message that is not there fails
// the flush that sends it.
func (b *boardTx) Save(m workflow.Message) error {
	b.writes.ExecChecked(func(tag pgconn.CommandTag) error {
		if n := tag.RowsAffected(); n != 1 {
			return fmt.Errorf("save message %s: %d rows", m.ID, n)
		}
		return nil
	}, qSave, append(workflowrow.MessageArgs(m), b.id, m.ID)...)
	return nil
}

func (b *boardTx) Remove(ids []string) error {
	if len(ids) > 0 {
		b.writes.Exec(qRemove, b.id, ids)
	}
	return nil
}

// Fetches implements workflow.BoardReader.
func (b *boardTx) Fetches(ids []string) (map[string]workflow.TodoFetch, error) {
	out := map[string]workflow.TodoFetch{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	rows, err := b.tx.Query(b.ctx, qFetches, b.id, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return workflowrow.ScanFetches(rows)
}

// SetFetch implements workflow.BoardWriter.
func (b *boardTx) SetFetch(id string, f workflow.TodoFetch) error {
	b.writes.Exec(qSetFetch, b.id, id, f.Window, f.At.UnixNano())
	return nil
}
