// Package jobsdb implements [jobs.Store] on SQLite (jobs.db).
//
// A record is kept as its JSON document beside the few columns that are
// queried (project, owner, state, background, creation time). Every
// mutation goes through the database's group-commit writer and is durable
// (WAL, synchronous=FULL) when the method returns.
package jobsdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite job store.
type Store struct {
	db *sqlitedb.DB
}

var _ jobs.Store = (*Store)(nil)

// Open opens (creating if needed) the job store at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the database after queued writes commit.
func (s *Store) Close() error { return s.db.Close() }

const unfinished = `('queued','running')`

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func storeErr(err error) error { return sqlitedb.StoreError(err, "job store") }

// Create implements jobs.Store.
func (s *Store) Create(ctx context.Context, j jobs.Job) error {
	doc, err := j.Record()
	if err != nil {
		return err
	}
	return storeErr(s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (job_id, project, owner_fp, state, background, created_at, record_json) VALUES (?,?,?,?,?,?,?)`,
			j.ID, j.Project, j.Principal, string(j.State), b2i(j.Background), j.CreatedAt.UnixNano(), doc)
		if sqlitedb.IsConstraint(err) {
			return failure.New(failure.Conflict, "job %s already exists", j.ID)
		}
		return err
	}))
}

func scanOne(row *sql.Row, id string) (jobs.Job, error) {
	var doc string
	err := row.Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, failure.New(failure.JobNotFound, "no job %s exists", id)
	}
	if err != nil {
		return jobs.Job{}, err
	}
	return jobs.ParseRecord(doc)
}

// Get implements jobs.Store.
func (s *Store) Get(ctx context.Context, id string) (jobs.Job, error) {
	j, err := scanOne(s.db.Read.QueryRowContext(ctx, `SELECT record_json FROM jobs WHERE job_id = ?`, id), id)
	return j, storeErr(err)
}

// Update implements jobs.Store.
func (s *Store) Update(ctx context.Context, id string, fn jobs.UpdateFunc) (jobs.Job, error) {
	var out jobs.Job
	var fnErr error
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		j, err := scanOne(tx.QueryRowContext(ctx, `SELECT record_json FROM jobs WHERE job_id = ?`, id), id)
		if err != nil {
			return err
		}
		out = j
		if fnErr = fn(&j); fnErr != nil {
			return fnErr
		}
		if j.ID != id {
			return fmt.Errorf("job update changed the id of %s", id)
		}
		doc, err := j.Record()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, background = ?, record_json = ? WHERE job_id = ?`,
			string(j.State), b2i(j.Background), doc, id); err != nil {
			return err
		}
		out = j
		return nil
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return out, fnErr
	}
	if err != nil {
		return jobs.Job{}, storeErr(err)
	}
	return out, nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]jobs.Job, error) {
	rows, err := s.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, storeErr(err)
	}
	defer rows.Close()
	var out []jobs.Job
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, storeErr(err)
		}
		j, err := jobs.ParseRecord(doc)
		if err != nil {
			continue // a malformed record is never served
		}
		out = append(out, j)
	}
	return out, storeErr(rows.Err())
}

// List implements jobs.Store.
func (s *Store) List(ctx context.Context, f jobs.ListFilter) ([]jobs.Job, int, error) {
	where := []string{"project = ?", "owner_fp = ?"}
	args := []any{f.Project, f.Fingerprint}
	if f.AllOwners {
		where, args = []string{"1 = 1"}, nil
	}
	if f.BackgroundOnly {
		where = append(where, "background = 1")
	}
	if f.Active {
		where = append(where, "state IN "+unfinished)
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, storeErr(err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	out, err := s.query(ctx, `SELECT record_json FROM jobs WHERE `+cond+` ORDER BY created_at DESC, job_id DESC LIMIT ?`, append(args, limit)...)
	return out, total, err
}

// Unfinished implements jobs.Store.
func (s *Store) Unfinished(ctx context.Context) ([]jobs.Job, error) {
	return s.query(ctx, `SELECT record_json FROM jobs WHERE state IN `+unfinished+` ORDER BY created_at`)
}

// OutputExpired implements jobs.Store. It walks index jobs_output_kept
// (migration 0002) from the cursor.
func (s *Store) OutputExpired(ctx context.Context, cutoff time.Time, after jobs.OutputCursor, limit int) ([]jobs.Job, error) {
	at := int64(math.MinInt64)
	if !after.CreatedAt.IsZero() {
		at = after.CreatedAt.UnixNano()
	}
	return s.query(ctx, qOutputExpired, cutoff.UnixNano(), at, at, after.ID, limit)
}

// qOutputExpired reads the terminal jobs whose output is kept, created
// before a cutoff, after a cursor, in the order of jobs_output_kept.
const qOutputExpired = `SELECT record_json FROM jobs WHERE json_extract(record_json, '$.output_purged') IS NULL
	AND created_at < ? AND created_at >= ? AND (created_at > ? OR job_id > ?) AND state NOT IN ` + unfinished + `
	ORDER BY created_at, job_id LIMIT ?`

// Prune implements jobs.Store.
func (s *Store) Prune(ctx context.Context, keep int) ([]string, error) {
	var ids []string
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ids = ids[:0]
		for _, bg := range []int{1, 0} {
			rows, err := tx.QueryContext(ctx, `SELECT job_id FROM jobs WHERE background = ? AND state NOT IN `+unfinished+
				` ORDER BY created_at DESC, job_id DESC LIMIT -1 OFFSET ?`, bg, max(keep, 0))
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE job_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return ids, nil
}

// DB returns the store's database (its writer's statistics, a readiness
// probe).
func (s *Store) DB() *sqlitedb.DB { return s.db }
