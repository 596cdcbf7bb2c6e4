package workflowpg

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// observationKeyName names the observation token key in server_keys, as in
// workflow.db; the board also derives the assignment fence keys from it
// (decision 0057).
const observationKeyName = "observation_token"

// loadObservationKey returns the database's observation token key. The
// first replica to open the database creates it (crypto/rand); the
// INSERT … ON CONFLICT DO NOTHING and the SELECT after it, in one
// transaction, give every replica the key that was stored first, so a
// token or fence one replica issued is valid on every other one and
// across restarts, for as long as the database lives.
func loadObservationKey(ctx context.Context, db *pgdb.DB) ([]byte, error) {
	fresh := make([]byte, workflow.ObservationKeyBytes)
	rand.Read(fresh)
	var key []byte
	err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO workflow.server_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
			observationKeyName, fresh); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT key FROM workflow.server_keys WHERE name = $1`, observationKeyName).Scan(&key)
	})
	if err != nil {
		return nil, fmt.Errorf("workflowpg: observation token key: %w", boardErr(err))
	}
	if len(key) != workflow.ObservationKeyBytes {
		return nil, fmt.Errorf("workflowpg: observation token key is %d bytes, want %d", len(key), workflow.ObservationKeyBytes)
	}
	return key, nil
}
