package workflowrow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// MessageColumns are the messages table's columns of a retained message
// (every column but session_id and the fetch columns), in the order of
// MessageArgs and ScanMessage.
const MessageColumns = `message_id, seq, created_at, kind, status, priority, body, tags_json, reply_to,
	author_session_id, requires_ack, resolved_at, resolution, resolved_by_message_id, completion_id,
	delivery_key, delivery_fingerprint, completion_key, completion_fingerprint, observation_revision,
	assignment_revision, replies_posted, replies_removed, first_ack_observed_at, first_projected_at,
	last_projected_at, projection_count`

// MessageColumnCount is the number of MessageColumns.
var MessageColumnCount = strings.Count(MessageColumns, ",") + 1

// MessageArgs are m's stored values in the order of MessageColumns
// (requires_ack as a bool: SQLite stores it as 1 or 0).
func MessageArgs(m workflow.Message) []any {
	tags, _ := json.Marshal(m.Tags)
	return []any{m.ID, m.Seq, m.CreatedAt.UnixNano(), string(m.Kind), string(m.Status), string(m.Priority), m.Body,
		string(tags), m.ReplyTo, m.AuthorSessionID, m.RequiresAck, nanos(m.ResolvedAt), m.Resolution,
		m.ResolvedByMessageID, m.CompletionID, m.DeliveryKey, m.DeliveryFingerprint, m.CompletionKey,
		m.CompletionFingerprint, m.ObservationRevision, m.AssignmentRevision, m.RepliesPosted, m.RepliesRemoved,
		nanos(m.FirstAckObservedAt), nanos(m.FirstProjectedAt), nanos(m.LastProjectedAt), m.ProjectionCount}
}

// ScanMessage reads one row of MessageColumns of session's messages
// through scan (a driver's Rows.Scan).
func ScanMessage(scan func(dest ...any) error, session string) (workflow.Message, error) {
	var m workflow.Message
	var created, resolved, acked, firstProjected, lastProjected int64
	var kind, status, priority, tags string
	if err := scan(&m.ID, &m.Seq, &created, &kind, &status, &priority, &m.Body, &tags, &m.ReplyTo,
		&m.AuthorSessionID, &m.RequiresAck, &resolved, &m.Resolution, &m.ResolvedByMessageID, &m.CompletionID,
		&m.DeliveryKey, &m.DeliveryFingerprint, &m.CompletionKey, &m.CompletionFingerprint, &m.ObservationRevision,
		&m.AssignmentRevision, &m.RepliesPosted, &m.RepliesRemoved, &acked, &firstProjected, &lastProjected,
		&m.ProjectionCount); err != nil {
		return m, err
	}
	m.SessionID = session
	m.CreatedAt = time.Unix(0, created).UTC()
	m.Kind, m.Status, m.Priority = workflow.MessageKind(kind), workflow.MessageStatus(status), workflow.Priority(priority)
	m.ResolvedAt, m.FirstAckObservedAt = timeOf(resolved), timeOf(acked)
	m.FirstProjectedAt, m.LastProjectedAt = timeOf(firstProjected), timeOf(lastProjected)
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return m, fmt.Errorf("message %s tags: %v", m.ID, err)
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	return m, nil
}

// AttentionWhere is the condition (after a session's WHERE, starting with
// AND) of the messages a session_attention block may show: open, posted
// before the parameter before (a placeholder, "?" or "$2"), and either
// ACK-required or never projected.
func AttentionWhere(before string) string {
	return ` AND status = 'open' AND (requires_ack OR projection_count = 0) AND created_at < ` + before
}

// OpenTodoParent holds for a message m of table messages (the table's
// qualified name) that replies to an open todo.
func OpenTodoParent(messages string) string {
	return `EXISTS (SELECT 1 FROM ` + messages + ` p WHERE p.session_id = m.session_id
	AND p.message_id = m.reply_to AND p.kind = 'todo' AND p.status = 'open')`
}

// RetentionClass is the condition on a message m of table messages of
// class c (workflow.RetentionClass).
func RetentionClass(c workflow.RetentionClass, messages string) string {
	switch c {
	case workflow.RetainResolved:
		return `m.status = 'resolved' AND NOT ` + OpenTodoParent(messages)
	case workflow.RetainLoose:
		return `m.status = 'open' AND m.kind != 'todo' AND NOT ` + OpenTodoParent(messages)
	case workflow.RetainTodoReplies:
		return `m.reply_to != '' AND NOT (m.kind = 'todo' AND m.status = 'open') AND ` + OpenTodoParent(messages)
	}
	panic(fmt.Sprintf("workflowrow: retention class %d", c))
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

// Rows is what the scanners below read: a driver's result rows
// (database/sql's *sql.Rows and pgx's Rows both have these methods). The
// caller closes them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanMessages reads every row of MessageColumns of session's messages.
func ScanMessages(rows Rows, session string) ([]workflow.Message, error) {
	var out []workflow.Message
	for rows.Next() {
		m, err := ScanMessage(rows.Scan, session)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ScanCounts reads rows of (kind, status, count) into counts by kind and
// status.
func ScanCounts(rows Rows) (map[workflow.MessageKind]map[workflow.MessageStatus]int, error) {
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

// ScanFetches reads rows of (message_id, fetch_window, fetched_at).
func ScanFetches(rows Rows) (map[string]workflow.TodoFetch, error) {
	out := map[string]workflow.TodoFetch{}
	for rows.Next() {
		var id, win string
		var at int64
		if err := rows.Scan(&id, &win, &at); err != nil {
			return nil, err
		}
		out[id] = workflow.TodoFetch{Window: win, At: time.Unix(0, at).UTC()}
	}
	return out, rows.Err()
}

// ScanOldest reads the rows of a retention query (class index, message_id,
// seq, reply_to, observation_revision) of session's messages, whose arms
// come in no defined order, and returns the first limit by class index,
// then seq, with only ID, Seq, ReplyTo and ObservationRevision set (see
// workflow.BoardWriter.Oldest).
func ScanOldest(rows Rows, session string, limit int) ([]workflow.Message, error) {
	type classed struct {
		class int
		m     workflow.Message
	}
	var all []classed
	for rows.Next() {
		c := classed{m: workflow.Message{SessionID: session}}
		if err := rows.Scan(&c.class, &c.m.ID, &c.m.Seq, &c.m.ReplyTo, &c.m.ObservationRevision); err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b classed) int { return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.m.Seq, b.m.Seq)) })
	out := make([]workflow.Message, 0, min(len(all), limit))
	for _, c := range all[:min(len(all), limit)] {
		out = append(out, c.m)
	}
	return out, nil
}
