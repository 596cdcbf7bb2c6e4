package projectdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/runnerhub"
)

// NextGeneration durably stores r with a generation one above the runner's
// last (1 for a new runner) and returns it (runnerhub.Store).
func (s *Store) NextGeneration(ctx context.Context, r runnerhub.Record) (uint64, error) {
	hello, err := json.Marshal(r.Hello)
	if err != nil {
		return 0, fmt.Errorf("runners: encode the hello: %w", err)
	}
	var gen uint64
	err = s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var last uint64
		err := tx.QueryRowContext(ctx, `SELECT generation FROM runners WHERE client_id = ?`, r.ClientID).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("runners: read %s: %w", r.ClientID, err)
		}
		gen = last + 1
		_, err = tx.ExecContext(ctx, `INSERT INTO runners (client_id, owner, generation, instance_id, hello, connected_at, last_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET owner = excluded.owner, generation = excluded.generation,
			instance_id = excluded.instance_id, hello = excluded.hello, connected_at = excluded.connected_at, last_seen = excluded.last_seen`,
			r.ClientID, r.Owner, gen, r.InstanceID, string(hello), r.ConnectedAt.UnixNano(), r.LastSeen.UnixNano())
		if err != nil {
			return fmt.Errorf("runners: store %s: %w", r.ClientID, err)
		}
		return nil
	})
	return gen, err
}

// Seen records when the runner was last heard from (runnerhub.Store).
func (s *Store) Seen(ctx context.Context, clientID string, at time.Time) error {
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE runners SET last_seen = max(last_seen, ?) WHERE client_id = ?`, at.UnixNano(), clientID); err != nil {
			return fmt.Errorf("runners: touch %s: %w", clientID, err)
		}
		return nil
	})
}

// Runners returns every runner ever connected, ordered by client id
// (runnerhub.Store).
func (s *Store) Runners(ctx context.Context) ([]runnerhub.Record, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT client_id, owner, generation, instance_id, hello, connected_at, last_seen FROM runners ORDER BY client_id`)
	if err != nil {
		return nil, fmt.Errorf("runners: list: %w", err)
	}
	defer rows.Close()
	out := []runnerhub.Record{}
	for rows.Next() {
		var r runnerhub.Record
		var hello string
		var connected, seen int64
		if err := rows.Scan(&r.ClientID, &r.Owner, &r.Generation, &r.InstanceID, &hello, &connected, &seen); err != nil {
			return nil, fmt.Errorf("runners: list: %w", err)
		}
		if err := json.Unmarshal([]byte(hello), &r.Hello); err != nil {
			return nil, fmt.Errorf("runners: decode the hello of %s: %w", r.ClientID, err)
		}
		r.ConnectedAt, r.LastSeen = time.Unix(0, connected).UTC(), time.Unix(0, seen).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
