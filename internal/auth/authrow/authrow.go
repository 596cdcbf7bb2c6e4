// Package authrow is the stored form of a credential record, one row of
// the tokens table, shared by the SQLite store (authdb) and the PostgreSQL
// store (authpg) so that both keep exactly the same values: scopes and the
// tool profile as JSON text, times as Unix nanoseconds (UTC), NULL for an
// unset time and for no project.
package authrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
)

// Columns are the tokens table's record columns (every column but the
// token hash), in the order of Token.Args and Token.Dest.
const Columns = `id, name, owner, scopes, created_at, revoked_at, last_used_at, tools, runner, kind, project, expires_at`

// A Token is a credential record as stored.
type Token struct {
	ID, Name, Owner string
	// Scopes is a JSON array of scope strings.
	Scopes    string
	CreatedAt int64
	// RevokedAt, LastUsedAt and ExpiresAt are nil when unset.
	RevokedAt, LastUsedAt *int64
	// Tools is a JSON array of tool names; [] for the server's profile.
	Tools  string
	Runner string
	Kind   string
	// Project is nil for a token that reaches every project of its owner.
	Project   *string
	ExpiresAt *int64
}

// Encode is t as stored; an empty Kind is stored as auth.KindAPIToken.
func Encode(t auth.Token) (Token, error) {
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return Token{}, fmt.Errorf("tokens: encode scopes: %w", err)
	}
	tools := []byte("[]")
	if t.Tools != nil {
		if tools, err = json.Marshal(t.Tools); err != nil {
			return Token{}, fmt.Errorf("tokens: encode tools: %w", err)
		}
	}
	r := Token{
		ID: t.ID, Name: t.Name, Owner: t.Owner, Scopes: string(scopes), CreatedAt: t.CreatedAt.UnixNano(),
		RevokedAt: nanos(t.RevokedAt), LastUsedAt: nanos(t.LastUsedAt), Tools: string(tools), Runner: t.Runner,
		Kind: string(t.Kind), ExpiresAt: nanos(t.ExpiresAt),
	}
	if r.Kind == "" {
		r.Kind = string(auth.KindAPIToken)
	}
	if t.Project != "" {
		r.Project = &t.Project
	}
	return r, nil
}

// Args are r's values in Columns order, for an INSERT: a nil pointer is
// an untyped nil (NULL), any other its value.
func (r *Token) Args() []any {
	return []any{r.ID, r.Name, r.Owner, r.Scopes, r.CreatedAt, value(r.RevokedAt), value(r.LastUsedAt), r.Tools, r.Runner, r.Kind,
		value(r.Project), value(r.ExpiresAt)}
}

func value[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Dest are pointers to r's fields in Columns order, for a Scan.
func (r *Token) Dest() []any {
	return []any{&r.ID, &r.Name, &r.Owner, &r.Scopes, &r.CreatedAt, &r.RevokedAt, &r.LastUsedAt, &r.Tools, &r.Runner, &r.Kind, &r.Project, &r.ExpiresAt}
}

// Decode is the record r stores: an empty tool profile reads back as nil,
// times in UTC.
func (r *Token) Decode() (auth.Token, error) {
	t := auth.Token{
		ID: r.ID, Name: r.Name, Owner: r.Owner, CreatedAt: time.Unix(0, r.CreatedAt).UTC(),
		RevokedAt: timePtr(r.RevokedAt), LastUsedAt: timePtr(r.LastUsedAt), Runner: r.Runner,
		Kind: auth.Kind(r.Kind), ExpiresAt: timePtr(r.ExpiresAt),
	}
	if err := json.Unmarshal([]byte(r.Tools), &t.Tools); err != nil {
		return auth.Token{}, fmt.Errorf("token %s: decode tools: %w", r.ID, err)
	}
	if len(t.Tools) == 0 {
		t.Tools = nil
	}
	if err := json.Unmarshal([]byte(r.Scopes), &t.Scopes); err != nil {
		return auth.Token{}, fmt.Errorf("token %s: decode scopes: %w", r.ID, err)
	}
	if r.Project != nil {
		t.Project = *r.Project
	}
	return t, nil
}

// Scan reads one row of Columns from row (a *sql.Row, *sql.Rows, pgx.Row
// or pgx.Rows) and decodes it. The row's own error (no rows, a database
// error) is returned unwrapped, so callers can test it.
func Scan(row interface{ Scan(...any) error }) (auth.Token, error) {
	var r Token
	if err := row.Scan(r.Dest()...); err != nil {
		return auth.Token{}, err
	}
	return r.Decode()
}

// Rows are the rows of a query for Columns: *sql.Rows or pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// All reads and decodes every row of rows (which the caller closes).
func All(rows Rows) ([]auth.Token, error) {
	out := []auth.Token{}
	for rows.Next() {
		t, err := Scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func nanos(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func timePtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := time.Unix(0, *n).UTC()
	return &t
}
