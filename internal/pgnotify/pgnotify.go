// Package pgnotify wakes waiters across replicas through PostgreSQL
// LISTEN/NOTIFY (issue 27 §3, decision 0072). It is infrastructure beside
// internal/pgdb and knows no domain: a channel is a name, a key is an
// opaque id (a session id, a job id).
//
// A writer calls [Send] inside its write transaction, so the notification
// is delivered at commit and never for a rolled-back change. Each process
// runs one [Listener]: one connection taken from the pool and hijacked (it
// never returns to the pool, so its LISTENs never leak into another
// query), LISTENing on every channel a [Topic] was made for. A
// notification on channel C with payload K wakes the subscribers of
// (C, K); an empty payload wakes every subscriber of C.
//
// A wake is only a signal: a waiter re-reads the durable revision after
// every wake, so a spurious wake costs one read and a missed one is seen
// when the wait ends. The listener therefore wakes every subscriber
// whenever it may have missed something: when its connection drops, every
// PollInterval while it is disconnected (or while the pooler probe found
// that notifications do not arrive), and once after each (re)connect, after
// its LISTENs are in place.
package pgnotify

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of a notification.
const (
	// MaxKeyBytes bounds a notification's payload (a key), well under
	// PostgreSQL's 8000-byte limit: a key is an id, never data.
	MaxKeyBytes = 512
	// MaxChannelBytes bounds a channel name: PostgreSQL truncates an
	// identifier longer than 63 bytes, so LISTEN would not match.
	MaxChannelBytes = 63
)

// Send queues a notification of key on channel in tx, delivered to every
// listener (this process's too) when tx commits and never if it rolls back.
// An empty key wakes every subscriber of channel.
//
// Errors: failure.InvalidArguments, with nothing sent, for a channel that
// is empty, longer than MaxChannelBytes or not valid UTF-8, or a key longer
// than MaxKeyBytes or not valid UTF-8 without NUL; tx's error otherwise.
func Send(ctx context.Context, tx pgx.Tx, channel, key string) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if len(key) > MaxKeyBytes {
		return failure.New(failure.InvalidArguments, "pgnotify: a key of %d bytes on channel %q is longer than %d bytes: a notification carries an id, never data", len(key), channel, MaxKeyBytes)
	}
	if !validText(key) {
		return failure.New(failure.InvalidArguments, "pgnotify: a key on channel %q is not valid UTF-8 text", channel)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, key); err != nil {
		return fmt.Errorf("pgnotify: notify %s: %w", channel, err)
	}
	return nil
}

func checkChannel(channel string) error {
	if channel == "" || len(channel) > MaxChannelBytes || !validText(channel) {
		return failure.New(failure.InvalidArguments, "pgnotify: channel %q must be 1-%d bytes of UTF-8 text", channel, MaxChannelBytes)
	}
	return nil
}

// validText reports whether s can be a PostgreSQL text value.
func validText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := range len(s) {
		if s[i] == 0 {
			return false
		}
	}
	return true
}
