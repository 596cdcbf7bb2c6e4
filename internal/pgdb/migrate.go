package pgdb

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
)

// migrationName is the shape of a migration file: NNNN_what.sql.
var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// schemaName is the shape of a domain's schema name.
var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// Migrate brings the domain's schema up to the newest of migrations (files
// NNNN_what.sql in the directory dir of the FS, "." for its root, applied
// in order). It creates the
// schema and its version table (<schema>.schema_migrations) when absent;
// each pending migration runs in one transaction with its version row,
// under a transaction-scoped advisory lock on the schema's name, so that
// replicas starting together apply each migration once.
//
// Errors: failure.InvalidArguments for an invalid schema name or a
// migration file name that is not NNNN_what.sql, or versions that are not
// 1, 2, 3, …; failure.Conflict when the database's schema is at a version
// this binary does not know (a newer WebCodex migrated it), naming both;
// the database's error otherwise.
func (db *DB) Migrate(ctx context.Context, schema string, fsys fs.FS, dir string) error {
	if !schemaName.MatchString(schema) {
		return failure.New(failure.InvalidArguments, "pgdb: schema name %q is not lowercase letters, digits and _", schema)
	}
	migrations, err := fs.Sub(fsys, dir)
	if err != nil {
		return err
	}
	files, err := migrationFiles(migrations)
	if err != nil {
		return err
	}
	return db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('webcodex.migrate.' || $1))`, schema); err != nil {
			return fmt.Errorf("migrate %s: lock: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema); err != nil {
			return fmt.Errorf("migrate %s: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schema+`.schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("migrate %s: %w", schema, err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+schema+`.schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("migrate %s: %w", schema, err)
		}
		if current > len(files) {
			return failure.New(failure.Conflict, "database schema %s is at version %d, newer than this WebCodex knows (%d): upgrade WebCodex", schema, current, len(files))
		}
		for _, f := range files[current:] {
			body, err := fs.ReadFile(migrations, f)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migrate %s: %s: %w", schema, f, err)
			}
			v, _ := strconv.Atoi(f[:4])
			if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.schema_migrations (version, name) VALUES ($1, $2)`, v, f); err != nil {
				return fmt.Errorf("migrate %s: %s: %w", schema, f, err)
			}
		}
		return nil
	})
}

// migrationFiles lists the migrations in order. Errors:
// failure.InvalidArguments for a misnamed file or a gap in the versions.
func migrationFiles(migrations fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(migrations, ".")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if !migrationName.MatchString(e.Name()) {
			return nil, failure.New(failure.InvalidArguments, "pgdb: migration %q is not named NNNN_what.sql", e.Name())
		}
		files = append(files, e.Name())
	}
	slices.Sort(files)
	for i, f := range files {
		if v, _ := strconv.Atoi(f[:4]); v != i+1 {
			return nil, failure.New(failure.InvalidArguments, "pgdb: migration %s is not version %d", f, i+1)
		}
	}
	return files, nil
}
