// Package storetest is the contract suite every [workflow.Store]
// implementation must pass, on SQLite (workflow/workflowdb) and on
// PostgreSQL (workflow/workflowpg). Implementation packages call [Run]
// from their own tests with a constructor of a fresh, empty [Ledger].
package storetest

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// Store is a workflow.Store with the extras the composition root uses.
type Store interface {
	workflow.Store
	workflow.EventPurger
	GetCommitted(ctx context.Context, id string) (workflow.Session, error)
	Flush(ctx context.Context) error
	QueueRecord(ctx context.Context, body []byte, done func(error)) error
	Outbox(ctx context.Context, after int64, limit int) ([]workflowrow.OutboxRow, error)
	TrimOutbox(ctx context.Context, upTo int64) error
	Restored() workflowrow.RestoreReport
	ValidateAll(ctx context.Context) (workflowrow.RestoreReport, error)
	// Close may be called more than once.
	Close() error
}

// A Ledger is one ledger (a data directory, a database) that a test opens
// stores on.
type Ledger interface {
	// Open opens a store on the ledger; a store opened while another is
	// open is another process (replica). The test's cleanup closes it.
	Open(t *testing.T) Store
	// Set sets column of session id's row (seq 0) or of its event seq,
	// in table "sessions" or "events", to value, behind the stores' backs.
	Set(t *testing.T, table, column string, value any, id string, seq int64)
	// Discarded returns the reason and body discarded_rows holds for the
	// row key.
	Discarded(t *testing.T, key string) (reason, body string)
	// Hold makes the writes of st to session id (any session when id is
	// "") and to the evidence outbox wait until release is called (or the
	// test ends).
	Hold(t *testing.T, st Store, id string) (release func())
	// Crash returns a store opened on what a kill -9 of st's process
	// would leave now (st's queued writes never commit there); st is not
	// used afterwards.
	Crash(t *testing.T, st Store) Store
}

// env is a test's ledger, and how to make another.
type env struct {
	Ledger
	fresh func(t *testing.T) Ledger
}

const proj = "agent:local:demo"

var owner = auth.Fingerprint("local")

// Run runs the workflow.Store contract against ledgers returned by
// newLedger (a new, empty ledger each call, cleaned up by it).
func Run(t *testing.T, newLedger func(t *testing.T) Ledger) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, env)
	}{
		{"Lifecycle", lifecycle}, {"ClaimCheck", claimCheck}, {"TailRetention", tailRetention},
		{"RestoreExactAndDiscardsMalformed", restoreExactAndDiscardsMalformed},
		{"CorruptEventQuarantinedAtFirstUse", corruptEventQuarantinedAtFirstUse},
		{"ListQuarantinesMalformedHeader", listQuarantinesMalformedHeader},
		{"ValidateAllMatchesFirstUse", validateAllMatchesFirstUse},
		{"ConcurrentAppends", concurrentAppends}, {"HeaderFollowsTheStoredBytes", headerFollowsTheStoredBytes},
		{"ClaimedHeaderMustBeStored", claimedHeaderMustBeStored},
		{"LedgerRoundTrip", ledgerRoundTrip}, {"LedgerCarriesReplays", ledgerCarriesReplays},
		{"LedgerImportRejects", ledgerImportRejects},
		{"RecoverOpenCalls", recoverOpenCalls}, {"RecoverOpenCallBeyondRetention", recoverOpenCallBeyondRetention},
		{"OpenCallsOfALiveProcessAreNotRecovered", openCallsOfALiveProcessAreNotRecovered},
		{"RecoverySkipsQuarantinedSession", recoverySkipsQuarantinedSession},
		{"BehindWritesAndAKill", behindWritesAndAKill}, {"QueueRecordAndAKill", queueRecordAndAKill},
		{"TrimOutbox", trimOutbox}, {"OutboxSeqNeverGoesBack", outboxSeqNeverGoesBack},
		{"PurgeClosedEvents", purgeClosedEvents}, {"PurgeAcrossAKill", purgeAcrossAKill},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, env{Ledger: newLedger(t), fresh: newLedger}) })
	}
}

func start(t testing.TB, svc *workflow.Service) workflow.Session {
	t.Helper()
	s, err := svc.Start(context.Background(), workflow.StartParams{Project: proj, Fingerprint: owner, Instruction: "fix the flaky test"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func started(tool, call, inv string, role workflow.Role) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallStarted, Tool: tool, CallID: call, InvocationID: inv, Role: role}
}

func finished(tool, call, inv string, role workflow.Role) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallFinished, Tool: tool, CallID: call, InvocationID: inv, Role: role, Outcome: workflow.OutcomeOK}
}

func appendEvents(t *testing.T, svc *workflow.Service, id string, evs ...workflow.Event) {
	t.Helper()
	if _, _, err := svc.Append(context.Background(), id, evs...); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, st Store, id string) workflow.Session {
	t.Helper()
	s, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func events(t *testing.T, st Store, id string) []workflow.Event {
	t.Helper()
	evs, err := st.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// readPair is the events a read-only call records: started and finished
// in one append.
func readPair(call string) []workflow.Event {
	return []workflow.Event{
		{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: call, InvocationID: "inv_" + call, Role: workflow.RoleRecorder},
		{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: call, InvocationID: "inv_" + call, Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK},
	}
}
