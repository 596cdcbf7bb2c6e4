// Package taskrow is the stored form of Agent Tasks and their attempts and
// the statements over it, shared by the SQLite store (agenttaskdb) and
// the PostgreSQL store (agenttaskpg) so that both keep exactly the same
// rows and make the same decisions: labels and depends_on as JSON text
// (and as rows of task_labels and task_deps, which the filters use),
// times as Unix milliseconds (UTC), NULL for an attempt not yet ended.
// A driver supplies a Querier over its transaction or pool and a Dialect.
package taskrow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sqlrow"
)

// ErrNoRows, Row and Querier are the shared forms of package sqlrow: a
// Querier runs statements written with ? placeholders (a Dialect rewrites
// them) on one transaction or pool.
var ErrNoRows = sqlrow.ErrNoRows

type (
	Row     = sqlrow.Row
	Querier = sqlrow.Querier
)

// Dialect is what differs between the drivers' SQL.
type Dialect struct {
	// Prefix qualifies table names ("tasks." for the PostgreSQL schema).
	Prefix string
	// ForUpdate follows the select of a task under Mutate (" FOR UPDATE"
	// on PostgreSQL; SQLite's one writer already holds the database).
	ForUpdate string
	// LockKey, when set, is a statement taking an idempotency key's scope
	// (owner, project, key) that serializes creates with that key.
	LockKey string
	// IDOrder is how ids are ordered (byte order on both).
	IDOrder string
	// Dollar rewrites ? placeholders to $1, $2, ... (PostgreSQL).
	Dollar bool
	// Notify, when set, is a statement taking a feed key
	// (agenttask.FeedKey) that queues a wake of that key's waiters on
	// other replicas at commit (pg_notify on PostgreSQL).
	Notify string
}

// sql prepares a statement: table names qualified, placeholders rewritten.
func (d Dialect) sql(q string) string {
	q = strings.NewReplacer("{tasks}", d.Prefix+"tasks", "{attempts}", d.Prefix+"attempts",
		"{labels}", d.Prefix+"task_labels", "{deps}", d.Prefix+"task_deps",
		"{feed}", d.Prefix+"task_feed", "{keys}", d.Prefix+"task_keys", "{id_order}", d.IDOrder).Replace(q)
	if !d.Dollar {
		return q
	}
	return sqlrow.Dollar(q)
}

const taskColumns = `id, owner, project, title, body, labels, priority, depends_on, idempotency_key, payload_digest,
	state, generation, revision, fence, created_at_ms, updated_at_ms, feed_revision`

const attemptColumns = `id, task_id, session_id, fence, lease_until_ms, state, outcome, summary, completion_key,
	completion_digest, started_at_ms, ended_at_ms`

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func taskArgs(t agenttask.Task) ([]any, error) {
	labels, err := json.Marshal(t.Labels)
	if err != nil {
		return nil, err
	}
	deps, err := json.Marshal(t.DependsOn)
	if err != nil {
		return nil, err
	}
	return []any{t.ID, t.Owner, t.Project, t.Title, t.Body, string(labels), t.Priority, string(deps), t.IdempotencyKey,
		t.PayloadDigest, string(t.State), t.Generation, t.Revision, t.Fence, ms(t.CreatedAt), ms(t.UpdatedAt), t.FeedRevision}, nil
}

func scanTask(r Row, extra ...any) (agenttask.Task, error) {
	var t agenttask.Task
	var labels, deps, state string
	var created, updated int64
	dest := append([]any{&t.ID, &t.Owner, &t.Project, &t.Title, &t.Body, &labels, &t.Priority, &deps, &t.IdempotencyKey,
		&t.PayloadDigest, &state, &t.Generation, &t.Revision, &t.Fence, &created, &updated, &t.FeedRevision}, extra...)
	if err := r.Scan(dest...); err != nil {
		return agenttask.Task{}, err
	}
	if err := json.Unmarshal([]byte(labels), &t.Labels); err != nil {
		return agenttask.Task{}, fmt.Errorf("agent task %s labels: %w", t.ID, err)
	}
	if err := json.Unmarshal([]byte(deps), &t.DependsOn); err != nil {
		return agenttask.Task{}, fmt.Errorf("agent task %s depends_on: %w", t.ID, err)
	}
	if t.Labels == nil {
		t.Labels = []string{}
	}
	if t.DependsOn == nil {
		t.DependsOn = []string{}
	}
	t.State, t.CreatedAt, t.UpdatedAt = agenttask.State(state), fromMS(created), fromMS(updated)
	return t, nil
}

