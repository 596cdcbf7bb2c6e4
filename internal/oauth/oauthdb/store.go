// Package oauthdb is the SQLite implementation of [authserver.Store]: the
// built-in authorization server's clients, grants and hashed secrets in
// their own database file (oauth.db).
//
// Every mutation goes through the database's group-commit writer and
// returns only after its transaction has durably committed.
package oauthdb

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the conventional name of the database inside the data
// directory.
const FileName = "oauth.db"

// Store is an authserver.Store backed by one SQLite database file.
type Store struct {
	db *sqlitedb.DB
	// found keeps what Find read while oauth.db is unchanged: any commit
	// (a revocation, a redemption, a new grant) drops it, so a revoked
	// token is refused exactly as without the cache.
	found *sqlitedb.ReadCache[found]
}

type found struct {
	sec authserver.Secret
	g   authserver.Grant
}

var _ authserver.Store = (*Store)(nil)

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, found: sqlitedb.NewReadCache[found](db)}, nil
}

// Close waits for queued writes and closes the database.
func (s *Store) Close() error { return s.db.Close() }

const clientColumns = `id, name, enrolment, redirect_uris, auth_method, secret_hash, created_at, revoked_at, fetched_at, fresh_until`

// PutClient implements authserver.Store.
func (s *Store) PutClient(ctx context.Context, c authserver.Client) error {
	if c.ID == "" {
		return failure.New(failure.InvalidArguments, "a client needs an id")
	}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("oauth clients: encode redirect uris: %w", err)
	}
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var revoked sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM clients WHERE id = ?`, c.ID).Scan(&revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO clients (`+clientColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
				c.ID, c.Name, string(c.Enrolment), string(uris), c.AuthMethod, c.SecretHash, c.CreatedAt.UnixNano(),
				cacheNanos(c.FetchedAt), cacheNanos(c.FreshUntil))
		case err != nil:
		case revoked.Valid:
			return failure.New(failure.Conflict, "client %q is revoked", c.ID)
		default:
			_, err = tx.ExecContext(ctx, `UPDATE clients SET name = ?, redirect_uris = ?, auth_method = ?, secret_hash = ?,
				fetched_at = ?, fresh_until = ? WHERE id = ?`,
				c.Name, string(uris), c.AuthMethod, c.SecretHash, cacheNanos(c.FetchedAt), cacheNanos(c.FreshUntil), c.ID)
		}
		if err != nil {
			return fmt.Errorf("oauth clients: put %q: %w", c.ID, err)
		}
		return nil
	})
}

// Client implements authserver.Store.
func (s *Store) Client(ctx context.Context, id string) (authserver.Client, error) {
	c, err := scanClient(s.db.QueryRow(ctx, `SELECT `+clientColumns+` FROM clients WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return authserver.Client{}, failure.New(failure.NotFound, "client %q is not registered", id)
	}
	if err != nil {
		return authserver.Client{}, fmt.Errorf("oauth clients: find: %w", err)
	}
	return c, nil
}

// Clients implements authserver.Store.
func (s *Store) Clients(ctx context.Context) ([]authserver.Client, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+clientColumns+` FROM clients ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("oauth clients: list: %w", err)
	}
	defer rows.Close()
	out := []authserver.Client{}
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("oauth clients: list: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oauth clients: list: %w", err)
	}
	return out, nil
}

// RevokeClient implements authserver.Store.
func (s *Store) RevokeClient(ctx context.Context, id string, at time.Time) (authserver.Client, error) {
	var c authserver.Client
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE clients SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth clients: revoke %q: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth clients: revoke %q's grants: %w", id, err)
		}
		var err error
		c, err = scanClient(tx.QueryRowContext(ctx, `SELECT `+clientColumns+` FROM clients WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return failure.New(failure.NotFound, "client %q is not registered", id)
		}
		return err
	})
	return c, err
}

// CreateGrant implements authserver.Store.
func (s *Store) CreateGrant(ctx context.Context, g authserver.Grant, code authserver.Secret) error {
	scopes, err := json.Marshal(g.Scopes)
	if err != nil {
		return fmt.Errorf("oauth grants: encode scopes: %w", err)
	}
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var revoked sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM clients WHERE id = ?`, g.ClientID).Scan(&revoked)
		if errors.Is(err, sql.ErrNoRows) || err == nil && revoked.Valid {
			return failure.New(failure.NotFound, "client %q is not registered or is revoked", g.ClientID)
		}
		if err != nil {
			return fmt.Errorf("oauth grants: find client: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, client_id, owner, subject, scopes, resource, project, created_at, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
			g.ID, g.ClientID, g.Owner, g.Subject, string(scopes), g.Resource, g.Project, g.CreatedAt.UnixNano(), g.ExpiresAt.UnixNano()); err != nil {
			return fmt.Errorf("oauth grants: insert: %w", err)
		}
		return insertSecrets(ctx, tx, []authserver.Secret{code})
	})
}

