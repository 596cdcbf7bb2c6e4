// Package projectpg is the PostgreSQL implementation of [project.Store]
// and [runnerhub.Store]: the project registry and the runners' records in
// the schema projects of a shared database (decision 0071).
//
// Every mutation is one READ COMMITTED transaction (pgdb.DB.Tx) and returns
// only after its commit.
package projectpg

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runnerhub"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "projects"

// Store is a project.Store and a runnerhub.Store on PostgreSQL.
type Store struct{ db *pgdb.DB }

var (
	_ project.Store   = (*Store)(nil)
	_ runnerhub.Store = (*Store)(nil)
)

// Open migrates the schema projects of db and returns its store. The pool
// stays the caller's. Errors: those of pgdb.DB.Migrate (failure.Conflict
// for a database newer than this binary).
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

const columns = `id, name, root, added_at, sandbox, source, base_commit, runner, owner`

// Add registers p durably, as projectdb.Store.Add: an id that exists with
// the same root is a no-op (a given sandbox mode replaces the stored one);
// a zero AddedAt is stored as the current time.
//
// Errors: [failure.InvalidArguments] when p has no id or (for a project on
// this host) a root that is not absolute; [failure.Conflict] when the id
// exists with a different root.
func (s *Store) Add(ctx context.Context, p project.Project) error {
	if p.ID == "" || (p.Runner == "" && !filepath.IsAbs(p.Root)) {
		return failure.New(failure.InvalidArguments, "project needs an id and an absolute root")
	}
	if p.AddedAt.IsZero() {
		p.AddedAt = time.Now()
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The row, or a concurrent adder's, is locked before it is judged.
		if _, err := tx.Exec(ctx, `INSERT INTO projects.projects (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (id) DO NOTHING`,
			p.ID, p.Name, p.Root, p.AddedAt.UnixNano(), p.Sandbox, p.Source, p.BaseCommit, p.Runner, p.Owner); err != nil {
			return fmt.Errorf("projects: insert %s: %w", p.ID, err)
		}
		var root, sandbox string
		var added int64
		if err := tx.QueryRow(ctx, `SELECT root, sandbox, added_at FROM projects.projects WHERE id = $1 FOR UPDATE`, p.ID).Scan(&root, &sandbox, &added); err != nil {
			return fmt.Errorf("projects: look up %s: %w", p.ID, err)
		}
		switch {
		case root != p.Root:
			return failure.New(failure.Conflict, "project %s is already registered with a different root", p.ID)
		case p.Sandbox != "" && p.Sandbox != sandbox:
			if _, err := tx.Exec(ctx, `UPDATE projects.projects SET sandbox = $1 WHERE id = $2`, p.Sandbox, p.ID); err != nil {
				return fmt.Errorf("projects: set the sandbox of %s: %w", p.ID, err)
			}
		}
		return nil
	})
}

// Remove unregisters id durably. Errors: [failure.UnknownProject] when
// absent.
func (s *Store) Remove(ctx context.Context, id string) error {
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM projects.projects WHERE id = $1`, id)
		if err != nil {
			return fmt.Errorf("projects: delete %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return unknown(id)
		}
		return nil
	})
}

// Get returns the project with id. Errors: [failure.UnknownProject] naming
// the id when absent.
func (s *Store) Get(ctx context.Context, id string) (project.Project, error) {
	p, err := scan(s.db.Pool.QueryRow(ctx, `SELECT `+columns+` FROM projects.projects WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return project.Project{}, unknown(id)
	}
	if err != nil {
		return project.Project{}, fmt.Errorf("projects: get %s: %w", id, err)
	}
	return p, nil
}

// List returns every project ordered by id.
func (s *Store) List(ctx context.Context) ([]project.Project, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+columns+` FROM projects.projects ORDER BY id COLLATE "C"`)
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

func scan(row pgx.Row) (project.Project, error) {
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

// NextGeneration durably stores r with a generation one above the runner's
// last (1 for a new runner) and returns it (runnerhub.Store). The row lock
// of the upsert serializes two replicas' connections of one runner, so no
// generation is handed out twice.
func (s *Store) NextGeneration(ctx context.Context, r runnerhub.Record) (uint64, error) {
	hello, err := json.Marshal(r.Hello)
	if err != nil {
		return 0, fmt.Errorf("runners: encode the hello: %w", err)
	}
	var gen uint64
	err = s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var g int64
		err := tx.QueryRow(ctx, `INSERT INTO projects.runners (client_id, owner, generation, instance_id, hello, connected_at, last_seen)
			VALUES ($1, $2, 1, $3, $4, $5, $6)
			ON CONFLICT (client_id) DO UPDATE SET owner = excluded.owner, generation = projects.runners.generation + 1,
			instance_id = excluded.instance_id, hello = excluded.hello, connected_at = excluded.connected_at, last_seen = excluded.last_seen
			RETURNING generation`,
			r.ClientID, r.Owner, r.InstanceID, string(hello), r.ConnectedAt.UnixNano(), r.LastSeen.UnixNano()).Scan(&g)
		if err != nil {
			return fmt.Errorf("runners: store %s: %w", r.ClientID, err)
		}
		gen = uint64(g)
		return nil
	})
	return gen, err
}

// Seen records when the runner was last heard from, never moving it back
// (runnerhub.Store).
func (s *Store) Seen(ctx context.Context, clientID string, at time.Time) error {
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE projects.runners SET last_seen = greatest(last_seen, $1) WHERE client_id = $2`, at.UnixNano(), clientID); err != nil {
			return fmt.Errorf("runners: touch %s: %w", clientID, err)
		}
		return nil
	})
}

// Runners returns every runner ever connected, ordered by client id
// (runnerhub.Store).
func (s *Store) Runners(ctx context.Context) ([]runnerhub.Record, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT client_id, owner, generation, instance_id, hello, connected_at, last_seen
		FROM projects.runners ORDER BY client_id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("runners: list: %w", err)
	}
	defer rows.Close()
	out := []runnerhub.Record{}
	for rows.Next() {
		var r runnerhub.Record
		var hello string
		var gen, connected, seen int64
		if err := rows.Scan(&r.ClientID, &r.Owner, &gen, &r.InstanceID, &hello, &connected, &seen); err != nil {
			return nil, fmt.Errorf("runners: list: %w", err)
		}
		if err := json.Unmarshal([]byte(hello), &r.Hello); err != nil {
			return nil, fmt.Errorf("runners: decode the hello of %s: %w", r.ClientID, err)
		}
		r.Generation = uint64(gen)
		r.ConnectedAt, r.LastSeen = time.Unix(0, connected).UTC(), time.Unix(0, seen).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
