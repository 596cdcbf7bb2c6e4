// Package pgtest gives a test a fresh PostgreSQL database of its own on the
// server named by WEBCODEX_TEST_DATABASE_URL (scripts/pgcluster.sh starts a
// throwaway one; .ci/run does). Without that variable the test skips with
// a message saying how to run it, unless WEBCODEX_REQUIRE_POSTGRES=1
// (.ci/run), when it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgnotify"
)

// Environment variables.
const (
	// EnvURL names a PostgreSQL server (a postgres:// URL of a role that may
	// create databases) on which each test creates its own database.
	EnvURL = "WEBCODEX_TEST_DATABASE_URL"
	// EnvRequire, set to 1, turns a missing EnvURL into a failure.
	EnvRequire = "WEBCODEX_REQUIRE_POSTGRES"
)

// adminTimeout bounds creating and dropping a test's database.
const adminTimeout = 30 * time.Second

// URL returns the URL of a new, empty database for t, dropped (with any
// connection still open to it) when t ends.
func URL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("PostgreSQL is required (%s=1) but %s is not set", EnvRequire, EnvURL)
		}
		t.Skipf("no PostgreSQL: run `eval \"$(scripts/pgcluster.sh start)\"` (Debian's postgresql) to set %s, then run the tests again", EnvURL)
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", EnvURL)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := "wc_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgdb.Redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Open returns a pool on a new, empty database for t (URL), closed when t
// ends.
func Open(t testing.TB) *pgdb.DB {
	t.Helper()
	db, err := pgdb.Open(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// Replicas returns two pools on one new, empty database for t, as two
// replicas of a server hold; both are closed when t ends.
func Replicas(t testing.TB) (*pgdb.DB, *pgdb.DB) {
	t.Helper()
	db := Open(t)
	second, err := pgdb.Open(context.Background(), db.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	return db, second
}

// Topic starts a notification listener on db, closed when t ends, and
// returns the topic of channel once its LISTEN is in place, as a replica's
// wake-up path holds it.
func Topic(t testing.TB, db *pgdb.DB, channel string) *pgnotify.Topic {
	t.Helper()
	ctx := context.Background()
	l := pgnotify.Start(ctx, db, slog.New(slog.DiscardHandler))
	t.Cleanup(l.Close)
	topic := l.Topic(channel)
	if err := l.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return topic
}

// AwaitLockWait returns once a backend of db's database waits for a lock
// (pg_stat_activity), the proof that a lock a test holds makes the other
// side wait; it fails the test if done reports first (what, the other
// side, finished without waiting).
func AwaitLockWait(t testing.TB, db *pgdb.DB, done <-chan error, what string) {
	t.Helper()
	for {
		var waiting int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("%s finished (%v) while the lock it needs was held", what, err)
		default:
		}
	}
}

// Plan is PostgreSQL's plan for query with args on db (EXPLAIN), its lines
// joined by "; ", with sequential scans disabled for the statement: on a
// test's small tables the planner would otherwise read the table whatever
// the indexes, so a plan that still does not name the index meant for the
// query shows that the index cannot serve it.
func Plan(t testing.TB, db *pgdb.DB, query string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
