// Package oauthpg is the PostgreSQL implementation of [authserver.Store]
// (issue 27): the built-in authorization server's clients, grants and
// hashed secrets in the schema oauth of a shared database, with the same
// contract as the SQLite store (oauthdb), tested by the same suite
// (authserver/storetest).
//
// Every mutation is one READ COMMITTED transaction (pgdb.DB.Tx) and
// returns only after it committed. Where SQLite's single writer
// serialises a read and the write that depends on it, this store locks
// the row it read: Redeem spends a secret by a conditional UPDATE, so of
// concurrent redemptions of one secret exactly one succeeds and the others
// are replays; CreateGrant holds its client FOR SHARE, so a concurrent
// RevokeClient either sees the new grant or makes CreateGrant refuse;
// Sweep locks what it deletes before re-checking it.
//
// Find reads the database every time: unlike oauthdb there is no read
// cache in this increment (a revocation from another replica must be seen
// at once; a cache needs a change signal first).
package oauthpg

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// Schema is the PostgreSQL schema that holds the store's tables.
const Schema = "oauth"

//go:embed migrations/*.sql
var migrations embed.FS

// Store is an authserver.Store in the schema oauth of a PostgreSQL
// database.
type Store struct {
	db *pgdb.DB
}

var _ authserver.Store = (*Store)(nil)

// Open migrates the schema oauth of db to this binary's newest version and
// returns a store on it. The store uses db's pool and has no Close: the
// caller owns db and closes it after the last use of the store.
//
// Errors: failure.Conflict when the database's oauth schema is at a newer
// version than this binary knows (pgdb.DB.Migrate); the database's error
// otherwise.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

const clientColumns = `id, name, enrolment, redirect_uris, auth_method, secret_hash, created_at, revoked_at, fetched_at, fresh_until`

// PutClient implements authserver.Store: one INSERT … ON CONFLICT DO
// UPDATE, which either inserts or updates even when two replicas enrol the
// same client at once; an update that its WHERE refuses (the client is
// revoked) returns no row.
func (s *Store) PutClient(ctx context.Context, c authserver.Client) error {
	if c.ID == "" {
		return failure.New(failure.InvalidArguments, "a client needs an id")
	}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("oauth clients: encode redirect uris: %w", err)
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `INSERT INTO oauth.clients (`+clientColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9)
			ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris,
				auth_method = EXCLUDED.auth_method, secret_hash = EXCLUDED.secret_hash,
				fetched_at = EXCLUDED.fetched_at, fresh_until = EXCLUDED.fresh_until
			WHERE oauth.clients.revoked_at IS NULL
			RETURNING 1`,
			c.ID, c.Name, string(c.Enrolment), string(uris), c.AuthMethod, c.SecretHash, c.CreatedAt.UnixNano(),
			cacheNanos(c.FetchedAt), cacheNanos(c.FreshUntil)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.Conflict, "client %q is revoked", c.ID)
		}
		if err != nil {
			return fmt.Errorf("oauth clients: put %q: %w", c.ID, err)
		}
		return nil
	})
}

// Client implements authserver.Store.
func (s *Store) Client(ctx context.Context, id string) (authserver.Client, error) {
	c, err := scanClient(s.db.Pool.QueryRow(ctx, `SELECT `+clientColumns+` FROM oauth.clients WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return authserver.Client{}, failure.New(failure.NotFound, "client %q is not registered", id)
	}
	if err != nil {
		return authserver.Client{}, fmt.Errorf("oauth clients: find: %w", err)
	}
	return c, nil
}

// Clients implements authserver.Store.
func (s *Store) Clients(ctx context.Context) ([]authserver.Client, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+clientColumns+` FROM oauth.clients ORDER BY created_at, id`)
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
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE oauth.clients SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth clients: revoke %q: %w", id, err)
		}
		// The client's row is locked now: a CreateGrant holding it FOR
		// SHARE has committed (its grant is seen below) or waits and then
		// sees the client revoked.
		if _, err := tx.Exec(ctx, `UPDATE oauth.grants SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth clients: revoke %q's grants: %w", id, err)
		}
		var err error
		c, err = scanClient(tx.QueryRow(ctx, `SELECT `+clientColumns+` FROM oauth.clients WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.NotFound, "client %q is not registered", id)
		}
		if err != nil {
			return fmt.Errorf("oauth clients: revoke %q: %w", id, err)
		}
		return nil
	})
	return c, err
}