func attemptArgs(a agenttask.Attempt) []any {
	var ended any
	if a.EndedAt != nil {
		ended = ms(*a.EndedAt)
	}
	return []any{a.ID, a.TaskID, a.SessionID, a.Fence, ms(a.LeaseUntil), string(a.State), string(a.Outcome), a.Summary,
		a.CompletionKey, a.CompletionDigest, ms(a.StartedAt), ended}
}

func scanAttempt(r Row) (agenttask.Attempt, error) {
	var a agenttask.Attempt
	var lease, started int64
	var ended *int64
	var state, outcome string
	if err := r.Scan(&a.ID, &a.TaskID, &a.SessionID, &a.Fence, &lease, &state, &outcome, &a.Summary, &a.CompletionKey,
		&a.CompletionDigest, &started, &ended); err != nil {
		return agenttask.Attempt{}, err
	}
	a.State, a.Outcome = agenttask.AttemptState(state), agenttask.Outcome(outcome)
	a.LeaseUntil, a.StartedAt = fromMS(lease), fromMS(started)
	if ended != nil {
		t := fromMS(*ended)
		a.EndedAt = &t
	}
	return a, nil
}

// Create implements agenttask.Store.Create on q, a transaction.
func Create(ctx context.Context, q Querier, d Dialect, t agenttask.Task) (agenttask.Task, bool, error) {
	if t.IdempotencyKey != "" {
		if d.LockKey != "" {
			scope, _ := json.Marshal([]string{t.Owner, t.Project, t.IdempotencyKey})
			if err := q.Exec(ctx, d.sql(d.LockKey), string(scope)); err != nil {
				return agenttask.Task{}, false, err
			}
		}
		prior, err := scanTask(q.QueryRow(ctx, d.sql(`SELECT `+taskColumns+` FROM {tasks}
			WHERE owner = ? AND project = ? AND idempotency_key = ?`), t.Owner, t.Project, t.IdempotencyKey))
		switch {
		case err == nil && prior.PayloadDigest == t.PayloadDigest:
			return prior, true, nil
		case err == nil:
			return agenttask.Task{}, false, failure.New(failure.IdempotencyConflict,
				"idempotency_key %q was used for agent task %s with another payload", t.IdempotencyKey, prior.ID).
				WithDetail("task_id", prior.ID)
		case !errors.Is(err, ErrNoRows):
			return agenttask.Task{}, false, err
		}
	}
	var err error
	var unknown []string
	for _, dep := range t.DependsOn {
		var n int
		if err := q.QueryRow(ctx, d.sql(`SELECT count(*) FROM {tasks} WHERE id = ? AND owner = ? AND project = ?`),
			dep, t.Owner, t.Project).Scan(&n); err != nil {
			return agenttask.Task{}, false, err
		}
		if n == 0 {
			unknown = append(unknown, dep)
		}
	}
	if len(unknown) > 0 {
		return agenttask.Task{}, false, failure.New(failure.NotFound, "no agent task %s exists on project %s",
			strings.Join(unknown, ", "), t.Project).WithDetail("unknown_dependencies", unknown)
	}
	if t.FeedRevision, err = bumpFeed(ctx, q, d, t); err != nil {
		return agenttask.Task{}, false, err
	}
	a, err := taskArgs(t)
	if err != nil {
		return agenttask.Task{}, false, err
	}
	if err := q.Exec(ctx, d.sql(`INSERT INTO {tasks} (`+taskColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), a...); err != nil {
		return agenttask.Task{}, false, err
	}
	for _, dep := range t.DependsOn {
		if err := q.Exec(ctx, d.sql(`INSERT INTO {deps} (task_id, dep_id) VALUES (?, ?)`), t.ID, dep); err != nil {
			return agenttask.Task{}, false, err
		}
	}
	if err := writeLabels(ctx, q, d, t); err != nil {
		return agenttask.Task{}, false, err
	}
	return t, false, nil
}

func writeLabels(ctx context.Context, q Querier, d Dialect, t agenttask.Task) error {
	if err := q.Exec(ctx, d.sql(`DELETE FROM {labels} WHERE task_id = ?`), t.ID); err != nil {
		return err
	}
	for _, l := range t.Labels {
		if err := q.Exec(ctx, d.sql(`INSERT INTO {labels} (task_id, label) VALUES (?, ?)`), t.ID, l); err != nil {
			return err
		}
	}
	return nil
}

// Get implements agenttask.Store.Get.
func Get(ctx context.Context, q Querier, d Dialect, id string) (agenttask.Task, error) {
	return getTask(ctx, q, d, id, "")
}

func getTask(ctx context.Context, q Querier, d Dialect, id, lock string) (agenttask.Task, error) {
	t, err := scanTask(q.QueryRow(ctx, d.sql(`SELECT `+taskColumns+` FROM {tasks} WHERE id = ?`+lock), id))
	if errors.Is(err, ErrNoRows) {
		return agenttask.Task{}, agenttask.UnknownTask(id)
	}
	return t, err
}

