// Package goalpg is the PostgreSQL implementation of [goal.Store]: Goals
// and their session associations in the schema goals of a shared database,
// which shares nothing with the workflow schema or any other (decision
// 0071). Every mutation is one READ COMMITTED transaction and durable when
// it returns.
package goalpg

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "goals"

const storeName = "goal store"

// Store is a goal.Store on PostgreSQL.
type Store struct{ db *pgdb.DB }

var _ goal.Store = (*Store)(nil)

// Open migrates the schema goals of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

const columns = `id, owner, project, title, objective, status, generation, revision, steps, recovery_summary,
	checkpoints, checkpointed_at_ms, checkpoint_session, created_at_ms, updated_at_ms`

func scan(r pgx.Row) (goal.Goal, error) {
	var g goal.Goal
	var steps, status string
	var cp *int64
	var created, updated int64
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
	if cp != nil {
		t := time.UnixMilli(*cp).UTC()
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

// Create implements goal.Store. The owner's count and the insert are
// serialized per owner by a transaction-scoped advisory lock, so that
// concurrent creates (on any replica) never pass max together.
func (s *Store) Create(ctx context.Context, g goal.Goal, max int) error {
	a, err := args(g)
	if err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('webcodex.goals.owner'), hashtext($1))`, g.Owner); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM goals.goals WHERE owner = $1`, g.Owner).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return failure.New(failure.GoalLimitReached, "an authority group holds at most %d goals", max)
		}
		_, err := tx.Exec(ctx, `INSERT INTO goals.goals (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, a...)
		return err
	})
	return pgdb.StoreError(err, storeName)
}

// Get implements goal.Store.
func (s *Store) Get(ctx context.Context, id string) (goal.Goal, error) {
	g, err := scan(s.db.Pool.QueryRow(ctx, `SELECT `+columns+` FROM goals.goals WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return goal.Goal{}, failure.New(failure.UnknownGoalID, "no goal %s exists", id)
	}
	return g, pgdb.StoreError(err, storeName)
}

// List implements goal.Store. The page and the total come from one
// statement (a window count taken before LIMIT), so they agree.
func (s *Store) List(ctx context.Context, f goal.ListFilter) ([]goal.Goal, int, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+columns+`, count(*) OVER () FROM goals.goals
		WHERE ($1 OR owner = $2) AND ($3 = '' OR project = $3) AND ($4 = '' OR status = $4)
		ORDER BY updated_at_ms DESC, id COLLATE "C" LIMIT $5 OFFSET $6`,
		f.AllOwners, f.Owner, f.Project, string(f.Status), f.Limit, f.Offset)
	if err != nil {
		return nil, 0, pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	out, total := []goal.Goal{}, 0
	for rows.Next() {
		var t int64
		g, err := scan(totalRow{rows, &t})
		if err != nil {
			return nil, 0, pgdb.StoreError(err, storeName)
		}
		total = int(t)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, pgdb.StoreError(err, storeName)
	}
	if len(out) == 0 && f.Offset > 0 {
		// A page past the end carries no window count: ask for it.
		err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM goals.goals WHERE ($1 OR owner = $2) AND ($3 = '' OR project = $3) AND ($4 = '' OR status = $4)`,
			f.AllOwners, f.Owner, f.Project, string(f.Status)).Scan(&total)
		if err != nil {
			return nil, 0, pgdb.StoreError(err, storeName)
		}
	}
	return out, total, nil
}

// totalRow scans a goal's columns and then the window count.
type totalRow struct {
	rows  pgx.Rows
	total *int64
}

func (r totalRow) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.total)...) }

// Update implements goal.Store: the row is locked while fn judges it.
func (s *Store) Update(ctx context.Context, id string, fn func(g *goal.Goal) (bool, error)) (goal.Goal, error) {
	var out goal.Goal
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		g, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM goals.goals WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE goals.goals SET owner = $1, project = $2, title = $3, objective = $4, status = $5,
			generation = $6, revision = $7, steps = $8, recovery_summary = $9, checkpoints = $10, checkpointed_at_ms = $11,
			checkpoint_session = $12, created_at_ms = $13, updated_at_ms = $14 WHERE id = $15`, append(a[1:], id)...)
		return err
	})
	if err != nil {
		return goal.Goal{}, pgdb.StoreError(err, storeName)
	}
	return out, nil
}

