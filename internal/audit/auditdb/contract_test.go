package auditdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/audit/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		st, err := auditdb.Open(context.Background(), filepath.Join(t.TempDir(), auditdb.FileName))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return storetest.Backend{Store: st, Raw: raw{st}, Close: func() { st.Close() }}
	})
}

// raw reads audit.db's rows for the contract suite.
type raw struct{ st *auditdb.Store }

func (r raw) EventIDs(ctx context.Context, session string) ([]string, error) {
	return r.strings(ctx, `SELECT event_id FROM action_events WHERE session_id = ? ORDER BY seq`, session)
}

func (r raw) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := r.st.DB().Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (r raw) Sessions(ctx context.Context) (map[string][2]string, error) {
	rows, err := r.st.DB().Read.QueryContext(ctx, `SELECT session_id, principal, COALESCE(requested_id, '') FROM action_sessions`)
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
	err := r.st.DB().Read.QueryRowContext(ctx, `SELECT principal_kind, principal_user_id, oauth_client_id FROM action_events
		WHERE event_id = ?`, eventID).Scan(&a[0], &a[1], &a[2])
	return a, err
}

func (r raw) Retained(ctx context.Context, session string) (int64, error) {
	var n int64
	err := r.st.DB().Read.QueryRowContext(ctx, `SELECT retained_events FROM action_sessions WHERE session_id = ?`, session).Scan(&n)
	return n, err
}

func (r raw) InsertLegacySession(ctx context.Context, id string, at int64) error {
	return r.st.DB().Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO action_sessions (session_id, status, created_at, updated_at) VALUES (?, 'open', ?, ?)`, id, at, at)
		return err
	})
}

func (r raw) Dump(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, table := range []string{"action_sessions", "action_events", "window_session_relations"} {
		rows, err := r.st.DB().Read.QueryContext(ctx, `SELECT * FROM `+table)
		if err != nil {
			return "", err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return "", err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			for _, v := range vals {
				if s, ok := v.([]byte); ok {
					v = string(s)
				}
				fmt.Fprintf(&b, "%v\t", v)
			}
			b.WriteString("\n")
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}
