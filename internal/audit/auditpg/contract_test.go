package auditpg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/audit/storetest"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		db := pgtest.Open(t)
		st, err := auditpg.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Backend{Store: st, Raw: raw{db}, Close: db.Close}
	})
}

// raw reads the audit schema's rows for the contract suite.
type raw struct{ db *pgdb.DB }

func (r raw) EventIDs(ctx context.Context, session string) ([]string, error) {
	rows, err := r.db.Pool.Query(ctx, `SELECT event_id FROM audit.action_events WHERE session_id = $1 ORDER BY seq`, session)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if len(ids) == 0 {
		ids = nil
	}
	return ids, err
}

func (r raw) Sessions(ctx context.Context) (map[string][2]string, error) {
	rows, err := r.db.Pool.Query(ctx, `SELECT session_id, principal, coalesce(requested_id, '') FROM audit.action_sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var id, p, req string
		if err := rows.Scan(&id, &p, &req); err != nil {
			return nil, err
		}
		out[id] = [2]string{p, req}
	}
	return out, rows.Err()
}

func (r raw) Attribution(ctx context.Context, eventID string) ([3]*string, error) {
	var a [3]*string
	err := r.db.Pool.QueryRow(ctx, `SELECT principal_kind, principal_user_id, oauth_client_id FROM audit.action_events
		WHERE event_id = $1`, eventID).Scan(&a[0], &a[1], &a[2])
	return a, err
}

func (r raw) Retained(ctx context.Context, session string) (int64, error) {
	var n int64
	err := r.db.Pool.QueryRow(ctx, `SELECT retained_events FROM audit.action_sessions WHERE session_id = $1`, session).Scan(&n)
	return n, err
}

func (r raw) InsertLegacySession(ctx context.Context, id string, at int64) error {
	_, err := r.db.Pool.Exec(ctx, `INSERT INTO audit.action_sessions (session_id, status, created_at, updated_at) VALUES ($1, 'open', $2, $2)`, id, at)
	return err
}

func (r raw) Dump(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, table := range []string{"action_sessions", "action_events", "window_session_relations"} {
		rows, err := r.db.Pool.Query(ctx, `SELECT t::text FROM audit.`+table+` t`)
		if err != nil {
			return "", err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", err
		}
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return b.String(), nil
}

// BenchmarkAppendBatch is the contract's append benchmark on PostgreSQL.
func BenchmarkAppendBatch(b *testing.B) {
	storetest.BenchmarkAppendBatch(b, func(b *testing.B) audit.Store {
		st, err := auditpg.Open(context.Background(), pgtest.Open(b))
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}
