package evidence

import (
	"context"
	"log/slog"
	"time"
)

// Checkpoint policy and query bounds.
const (
	// CheckpointEvery: an append that brings the tree size to a multiple
	// of it signs a checkpoint in the same transaction.
	CheckpointEvery = 1024
	// CheckpointInterval is how often Journal.Run signs the head when it
	// grew since the last checkpoint.
	CheckpointInterval = time.Minute
	// DefaultSessionRecords and MaxSessionRecords clamp SessionRecords'
	// limit (0 = default, above the max = the max, negative = invalid).
	DefaultSessionRecords = 50
	MaxSessionRecords     = 500
	// OriginPrefix is the default origin's prefix; the journal id follows.
	OriginPrefix = "webcodex.local/evidence/"
)

// Options configure a journal.
type Options struct {
	// Now is the clock (nil: time.Now). It stamps checkpoints; record
	// times come from the caller (the runtime).
	Now func() time.Time
	// Origin is the checkpoint origin and signing key name used when the
	// journal is created ("" = OriginPrefix + journal id). An existing
	// journal keeps its stored origin; a different non-empty Origin is an
	// error.
	Origin string
	// CheckpointEvery overrides the package constant (0 = default).
	CheckpointEvery uint64
	// CheckpointInterval overrides the package constant for Run.
	CheckpointInterval time.Duration
	// OnError receives Run's checkpoint errors (nil: dropped).
	OnError func(error)
	// Log receives notices such as a tree index rebuilt at start-up
	// (nil: slog.Default()).
	Log *slog.Logger
}

// Appender is the narrow interface the runtime's evidence sink needs.
type Appender interface {
	Append(ctx context.Context, r Record) (Entry, error)
}

// OutboxItem is one record taken from the workflow ledger's evidence
// outbox, with the outbox sequence it was stored under.
type OutboxItem struct {
	Seq    int64
	Record Record
}