// Attempt implements agenttask.Store.Attempt.
func Attempt(ctx context.Context, q Querier, d Dialect, id string) (agenttask.Attempt, error) {
	a, err := scanAttempt(q.QueryRow(ctx, d.sql(`SELECT `+attemptColumns+` FROM {attempts} WHERE id = ?`), id))
	if errors.Is(err, ErrNoRows) {
		return agenttask.Attempt{}, agenttask.UnknownAttempt(id)
	}
	return a, err
}

// Attempts implements agenttask.Store.Attempts.
func Attempts(ctx context.Context, q Querier, d Dialect, taskID string) ([]agenttask.Attempt, error) {
	return attempts(ctx, q, d, `task_id = ?`, taskID)
}

func attempts(ctx context.Context, q Querier, d Dialect, where string, args ...any) ([]agenttask.Attempt, error) {
	out := []agenttask.Attempt{}
	err := q.Query(ctx, d.sql(`SELECT `+attemptColumns+` FROM {attempts} WHERE `+where+` ORDER BY fence`), args, func(r Row) error {
		a, err := scanAttempt(r)
		out = append(out, a)
		return err
	})
	return out, err
}

const listWhere = `owner = ? AND (? = '' OR project = ?) AND (? = '' OR state = ?)
	AND (? = '' OR EXISTS (SELECT 1 FROM {labels} l WHERE l.task_id = {tasks}.id AND l.label = ?))`