// CreateGrant implements authserver.Store. It reads the client FOR SHARE,
// so that the client cannot be revoked or swept before the grant commits.
func (s *Store) CreateGrant(ctx context.Context, g authserver.Grant, code authserver.Secret) error {
	scopes, err := json.Marshal(g.Scopes)
	if err != nil {
		return fmt.Errorf("oauth grants: encode scopes: %w", err)
	}
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var revoked *int64
		err := tx.QueryRow(ctx, `SELECT revoked_at FROM oauth.clients WHERE id = $1 FOR SHARE`, g.ClientID).Scan(&revoked)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && revoked != nil {
			return failure.New(failure.NotFound, "client %q is not registered or is revoked", g.ClientID)
		}
		if err != nil {
			return fmt.Errorf("oauth grants: find client: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO oauth.grants (id, client_id, owner, subject, scopes, resource, project, created_at, expires_at, revoked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL)`,
			g.ID, g.ClientID, g.Owner, g.Subject, string(scopes), g.Resource, g.Project, g.CreatedAt.UnixNano(), g.ExpiresAt.UnixNano()); err != nil {
			return fmt.Errorf("oauth grants: insert: %w", err)
		}
		return insertSecrets(ctx, tx, []authserver.Secret{code})
	})
}

func insertSecrets(ctx context.Context, tx pgx.Tx, secs []authserver.Secret) error {
	for _, x := range secs {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth.secrets (hash, kind, grant_id, created_at, expires_at, used_at, challenge, redirect_uri)
			VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)`,
			x.Hash, string(x.Kind), x.GrantID, x.CreatedAt.UnixNano(), x.ExpiresAt.UnixNano(), x.Challenge, x.RedirectURI); err != nil {
			return fmt.Errorf("oauth secrets: insert: %w", err)
		}
	}
	return nil
}

// Find implements authserver.Store; every call reads the database.
func (s *Store) Find(ctx context.Context, hash string) (authserver.Secret, authserver.Grant, error) {
	var (
		sec            authserver.Secret
		g              authserver.Grant
		kind, scopes   string
		sc, se, gc, ge int64
		used, revoked  *int64
	)
	err := s.db.Pool.QueryRow(ctx, `SELECT s.hash, s.kind, s.grant_id, s.created_at, s.expires_at, s.used_at, s.challenge, s.redirect_uri,
		g.client_id, g.owner, g.subject, g.scopes, g.resource, g.project, g.created_at, g.expires_at, g.revoked_at
		FROM oauth.secrets s JOIN oauth.grants g ON g.id = s.grant_id WHERE s.hash = $1`, hash).
		Scan(&sec.Hash, &kind, &sec.GrantID, &sc, &se, &used, &sec.Challenge, &sec.RedirectURI,
			&g.ClientID, &g.Owner, &g.Subject, &scopes, &g.Resource, &g.Project, &gc, &ge, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return authserver.Secret{}, authserver.Grant{}, failure.New(failure.NotFound, "no secret has this hash")
	}
	if err != nil {
		return authserver.Secret{}, authserver.Grant{}, fmt.Errorf("oauth secrets: find: %w", err)
	}
	if err := json.Unmarshal([]byte(scopes), &g.Scopes); err != nil {
		return authserver.Secret{}, authserver.Grant{}, fmt.Errorf("oauth grant %s: decode scopes: %w", sec.GrantID, err)
	}
	sec.Kind, g.ID = authserver.SecretKind(kind), sec.GrantID
	sec.CreatedAt, sec.ExpiresAt, sec.UsedAt = unix(sc), unix(se), timePtr(used)
	g.CreatedAt, g.ExpiresAt, g.RevokedAt = unix(gc), unix(ge), timePtr(revoked)
	return sec, g, nil
}

// Redeem implements authserver.Store. The secret is spent by one
// conditional UPDATE (… WHERE used_at IS NULL): a concurrent Redeem of the
// same secret waits for this one's row lock and then finds the secret
// used, so exactly one of them succeeds and the others revoke the grant as
// a replay.
func (s *Store) Redeem(ctx context.Context, hash string, at time.Time, issue []authserver.Secret) error {
	var replay bool
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		replay = false
		var grant string
		err := tx.QueryRow(ctx, `UPDATE oauth.secrets SET used_at = $1 WHERE hash = $2 AND used_at IS NULL RETURNING grant_id`,
			at.UnixNano(), hash).Scan(&grant)
		if err == nil {
			return insertSecrets(ctx, tx, issue)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("oauth secrets: redeem: %w", err)
		}
		// No unused secret has the hash: a spent one, or none at all.
		err = tx.QueryRow(ctx, `SELECT grant_id FROM oauth.secrets WHERE hash = $1`, hash).Scan(&grant)
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.NotFound, "no secret has this hash")
		}
		if err != nil {
			return fmt.Errorf("oauth secrets: redeem: %w", err)
		}
		// Committed, not rolled back: the revocation is the point.
		replay = true
		if _, err := tx.Exec(ctx, `UPDATE oauth.grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, at.UnixNano(), grant); err != nil {
			return fmt.Errorf("oauth secrets: revoke a replayed secret's grant: %w", err)
		}
		return nil
	})
	if err == nil && replay {
		return failure.New(failure.Conflict, "the secret was already used; its grant is revoked")
	}
	return err
}

