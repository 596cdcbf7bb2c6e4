// Package projectdb is the SQLite implementation of [project.Store]: the
// project registry in its own database file (projects.db).
//
// Every mutation goes through the database's group-commit writer and returns
// only after its transaction has durably committed.
package projectdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the conventional name of the registry database inside the
// data directory.
const FileName = "projects.db"

// Store is a project.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
	// byID keeps the rows Get read while projects.db is unchanged (a
	// commit by anyone, `webcodex project add/remove` in another process
	// included, drops them): the kernel resolves a project on every call.
	byID *sqlitedb.ReadCache[project.Project]
}

var _ project.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the registry database at
// path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, byID: sqlitedb.NewReadCache[project.Project](db)}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Add registers p durably. Adding an id that exists with the same root is
// a successful no-op that keeps the original row. A zero AddedAt is stored as
// the current time.
//
// Errors: [failure.InvalidArguments] when p has no id or a root that is not
// absolute; [failure.Conflict] when the id exists with a different root.
func (s *Store) Add(ctx context.Context, p project.Project) error {
	if p.ID == "" || (p.Runner == "" && !filepath.IsAbs(p.Root)) {
		return failure.New(failure.InvalidArguments, "project needs an id and an absolute root")
	}
	if p.AddedAt.IsZero() {
		p.AddedAt = time.Now()
	}
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var root, sandbox string
		err := tx.QueryRowContext(ctx, `SELECT root, sandbox FROM projects WHERE id = ?`, p.ID).Scan(&root, &sandbox)
		switch {
		case err == nil && root == p.Root && (p.Sandbox == "" || p.Sandbox == sandbox):
			return nil
		case err == nil && root == p.Root:
			if _, err := tx.ExecContext(ctx, `UPDATE projects SET sandbox = ? WHERE id = ?`, p.Sandbox, p.ID); err != nil {
				return fmt.Errorf("projects: set the sandbox of %s: %w", p.ID, err)
			}
			return nil
		case err == nil:
			return failure.New(failure.Conflict, "project %s is already registered with a different root", p.ID)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("projects: look up %s: %w", p.ID, err)
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO projects (id, name, root, added_at, sandbox, source, base_commit, runner, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Name, p.Root, p.AddedAt.UnixNano(), p.Sandbox, p.Source, p.BaseCommit, p.Runner, p.Owner)
		if err != nil {
			return fmt.Errorf("projects: insert %s: %w", p.ID, err)
		}
		return nil
	})
}

// Remove unregisters id durably. Errors: [failure.UnknownProject] when
// absent.
func (s *Store) Remove(ctx context.Context, id string) error {
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM projects WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("projects: delete %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("projects: delete %s: %w", id, err)
		}
		if n == 0 {
			return unknown(id)
		}
		return nil
	})
}

// Get returns the project with id. Errors: [failure.UnknownProject] naming
// the id when absent.
func (s *Store) Get(ctx context.Context, id string) (project.Project, error) {
	return s.byID.Get(ctx, id, func(ctx context.Context) (project.Project, error) { return s.get(ctx, id) })
}

func (s *Store) get(ctx context.Context, id string) (project.Project, error) {
	row := s.db.QueryRow(ctx, `SELECT id, name, root, added_at, sandbox, source, base_commit, runner, owner FROM projects WHERE id = ?`, id)
	p, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return project.Project{}, unknown(id)
	}
	if err != nil {
		return project.Project{}, fmt.Errorf("projects: get %s: %w", id, err)
	}
	return p, nil
}

// List returns every project ordered by id.
func (s *Store) List(ctx context.Context) ([]project.Project, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT id, name, root, added_at, sandbox, source, base_commit, runner, owner FROM projects ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("projects: list: %w", err)
	}
	defer rows.Close()
	out := []project.Project{}
	for rows.Next() {
		p, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("projects: list: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("projects: list: %w", err)
	}
	return out, nil
}

func scan(row interface{ Scan(...any) error }) (project.Project, error) {
	var p project.Project
	var added int64
	if err := row.Scan(&p.ID, &p.Name, &p.Root, &added, &p.Sandbox, &p.Source, &p.BaseCommit, &p.Runner, &p.Owner); err != nil {
		return project.Project{}, err
	}
	p.AddedAt = time.Unix(0, added).UTC()
	return p, nil
}

func unknown(id string) error {
	return failure.New(failure.UnknownProject, "project %q is not registered", id)
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
