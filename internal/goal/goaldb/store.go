// Package goaldb is the SQLite implementation of [goal.Store]: Goals and
// their session associations in their own database file (goals.db),
// which shares nothing with workflow.db or any other store. Every
// mutation is durable (synchronous=FULL) when it returns.
package goaldb

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "goals.db"

const storeName = "goal store"

// Store is a goal.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
}

var _ goal.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

const columns = `id, owner, project, title, objective, status, generation, revision, steps, recovery_summary,
	checkpoints, checkpointed_at_ms, checkpoint_session, created_at_ms, updated_at_ms`

type scanner interface{ Scan(dest ...any) error }

func scan(r scanner) (goal.Goal, error) {
	var g goal.Goal
	var steps string
	var cp sql.NullInt64
	var created, updated int64
	var status string
	if err := r.Scan(&g.ID, &g.Owner, &g.Project, &g.Title, &g.Objective, &status, &g.Generation, &g.Revision, &steps,
		&g.RecoverySummary, &g.Checkpoints, &cp, &g.CheckpointSession, &created, &updated); err != nil {
		return goal.Goal{}, err
	}
	g.Status = goal.Status(status)
	if err := json.Unmarshal([]byte(steps), &g.Steps); err != nil {
		return goal.Goal{}, fmt.Errorf("goal %s steps: %w", g.ID, err)
	}
	if g.Steps == nil {
		g.Steps = []goal.Step{}
	}
	if cp.Valid {
		t := time.UnixMilli(cp.Int64).UTC()
		g.CheckpointedAt = &t
	}
	g.CreatedAt, g.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return g, nil
}

func args(g goal.Goal) ([]any, error) {
	steps, err := json.Marshal(g.Steps)
	if err != nil {
		return nil, err
	}
	var cp any
	if g.CheckpointedAt != nil {
		cp = g.CheckpointedAt.UnixMilli()
	}
	return []any{g.ID, g.Owner, g.Project, g.Title, g.Objective, string(g.Status), g.Generation, g.Revision, string(steps),
		g.RecoverySummary, g.Checkpoints, cp, g.CheckpointSession, g.CreatedAt.UnixMilli(), g.UpdatedAt.UnixMilli()}, nil
}

// Create implements goal.Store.
func (s *Store) Create(ctx context.Context, g goal.Goal, max int) error {
	a, err := args(g)
	if err != nil {
		return err
	}
	err = s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM goals WHERE owner = ?`, g.Owner).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return failure.New(failure.GoalLimitReached, "an authority group holds at most %d goals", max)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO goals (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a...)
		return err
	})
	return sqlitedb.StoreError(err, storeName)
}

// Get implements goal.Store.
func (s *Store) Get(ctx context.Context, id string) (goal.Goal, error) {
	g, err := scan(s.db.QueryRow(ctx, `SELECT `+columns+` FROM goals WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return goal.Goal{}, failure.New(failure.UnknownGoalID, "no goal %s exists", id)
	}
	return g, sqlitedb.StoreError(err, storeName)
}

// List implements goal.Store.
func (s *Store) List(ctx context.Context, f goal.ListFilter) ([]goal.Goal, int, error) {
	where := `(? OR owner = ?) AND (? = '' OR project = ?) AND (? = '' OR status = ?)`
	wargs := []any{f.AllOwners, f.Owner, f.Project, f.Project, string(f.Status), string(f.Status)}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM goals WHERE `+where, wargs...).Scan(&total); err != nil {
		return nil, 0, sqlitedb.StoreError(err, storeName)
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+columns+` FROM goals WHERE `+where+
		` ORDER BY updated_at_ms DESC, id LIMIT ? OFFSET ?`, append(wargs, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []goal.Goal{}
	for rows.Next() {
		g, err := scan(rows)
		if err != nil {
			return nil, 0, sqlitedb.StoreError(err, storeName)
		}
		out = append(out, g)
	}
	return out, total, sqlitedb.StoreError(rows.Err(), storeName)
}

// Update implements goal.Store.
func (s *Store) Update(ctx context.Context, id string, fn func(g *goal.Goal) (bool, error)) (goal.Goal, error) {
	var out goal.Goal
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		g, err := scan(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM goals WHERE id = ?`, id))
		if err == sql.ErrNoRows {
			return failure.New(failure.UnknownGoalID, "no goal %s exists", id)
		}
		if err != nil {
			return err
		}
		changed, err := fn(&g)
		if err != nil {
			return err
		}
		out = g
		if !changed {
			return nil
		}
		a, err := args(g)
		if err != nil {
			return err
		}
		// The primary key stays; every other column is rewritten.
		_, err = tx.ExecContext(ctx, `UPDATE goals SET owner = ?, project = ?, title = ?, objective = ?, status = ?,
			generation = ?, revision = ?, steps = ?, recovery_summary = ?, checkpoints = ?, checkpointed_at_ms = ?,
			checkpoint_session = ?, created_at_ms = ?, updated_at_ms = ? WHERE id = ?`, append(a[1:], id)...)
		return err
	})
	if err != nil {
		return goal.Goal{}, sqlitedb.StoreError(err, storeName)
	}
	return out, nil
}