// RevokeGrant implements authserver.Store.
func (s *Store) RevokeGrant(ctx context.Context, id string, at time.Time) error {
	return s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM oauth.grants WHERE id = $1`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return failure.New(failure.NotFound, "grant %q does not exist", id)
		}
		if err != nil {
			return fmt.Errorf("oauth grants: revoke: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE oauth.grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, at.UnixNano(), id); err != nil {
			return fmt.Errorf("oauth grants: revoke: %w", err)
		}
		return nil
	})
}

// Sweep implements authserver.Store. It first locks the grants it will
// delete (no secret can then be issued into them before it commits), and
// the unused clients it will delete, skipping any a concurrent
// CreateGrant holds; it then re-checks each client with a fresh snapshot,
// so a grant committed in between keeps its client.
func (s *Store) Sweep(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		n = 0
		ended, err := ids(ctx, tx, `SELECT id FROM oauth.grants WHERE revoked_at < $1 OR expires_at < $1 FOR UPDATE`, t.UnixNano())
		if err != nil {
			return err
		}
		unused, err := ids(ctx, tx, `SELECT c.id FROM oauth.clients c WHERE c.revoked_at IS NULL AND c.created_at < $1
			AND NOT EXISTS (SELECT 1 FROM oauth.grants g WHERE g.client_id = c.id AND g.id <> ALL($2))
			FOR UPDATE OF c SKIP LOCKED`, t.Add(-authserver.UnusedClientTTL).UnixNano(), ended)
		if err != nil {
			return err
		}
		for _, d := range []struct {
			q    string
			args []any
		}{
			{`DELETE FROM oauth.secrets WHERE (expires_at < $1 AND used_at IS NULL) OR grant_id = ANY($2)`, []any{t.UnixNano(), ended}},
			{`DELETE FROM oauth.grants WHERE id = ANY($1)`, []any{ended}},
			{`DELETE FROM oauth.clients c WHERE c.id = ANY($1)
				AND NOT EXISTS (SELECT 1 FROM oauth.grants g WHERE g.client_id = c.id)`, []any{unused}},
		} {
			r, err := tx.Exec(ctx, d.q, d.args...)
			if err != nil {
				return fmt.Errorf("oauth: sweep: %w", err)
			}
			n += r.RowsAffected()
		}
		return nil
	})
	return n, err
}

// ids runs a query of one text column and returns its values.
func ids(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("oauth: sweep: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("oauth: sweep: %w", err)
	}
	return out, nil
}

func scanClient(row pgx.Row) (authserver.Client, error) {
	var (
		c                       authserver.Client
		enrolment, uris         string
		created, fetched, fresh int64
		revoked                 *int64
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
// (a DCR client's), whose UnixNano is undefined, as oauthdb does.
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

func timePtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := unix(*n)
	return &t
}

// Migrate brings the store's schema in db up to this version (a newer one
// is refused, as Open refuses it) without opening the store: `webcodex
// migrate` creates every schema before it copies rows into them.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}
