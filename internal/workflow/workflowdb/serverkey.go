package workflowdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"

	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// observationKeyName names the observation token key in server_keys; the
// board also derives the assignment fence keys from it (decision 0057).
const observationKeyName = "observation_token"

// loadObservationKey returns the ledger's observation token key, creating
// it (crypto/rand) on the first Open of this file. The key lives in the
// ledger it authenticates cursors of, so a token stays valid across a
// restart, for every process serving this file, and for as long as the
// file does; a ledger rebuilt from an export gets a new key (its boards a
// new generation anyway). Creation commits lazily: any token is issued
// for a session whose creation commits durably after it, and that fsync
// covers this earlier write.
func loadObservationKey(ctx context.Context, db *sqlitedb.DB) ([]byte, error) {
	read := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) ([]byte, error) {
		var key []byte
		err := q.QueryRowContext(ctx, `SELECT key FROM server_keys WHERE name = ?`, observationKeyName).Scan(&key)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return key, err
	}
	key, err := read(db.Read)
	if err == nil && key == nil {
		fresh := make([]byte, workflow.ObservationKeyBytes)
		rand.Read(fresh)
		err = db.Writer.DoLazy(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO server_keys (name, key) VALUES (?, ?)`, observationKeyName, fresh); err != nil {
				return err
			}
			// Another process may have created it first: use its key.
			key, err = read(tx)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("workflowdb: observation token key: %w", err)
	}
	if len(key) != workflow.ObservationKeyBytes {
		return nil, fmt.Errorf("workflowdb: observation token key is %d bytes, want %d", len(key), workflow.ObservationKeyBytes)
	}
	return key, nil
}

// ObservationKey implements workflow.BoardStore.
func (s *Store) ObservationKey() []byte { return s.obsKey }