// List implements agenttask.Store.List on q (one transaction, so that the
// page and the total agree).
func List(ctx context.Context, q Querier, d Dialect, f agenttask.ListFilter) ([]agenttask.Task, int, error) {
	args := []any{f.Owner, f.Project, f.Project, string(f.State), string(f.State), f.Label, f.Label}
	var total int
	if err := q.QueryRow(ctx, d.sql(`SELECT count(*) FROM {tasks} WHERE `+listWhere), args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	out := []agenttask.Task{}
	err := q.Query(ctx, d.sql(`SELECT `+taskColumns+` FROM {tasks} WHERE `+listWhere+`
		ORDER BY priority DESC, created_at_ms, id {id_order} LIMIT ? OFFSET ?`), append(args, f.Limit, f.Offset), func(r Row) error {
		t, err := scanTask(r)
		out = append(out, t)
		return err
	})
	return out, total, err
}

// Ready implements agenttask.Store.Ready.
func Ready(ctx context.Context, q Querier, d Dialect, f agenttask.ReadyFilter) ([]string, error) {
	out := []string{}
	err := q.Query(ctx, d.sql(`SELECT id FROM {tasks} t WHERE t.owner = ? AND t.project = ?
		AND (? = '' OR EXISTS (SELECT 1 FROM {labels} l WHERE l.task_id = t.id AND l.label = ?))
		AND (t.state = 'open' OR (t.state = 'claimed' AND EXISTS (SELECT 1 FROM {attempts} a
			WHERE a.task_id = t.id AND a.state = 'live' AND a.lease_until_ms <= ?)))
		AND NOT EXISTS (SELECT 1 FROM {deps} x JOIN {tasks} y ON y.id = x.dep_id WHERE x.task_id = t.id AND y.state <> 'done')
		ORDER BY t.priority DESC, t.created_at_ms, t.id {id_order} LIMIT ?`),
		[]any{f.Owner, f.Project, f.Label, f.Label, ms(f.Now), f.Limit}, func(r Row) error {
			var id string
			err := r.Scan(&id)
			out = append(out, id)
			return err
		})
	return out, err
}

// Lapsed implements agenttask.Store.Lapsed.
func Lapsed(ctx context.Context, q Querier, d Dialect, now time.Time, limit int) ([]string, error) {
	out := []string{}
	err := q.Query(ctx, d.sql(`SELECT task_id FROM {attempts} WHERE state = 'live' AND lease_until_ms <= ?
		ORDER BY lease_until_ms, id {id_order} LIMIT ?`), []any{ms(now), limit}, func(r Row) error {
		var id string
		err := r.Scan(&id)
		out = append(out, id)
		return err
	})
	return out, err
}

// Mutate implements agenttask.Store.Mutate on q, a transaction: the task
// is read with d.ForUpdate, so on PostgreSQL every other Mutate of the
// task waits until this transaction ends and then judges what it stored.
func Mutate(ctx context.Context, q Querier, d Dialect, taskID, attemptID string, fn func(l *agenttask.Locked) (bool, error)) (agenttask.Locked, error) {
	t, err := getTask(ctx, q, d, taskID, d.ForUpdate)
	if err != nil {
		return agenttask.Locked{}, err
	}
	l := agenttask.Locked{Task: t, Deps: []agenttask.Dep{}}
	l.Task.Labels, l.Task.DependsOn = slices.Clone(t.Labels), slices.Clone(t.DependsOn) // t stays as read
	// Dependencies are read without their locks: the only state a start
	// waits for, done, is terminal, so a dependency read as done stays so.
	for _, dep := range t.DependsOn {
		var st string
		if err := q.QueryRow(ctx, d.sql(`SELECT state FROM {tasks} WHERE id = ?`), dep).Scan(&st); err != nil {
			return agenttask.Locked{}, fmt.Errorf("agent task %s dependency %s: %w", t.ID, dep, err)
		}
		l.Deps = append(l.Deps, agenttask.Dep{ID: dep, State: agenttask.State(st)})
	}
	if l.Attempts, err = attempts(ctx, q, d, `task_id = ? AND (state = 'live' OR id = ?)`, taskID, attemptID); err != nil {
		return agenttask.Locked{}, err
	}
	known := len(l.Attempts)
	changed, err := fn(&l)
	if err != nil || !changed {
		return l, err
	}
	if l.Task, err = writeTask(ctx, q, d, t, l.Task); err != nil {
		return agenttask.Locked{}, err
	}
	for i, at := range l.Attempts {
		aa := attemptArgs(at)
		if i >= known {
			err = q.Exec(ctx, d.sql(`INSERT INTO {attempts} (`+attemptColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), aa...)
		} else {
			err = q.Exec(ctx, d.sql(`UPDATE {attempts} SET lease_until_ms = ?, state = ?, outcome = ?, summary = ?, completion_key = ?,
				completion_digest = ?, ended_at_ms = ? WHERE id = ?`), aa[4], aa[5], aa[6], aa[7], aa[8], aa[9], aa[11], at.ID)
		}
		if err != nil {
			return agenttask.Locked{}, err
		}
	}
	return l, nil
}

// writeTask stores task as fn left it, when it differs from was (a
// heartbeat changes only its attempt), stamped with the feed revision its
// change made, and its labels when they changed; it returns task as
// stored. The id, owner, project, depends_on, key and digest never change.
func writeTask(ctx context.Context, q Querier, d Dialect, was, task agenttask.Task) (agenttask.Task, error) {
	if reflect.DeepEqual(was, task) {
		return task, nil
	}
	var err error
	if task.FeedRevision, err = bumpFeed(ctx, q, d, task); err != nil {
		return agenttask.Task{}, err
	}
	a, err := taskArgs(task)
	if err != nil {
		return agenttask.Task{}, err
	}
	if err := q.Exec(ctx, d.sql(`UPDATE {tasks} SET title = ?, body = ?, labels = ?, priority = ?, state = ?, generation = ?,
		revision = ?, fence = ?, updated_at_ms = ?, feed_revision = ? WHERE id = ?`), a[3], a[4], a[5], a[6], a[10], a[11], a[12], a[13], a[15],
		a[16], task.ID); err != nil {
		return agenttask.Task{}, err
	}
	if slices.Equal(was.Labels, task.Labels) {
		return task, nil
	}
	return task, writeLabels(ctx, q, d, task)
}

// Raw returns a task's stored rows (the task, its labels, dependencies and
// attempts) as text, for tests that prove nothing changed.
func Raw(ctx context.Context, q Querier, d Dialect, id string) (string, error) {
	t, err := getTask(ctx, q, d, id, "")
	if err != nil {
		return "", err
	}
	as, err := Attempts(ctx, q, d, id)
	if err != nil {
		return "", err
	}
	var labels []string
	if err := q.Query(ctx, d.sql(`SELECT label FROM {labels} WHERE task_id = ? ORDER BY label {id_order}`), []any{id}, func(r Row) error {
		var l string
		err := r.Scan(&l)
		labels = append(labels, l)
		return err
	}); err != nil {
		return "", err
	}
	out, err := json.Marshal(struct {
		T  agenttask.Task
		D  string
		L  []string
		A  []agenttask.Attempt
		AD []string
	}{t, t.PayloadDigest, labels, as, digests(as)})
	return string(out), err
}

func digests(as []agenttask.Attempt) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.CompletionDigest)
	}
	return out
}

// Rows is what *sql.Rows and pgx.Rows share (sqlrow.Rows).
type Rows = sqlrow.Rows

// Each calls each for every row of rows (which the caller closes) and
// returns the first error (sqlrow.Each).
func Each(rows Rows, each func(Row) error) error { return sqlrow.Each(rows, each) }