// Associate implements goal.Store.
func (s *Store) Associate(ctx context.Context, a goal.Association, max int) (goal.Association, bool, error) {
	stored, changed := a, false
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var project string
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT project, associated_at_ms FROM goal_sessions WHERE goal_id = ? AND session_id = ?`,
			a.GoalID, a.SessionID).Scan(&project, &at)
		if err == nil {
			stored = goal.Association{GoalID: a.GoalID, SessionID: a.SessionID, Project: project, At: time.UnixMilli(at).UTC()}
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM goal_sessions WHERE goal_id = ?`, a.GoalID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return failure.New(failure.GoalLimitReached, "goal %s already correlates %d sessions", a.GoalID, max)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO goal_sessions (goal_id, session_id, project, associated_at_ms) VALUES (?, ?, ?, ?)`,
			a.GoalID, a.SessionID, a.Project, a.At.UnixMilli()); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil {
		return goal.Association{}, false, sqlitedb.StoreError(err, storeName)
	}
	return stored, changed, nil
}

// Sessions implements goal.Store.
func (s *Store) Sessions(ctx context.Context, goalID string) ([]goal.Association, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT session_id, project, associated_at_ms FROM goal_sessions
		WHERE goal_id = ? ORDER BY associated_at_ms, rowid`, goalID)
	if err != nil {
		return nil, sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []goal.Association{}
	for rows.Next() {
		a := goal.Association{GoalID: goalID}
		var at int64
		if err := rows.Scan(&a.SessionID, &a.Project, &at); err != nil {
			return nil, sqlitedb.StoreError(err, storeName)
		}
		a.At = time.UnixMilli(at).UTC()
		out = append(out, a)
	}
	return out, sqlitedb.StoreError(rows.Err(), storeName)
}

// OfSession implements goal.Store. One statement gives the page and the
// total (a window count, taken before LIMIT), so they agree.
func (s *Store) OfSession(ctx context.Context, sessionID string, limit int) ([]goal.Ref, int, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT g.id, g.title, count(*) OVER () FROM goal_sessions a JOIN goals g ON g.id = a.goal_id
		WHERE a.session_id = ? ORDER BY a.associated_at_ms, a.rowid LIMIT ?`, sessionID, limit)
	if err != nil {
		return nil, 0, sqlitedb.StoreError(err, storeName)
	}
	defer rows.Close()
	out, total := []goal.Ref{}, 0
	for rows.Next() {
		var r goal.Ref
		if err := rows.Scan(&r.ID, &r.Title, &total); err != nil {
			return nil, 0, sqlitedb.StoreError(err, storeName)
		}
		out = append(out, r)
	}
	return out, total, sqlitedb.StoreError(rows.Err(), storeName)
}

// Raw returns a Goal's stored row as text, column by column, for tests
// that prove a row was not touched.
func (s *Store) Raw(ctx context.Context, id string) (string, error) {
	var raw string
	err := s.db.QueryRow(ctx, `SELECT json_array(`+columns+`) FROM goals WHERE id = ?`, id).Scan(&raw)
	return raw, sqlitedb.StoreError(err, storeName)
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