func insertSecrets(ctx context.Context, tx *sql.Tx, secs []authserver.Secret) error {
	for _, x := range secs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO secrets (hash, kind, grant_id, created_at, expires_at, used_at, challenge, redirect_uri)
			VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`,
			x.Hash, string(x.Kind), x.GrantID, x.CreatedAt.UnixNano(), x.ExpiresAt.UnixNano(), x.Challenge, x.RedirectURI); err != nil {
			return fmt.Errorf("oauth secrets: insert: %w", err)
		}
	}
	return nil
}

// Find implements authserver.Store; reads are cached while the database
// is unchanged.
func (s *Store) Find(ctx context.Context, hash string) (authserver.Secret, authserver.Grant, error) {
	f, err := s.found.Get(ctx, hash, func(ctx context.Context) (found, error) { return s.find(ctx, hash) })
	if err != nil {
		return authserver.Secret{}, authserver.Grant{}, err
	}
	// The cached grant is shared: the caller gets its own slice.
	f.g.Scopes = slices.Clone(f.g.Scopes)
	return f.sec, f.g, nil
}

func (s *Store) find(ctx context.Context, hash string) (found, error) {
	var (
		f              found
		kind, scopes   string
		sc, se, gc, ge int64
		used, revoked  sql.NullInt64
	)
	err := s.db.QueryRow(ctx, `SELECT s.hash, s.kind, s.grant_id, s.created_at, s.expires_at, s.used_at, s.challenge, s.redirect_uri,
		g.client_id, g.owner, g.subject, g.scopes, g.resource, g.project, g.created_at, g.expires_at, g.revoked_at
		FROM secrets s JOIN grants g ON g.id = s.grant_id WHERE s.hash = ?`, hash).
		Scan(&f.sec.Hash, &kind, &f.sec.GrantID, &sc, &se, &used, &f.sec.Challenge, &f.sec.RedirectURI,
			&f.g.ClientID, &f.g.Owner, &f.g.Subject, &scopes, &f.g.Resource, &f.g.Project, &gc, &ge, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return found{}, failure.New(failure.NotFound, "no secret has this hash")
	}
	if err != nil {
		return found{}, fmt.Errorf("oauth secrets: find: %w", err)
	}
	if err := json.Unmarshal([]byte(scopes), &f.g.Scopes); err != nil {
		return found{}, fmt.Errorf("oauth grant %s: decode scopes: %w", f.sec.GrantID, err)
	}
	f.sec.Kind, f.g.ID = authserver.SecretKind(kind), f.sec.GrantID
	f.sec.CreatedAt, f.sec.ExpiresAt, f.sec.UsedAt = unix(sc), unix(se), timePtr(used)
	f.g.CreatedAt, f.g.ExpiresAt, f.g.RevokedAt = unix(gc), unix(ge), timePtr(revoked)
	return f, nil
}

// Redeem implements authserver.Store.
func (s *Store) Redeem(ctx context.Context, hash string, at time.Time, issue []authserver.Secret) error {
	var replay bool
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		replay = false
		var grant string
		var used sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT grant_id, used_at FROM secrets WHERE hash = ?`, hash).Scan(&grant, &used)
		if errors.Is(err, sql.ErrNoRows) {
			return failure.New(failure.NotFound, "no secret has this hash")
		}
		if err != nil {
			return fmt.Errorf("oauth secrets: redeem: %w", err)
		}
		if used.Valid {
			// Committed, not rolled back: the revocation is the point.
			replay = true
			_, err := tx.ExecContext(ctx, `UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at.UnixNano(), grant)
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE secrets SET used_at = ? WHERE hash = ?`, at.UnixNano(), hash); err != nil {
			return fmt.Errorf("oauth secrets: redeem: %w", err)
		}
		return insertSecrets(ctx, tx, issue)
	})
	if err == nil && replay {
		return failure.New(failure.Conflict, "the secret was already used; its grant is revoked")
	}
	return err
}

// RevokeGrant implements authserver.Store.
func (s *Store) RevokeGrant(ctx context.Context, id string, at time.Time) error {
	return s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM grants WHERE id = ?`, id).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
			return failure.New(failure.NotFound, "grant %q does not exist", id)
		} else if err != nil {
			return fmt.Errorf("oauth grants: revoke: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth grants: revoke: %w", err)
		}
		return nil
	})
}

// Sweep implements authserver.Store.
func (s *Store) Sweep(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		for _, q := range []string{
			`DELETE FROM secrets WHERE (expires_at < ?1 AND used_at IS NULL) OR grant_id IN
				(SELECT id FROM grants WHERE revoked_at < ?1 OR expires_at < ?1)`,
			`DELETE FROM grants WHERE revoked_at < ?1 OR expires_at < ?1`,
			`DELETE FROM clients WHERE revoked_at IS NULL AND created_at < ?2
				AND id NOT IN (SELECT client_id FROM grants)`,
		} {
			r, err := tx.ExecContext(ctx, q, t.UnixNano(), t.Add(-authserver.UnusedClientTTL).UnixNano())
			if err != nil {
				return fmt.Errorf("oauth: sweep: %w", err)
			}
			k, _ := r.RowsAffected()
			n += k
		}
		return nil
	})
	return n, err
}

func scanClient(row interface{ Scan(...any) error }) (authserver.Client, error) {
	var (
		c                       authserver.Client
		enrolment, uris         string
		created, fetched, fresh int64
		revoked                 sql.NullInt64
	)
	if err := row.Scan(&c.ID, &c.Name, &enrolment, &uris, &c.AuthMethod, &c.SecretHash, &created, &revoked, &fetched, &fresh); err != nil {
		return authserver.Client{}, err
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return authserver.Client{}, fmt.Errorf("client %q: decode redirect uris: %w", c.ID, err)
	}
	c.Enrolment = authserver.Enrolment(enrolment)
	c.CreatedAt, c.RevokedAt, c.FetchedAt, c.FreshUntil = unix(created), timePtr(revoked), cacheTime(fetched), cacheTime(fresh)
	return c, nil
}

// cacheNanos stores a client's document cache time: 0 for the zero time
// (a DCR client's), whose UnixNano is undefined.
func cacheNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// cacheTime reads a time stored by cacheNanos.
func cacheTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return unix(n)
}

func unix(n int64) time.Time { return time.Unix(0, n).UTC() }

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := unix(n.Int64)
	return &t
}
