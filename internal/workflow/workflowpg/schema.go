// Package workflowpg implements the Workflow Session ledger ([workflow.Store],
// [workflow.BoardStore], [workflow.SnapshotReader]) on PostgreSQL, in the
// schema "workflow", beside workflow/workflowdb's SQLite store: same
// contracts, same rows. Several replicas may serve one database at once;
// every fact the SQLite store's single writer decided is decided here by a
// row lock held to commit (see the comments of each lock).
package workflowpg

import (
	"context"
	"embed"

	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the ledger's PostgreSQL schema. It shares nothing with the
// Action Audit or evidence schemas.
const Schema = "workflow"

// Migrate brings the ledger's schema in db up to this version
// (pgdb.DB.Migrate: a database at a newer version is refused with
// failure.Conflict) without opening the ledger.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