// Associate implements goal.Store. The Goal's row is locked first, so the
// per-goal count and the insert are one decision across replicas.
func (s *Store) Associate(ctx context.Context, a goal.Association, max int) (goal.Association, bool, error) {
	var stored goal.Association
	var changed bool
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		stored, changed = a, false
		if _, err := tx.Exec(ctx, `SELECT 1 FROM goals.goals WHERE id = $1 FOR UPDATE`, a.GoalID); err != nil {
			return err
		}
		var project string
		var at int64
		err := tx.QueryRow(ctx, `SELECT project, associated_at_ms FROM goals.goal_sessions WHERE goal_id = $1 AND session_id = $2`,
			a.GoalID, a.SessionID).Scan(&project, &at)
		if err == nil {
			stored = goal.Association{GoalID: a.GoalID, SessionID: a.SessionID, Project: project, At: time.UnixMilli(at).UTC()}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM goals.goal_sessions WHERE goal_id = $1`, a.GoalID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return failure.New(failure.GoalLimitReached, "goal %s already correlates %d sessions", a.GoalID, max)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO goals.goal_sessions (goal_id, session_id, project, associated_at_ms) VALUES ($1, $2, $3, $4)`,
			a.GoalID, a.SessionID, a.Project, a.At.UnixMilli()); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil {
		return goal.Association{}, false, pgdb.StoreError(err, storeName)
	}
	return stored, changed, nil
}

// Sessions implements goal.Store.
func (s *Store) Sessions(ctx context.Context, goalID string) ([]goal.Association, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT session_id, project, associated_at_ms FROM goals.goal_sessions
		WHERE goal_id = $1 ORDER BY associated_at_ms, seq`, goalID)
	if err != nil {
		return nil, pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	out := []goal.Association{}
	for rows.Next() {
		a := goal.Association{GoalID: goalID}
		var at int64
		if err := rows.Scan(&a.SessionID, &a.Project, &at); err != nil {
			return nil, pgdb.StoreError(err, storeName)
		}
		a.At = time.UnixMilli(at).UTC()
		out = append(out, a)
	}
	return out, pgdb.StoreError(rows.Err(), storeName)
}

// OfSession implements goal.Store. One statement gives the page and the
// total (a window count, taken before LIMIT), so they agree.
func (s *Store) OfSession(ctx context.Context, sessionID string, limit int) ([]goal.Ref, int, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT g.id, g.title, count(*) OVER () FROM goals.goal_sessions a JOIN goals.goals g ON g.id = a.goal_id
		WHERE a.session_id = $1 ORDER BY a.associated_at_ms, a.seq LIMIT $2`, sessionID, limit)
	if err != nil {
		return nil, 0, pgdb.StoreError(err, storeName)
	}
	defer rows.Close()
	out, total := []goal.Ref{}, int64(0)
	for rows.Next() {
		var r goal.Ref
		if err := rows.Scan(&r.ID, &r.Title, &total); err != nil {
			return nil, 0, pgdb.StoreError(err, storeName)
		}
		out = append(out, r)
	}
	return out, int(total), pgdb.StoreError(rows.Err(), storeName)
}

// Raw returns a Goal's stored row as text, column by column, for tests
// that prove a row was not touched.
func (s *Store) Raw(ctx context.Context, id string) (string, error) {
	var raw string
	err := s.db.Pool.QueryRow(ctx, `SELECT json_build_array(`+columns+`)::text FROM goals.goals WHERE id = $1`, id).Scan(&raw)
	return raw, pgdb.StoreError(err, storeName)
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
