// Package storetest is the contract suite that every [audit.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store and a view of its stored rows.
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
)

// Raw reads a store's stored rows directly, bypassing every cache, so
// that tests see what the database holds.
type Raw interface {
	// EventIDs are a session's stored event ids, oldest first.
	EventIDs(ctx context.Context, session string) ([]string, error)
	// Sessions maps every stored session's id to its principal and its
	// requested id ("" for none).
	Sessions(ctx context.Context) (map[string][2]string, error)
	// Attribution is an event's stored principal kind, user id and OAuth
	// client id, nil for NULL.
	Attribution(ctx context.Context, eventID string) ([3]*string, error)
	// Retained is a session's stored count of the events it holds.
	Retained(ctx context.Context, session string) (int64, error)
	// InsertLegacySession stores an open session without a principal, as
	// sessions made before principals were recorded are.
	InsertLegacySession(ctx context.Context, id string, at int64) error
	// Dump is every stored value of every audit table, as text.
	Dump(ctx context.Context) (string, error)
}

// Backend is one store under test.
type Backend struct {
	Store audit.Store
	Raw   Raw
	// Close closes the store and its database: every later call fails.
	Close func()
}

// Run runs the audit.Store contract against backends returned by open (a
// new, empty store each call, cleaned up by open).
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T) Backend)
	}{
		{"AffinityRules", affinityRules}, {"ConcurrentFirstRequestsCreateOneSession", concurrentFirstRequestsCreateOneSession},
		{"SanitizerLeavesNoSecretStored", sanitizerLeavesNoSecretStored}, {"CountersAndTrimming", countersAndTrimming},
		{"CloseIdempotentAndList", closeIdempotentAndList}, {"LimitsClamping", limitsClamping},
		{"StatsCoverageAndAttribution", statsCoverageAndAttribution}, {"AttributionStoredButNotInViews", attributionStoredButNotInViews},
		{"RecordOnClosedStoreFails", recordOnClosedStoreFails}, {"ErgonomicsLoopCallsRelations", ergonomicsLoopCallsRelations},
		{"IdleReuseIsPerPrincipal", idleReuseIsPerPrincipal}, {"ExplicitIDOfAnotherPrincipal", explicitIDOfAnotherPrincipal},
		{"LegacySessionsHaveNoPrincipal", legacySessionsHaveNoPrincipal}, {"RacingPrincipalsOnOneExplicitID", racingPrincipalsOnOneExplicitID},
		{"BatchesTrimToExactlyTheNewest", batchesTrimToExactlyTheNewest}, {"BatchedTrimKeepsTheNewest", batchedTrimKeepsTheNewest},
		{"PurgeEventsBefore", purgeEventsBefore},
		{"WriterBatchBounds", writerBatchBounds}, {"BatchCounters", batchCounters}, {"AffinityCache", affinityCache},
		{"RequestIDRoundTrips", requestIDRoundTrips},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

var ctx = context.Background()

// owner and intruder are two principals' keys (authority fingerprints).
const (
	owner    = "fp-owner"
	intruder = "fp-intruder"
)

// Clock is a settable clock for a Service: Now is its time, Add moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newService opens a backend and a service over it on a fake clock.
func newService(t *testing.T, open func(*testing.T) Backend) (*audit.Service, Backend, *Clock) {
	t.Helper()
	b := open(t)
	c := NewClock(time.Unix(1_800_000_000, 0))
	return audit.NewService(b.Store, c.Now), b, c
}

func okEvent() audit.Event {
	return audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}
}

// eventIDs are a session's stored event ids, oldest first.
func eventIDs(t *testing.T, b Backend, session string) []string {
	t.Helper()
	ids, err := b.Raw.EventIDs(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// sessionRows are every stored session's principal and requested id.
func sessionRows(t *testing.T, b Backend) map[string][2]string {
	t.Helper()
	rows, err := b.Raw.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
