// Package jobspg implements [jobs.Store] on PostgreSQL (schema jobs,
// decision 0071). A record is kept as its JSON document beside the few
// columns that are queried, as in jobs.db. Every mutation is one READ
// COMMITTED transaction, durable when the method returns.
package jobspg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgnotify"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "jobs"

// Channel is the notification channel of job state changes: Update sends
// the job's id on it in the transaction that changes its state, so that
// waits on other replicas wake (jobs.Options.Changes).
const Channel = "jobs_state"

// Store is the PostgreSQL job store.
type Store struct{ db *pgdb.DB }

var _ jobs.Store = (*Store)(nil)

// Open migrates the schema jobs of db and returns its store; the pool stays
// the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

const unfinished = `('queued','running')`

func storeErr(err error) error { return pgdb.StoreError(err, "job store") }

// Create implements jobs.Store.
func (s *Store) Create(ctx context.Context, j jobs.Job) error {
	doc, err := j.Record()
	if err != nil {
		return err
	}
	return storeErr(s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO jobs.jobs (job_id, project, owner_fp, state, background, created_at, record_json) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			j.ID, j.Project, j.Principal, string(j.State), j.Background, j.CreatedAt.UnixNano(), doc)
		if pgdb.IsUniqueViolation(err) {
			return failure.New(failure.Conflict, "job %s already exists", j.ID)
		}
		return err
	}))
}

func scanOne(row pgx.Row, id string) (jobs.Job, error) {
	var doc string
	err := row.Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobs.Job{}, failure.New(failure.JobNotFound, "no job %s exists", id)
	}
	if err != nil {
		return jobs.Job{}, err
	}
	return jobs.ParseRecord(doc)
}

// Get implements jobs.Store.
func (s *Store) Get(ctx context.Context, id string) (jobs.Job, error) {
	j, err := scanOne(s.db.Pool.QueryRow(ctx, `SELECT record_json FROM jobs.jobs WHERE job_id = $1`, id), id)
	return j, storeErr(err)
}

// Update implements jobs.Store: the row is locked while fn judges it, so
// of two replicas' racing terminal writes the second sees the first. A
// change of state notifies Channel with the job's id in the same
// transaction.
func (s *Store) Update(ctx context.Context, id string, fn jobs.UpdateFunc) (jobs.Job, error) {
	var out jobs.Job
	var fnErr error
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		fnErr = nil
		j, err := scanOne(tx.QueryRow(ctx, `SELECT record_json FROM jobs.jobs WHERE job_id = $1 FOR UPDATE`, id), id)
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
		if _, err := tx.Exec(ctx, `UPDATE jobs.jobs SET state = $1, background = $2, record_json = $3 WHERE job_id = $4`,
			string(j.State), j.Background, doc, id); err != nil {
			return err
		}
		if j.State != out.State {
			if err := pgnotify.Send(ctx, tx, Channel, id); err != nil {
				return err
			}
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
	rows, err := s.db.Pool.Query(ctx, q, args...)
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
	var where []string
	var args []any
	if !f.AllOwners {
		where, args = []string{"project = $1", "owner_fp = $2"}, []any{f.Project, f.Fingerprint}
	}
	if f.BackgroundOnly {
		where = append(where, "background")
	}
	if f.Active {
		where = append(where, "state IN "+unfinished)
	}
	cond := "true"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	var total int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM jobs.jobs WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, storeErr(err)
	}
	limit := "ALL"
	if f.Limit > 0 {
		limit = strconv.Itoa(f.Limit)
	}
	out, err := s.query(ctx, `SELECT record_json FROM jobs.jobs WHERE `+cond+` ORDER BY created_at DESC, job_id COLLATE "C" DESC LIMIT `+limit, args...)
	return out, total, err
}

// Unfinished implements jobs.Store.
func (s *Store) Unfinished(ctx context.Context) ([]jobs.Job, error) {
	return s.query(ctx, `SELECT record_json FROM jobs.jobs WHERE state IN `+unfinished+` ORDER BY created_at`)
}

// OutputExpired implements jobs.Store. It walks index jobs_output_kept
// (migration 0002) from the cursor.
func (s *Store) OutputExpired(ctx context.Context, cutoff time.Time, after jobs.OutputCursor, limit int) ([]jobs.Job, error) {
	at := int64(math.MinInt64)
	if !after.CreatedAt.IsZero() {
		at = after.CreatedAt.UnixNano()
	}
	return s.query(ctx, qOutputExpired, cutoff.UnixNano(), at, after.ID, limit)
}

// qOutputExpired reads the terminal jobs whose output is kept, created
// before a cutoff, after a cursor, in the order of jobs_output_kept.
const qOutputExpired = `SELECT record_json FROM jobs.jobs WHERE (record_json::jsonb->>'output_purged') IS NULL
	AND created_at < $1 AND created_at >= $2 AND (created_at > $2 OR job_id COLLATE "C" > $3) AND state NOT IN ` + unfinished + `
	ORDER BY created_at, job_id COLLATE "C" LIMIT $4`

// Prune implements jobs.Store.
func (s *Store) Prune(ctx context.Context, keep int) ([]string, error) {
	var ids []string
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		ids = ids[:0]
		for _, bg := range []bool{true, false} {
			rows, err := tx.Query(ctx, `SELECT job_id FROM jobs.jobs WHERE background = $1 AND state NOT IN `+unfinished+
				` ORDER BY created_at DESC, job_id COLLATE "C" DESC OFFSET $2`, bg, max(keep, 0))
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			ids = append(ids, got...)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM jobs.jobs WHERE job_id = ANY($1)`, ids); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return ids, nil
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
