package workflowdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// The Session-local message board (migration 0004): one message_boards
// row of counters per session with messages, and one messages row per
// retained message. The board's rules live in workflow.Board; this file
// only reads and writes rows, inside one read snapshot (ViewBoard) or one
// writer transaction (UpdateBoard).

var _ workflow.BoardStore = (*Store)(nil)

const messageColumns = `message_id, seq, created_at, kind, status, priority, %s, tags_json, reply_to,
	author_session_id, requires_ack, resolved_at, resolution, resolved_by_message_id, completion_id,
	delivery_key, delivery_fingerprint, completion_key, completion_fingerprint, observation_revision,
	assignment_revision, replies_posted, replies_removed, first_ack_observed_at`

// messageColumnCount is the number of messageColumns.
var messageColumnCount = strings.Count(messageColumns, ",") + 1

var (
	selectMessage     = `SELECT ` + fmt.Sprintf(messageColumns, "body") + ` FROM messages WHERE session_id = ?`
	selectMessageMeta = `SELECT ` + fmt.Sprintf(messageColumns, "''") + ` FROM messages WHERE session_id = ?`
)

// ViewBoard implements workflow.BoardStore: fn reads one committed
// snapshot (a read-only transaction on the read pool).
func (s *Store) ViewBoard(ctx context.Context, id string, fn func(workflow.BoardReader) error) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	tx, err := s.db.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return storeErr(err)
	}
	defer tx.Rollback()
	return storeErr(fn(&boardTx{ctx: ctx, tx: tx, id: id}))
}

// UpdateBoard implements workflow.BoardStore: fn runs in the writer's
// transaction and UpdateBoard returns once it is durably committed.
func (s *Store) UpdateBoard(ctx context.Context, id string, fn func(workflow.BoardWriter) error) error {
	if err := s.check(ctx, id); err != nil {
		return storeErr(err)
	}
	return storeErr(s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return fn(&boardTx{ctx: ctx, tx: tx, id: id})
	}))
}

// boardTx is one session's board inside one transaction.
type boardTx struct {
	ctx context.Context
	tx  *sql.Tx
	id  string
}

func (b *boardTx) State() (workflow.BoardState, error) {
	st := workflow.BoardState{SessionID: b.id}
	var lifecycle string
	var gen, posted, retained, removed, rev, low sql.NullInt64
	err := b.tx.QueryRowContext(b.ctx, `SELECT s.lifecycle, m.generation, m.posted, m.retained, m.removed, m.observation_revision, m.observation_low_watermark
		FROM sessions s LEFT JOIN message_boards m ON m.session_id = s.session_id WHERE s.session_id = ?`, b.id).
		Scan(&lifecycle, &gen, &posted, &retained, &removed, &rev, &low)
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
	_, err := b.tx.ExecContext(b.ctx, `INSERT INTO message_boards (session_id, generation, posted, retained, removed, observation_revision, observation_low_watermark)
		VALUES (?,?,?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation, posted = excluded.posted, retained = excluded.retained,
		removed = excluded.removed, observation_revision = excluded.observation_revision,
		observation_low_watermark = excluded.observation_low_watermark`,
		b.id, st.Generation, st.Posted, st.Retained, st.Removed, st.ObservationRevision, st.ObservationLowWatermark)
	return err
}

func (b *boardTx) one(query string, args ...any) (workflow.Message, bool, error) {
	ms, err := b.query(query+` LIMIT 1`, args...)
	if err != nil || len(ms) == 0 {
		return workflow.Message{}, false, err
	}
	return ms[0], true, nil
}

func (b *boardTx) Message(id string) (workflow.Message, bool, error) {
	return b.one(selectMessage+` AND message_id = ?`, b.id, id)
}

func (b *boardTx) ByDeliveryKey(key string) (workflow.Message, bool, error) {
	return b.one(selectMessage+` AND delivery_key = ?`, b.id, key)
}

func (b *boardTx) Replies(id string, limit int) ([]workflow.Message, error) {
	return b.query(selectMessage+` AND reply_to = ? ORDER BY seq LIMIT ?`, b.id, id, limit)
}

func (b *boardTx) List(f workflow.MessageFilter) ([]workflow.Message, bool, error) {
	q := selectMessage
	args := []any{b.id}
	for _, c := range []struct{ col, v string }{{"kind", string(f.Kind)}, {"status", string(f.Status)},
		{"message_id", f.MessageID}, {"reply_to", f.ReplyTo}} {
		if c.v != "" {
			q += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	ms, err := b.query(q+` ORDER BY seq DESC LIMIT ?`, append(args, f.Limit+1)...)
	if err != nil {
		return nil, false, err
	}
	if len(ms) > f.Limit {
		return ms[:f.Limit], true, nil
	}
	return ms, false, nil
}

func (b *boardTx) Changed(after int64, limit int) ([]workflow.Message, error) {
	return b.query(selectMessage+` AND observation_revision > ? ORDER BY observation_revision LIMIT ?`, b.id, after, limit)
}

func (b *boardTx) Counts() (map[workflow.MessageKind]map[workflow.MessageStatus]int, error) {
	rows, err := b.tx.QueryContext(b.ctx, `SELECT kind, status, COUNT(*) FROM messages WHERE session_id = ? GROUP BY kind, status`, b.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[workflow.MessageKind]map[workflow.MessageStatus]int{}
	for rows.Next() {
		var k, st string
		var n int
		if err := rows.Scan(&k, &st, &n); err != nil {
			return nil, err
		}
		if out[workflow.MessageKind(k)] == nil {
			out[workflow.MessageKind(k)] = map[workflow.MessageStatus]int{}
		}
		out[workflow.MessageKind(k)][workflow.MessageStatus(st)] = n
	}
	return out, rows.Err()
}

func (b *boardTx) Retained() ([]workflow.Message, error) {
	return b.query(selectMessageMeta+` ORDER BY seq`, b.id)
}

func (b *boardTx) Insert(m workflow.Message) error {
	_, err := b.tx.ExecContext(b.ctx, `INSERT INTO messages (session_id, `+fmt.Sprintf(messageColumns, "body")+`)
		VALUES (?`+strings.Repeat(",?", messageColumnCount)+`)`, append([]any{b.id}, messageArgs(m)...)...)
	return err
}

func (b *boardTx) Save(m workflow.Message) error {
	cols := strings.Split(fmt.Sprintf(messageColumns, "body"), ",")
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = strings.TrimSpace(c) + ` = ?`
	}
	res, err := b.tx.ExecContext(b.ctx, `UPDATE messages SET `+strings.Join(set, ", ")+` WHERE session_id = ? AND message_id = ?`,
		append(messageArgs(m), b.id, m.ID)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("save message %s: %d rows", m.ID, n)
	}
	return nil
}

func (b *boardTx) Remove(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{b.id}
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := b.tx.ExecContext(b.ctx, `DELETE FROM messages WHERE session_id = ? AND message_id IN (?`+
		strings.Repeat(",?", len(ids)-1)+`)`, args...)
	return err
}

func nanos(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixNano()
}

func timeOf(n int64) *time.Time {
	if n == 0 {
		return nil
	}
	t := time.Unix(0, n).UTC()
	return &t
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// messageArgs are m's values in the order of messageColumns.
func messageArgs(m workflow.Message) []any {
	tags, _ := json.Marshal(m.Tags)
	return []any{m.ID, m.Seq, m.CreatedAt.UnixNano(), string(m.Kind), string(m.Status), string(m.Priority), m.Body,
		string(tags), m.ReplyTo, m.AuthorSessionID, boolInt(m.RequiresAck), nanos(m.ResolvedAt), m.Resolution,
		m.ResolvedByMessageID, m.CompletionID, m.DeliveryKey, m.DeliveryFingerprint, m.CompletionKey,
		m.CompletionFingerprint, m.ObservationRevision, m.AssignmentRevision, m.RepliesPosted, m.RepliesRemoved,
		nanos(m.FirstAckObservedAt)}
}

func (b *boardTx) query(q string, args ...any) ([]workflow.Message, error) {
	rows, err := b.tx.QueryContext(b.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.Message
	for rows.Next() {
		var m workflow.Message
		var created, resolved, acked int64
		var kind, status, priority, tags string
		var ack int
		if err := rows.Scan(&m.ID, &m.Seq, &created, &kind, &status, &priority, &m.Body, &tags, &m.ReplyTo,
			&m.AuthorSessionID, &ack, &resolved, &m.Resolution, &m.ResolvedByMessageID, &m.CompletionID,
			&m.DeliveryKey, &m.DeliveryFingerprint, &m.CompletionKey, &m.CompletionFingerprint, &m.ObservationRevision,
			&m.AssignmentRevision, &m.RepliesPosted, &m.RepliesRemoved, &acked); err != nil {
			return nil, err
		}
		m.SessionID = b.id
		m.CreatedAt = time.Unix(0, created).UTC()
		m.Kind, m.Status, m.Priority = workflow.MessageKind(kind), workflow.MessageStatus(status), workflow.Priority(priority)
		m.RequiresAck, m.ResolvedAt, m.FirstAckObservedAt = ack != 0, timeOf(resolved), timeOf(acked)
		if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
			return nil, fmt.Errorf("message %s tags: %v", m.ID, err)
		}
		if m.Tags == nil {
			m.Tags = []string{}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
