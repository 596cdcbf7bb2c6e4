package workflow_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// purgingStore is a real store whose Events first lets a retention purge
// batch commit, for its first purges calls: the purge lands between the
// export's read of the header and its read of the events.
type purgingStore struct {
	*workflowdb.Store
	t      *testing.T
	purges int
}

func (p *purgingStore) Events(ctx context.Context, id string, limit int) ([]workflow.Event, error) {
	if p.purges > 0 {
		p.purges--
		if got, err := p.PurgeClosedEvents(ctx, time.Now(), 1); err != nil || got.Items != 1 {
			p.t.Fatalf("purge batch: %+v, %v", got, err)
		}
	}
	return p.Store.Events(ctx, id, limit)
}

// closedSession is a data directory's store holding one closed session
// with several events.
func closedSession(t *testing.T) (*workflowdb.Store, workflow.Session) {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	s, err := svc.Start(context.Background(), workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "export me"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := svc.Continue(context.Background(), s.ID, "more", ""); err != nil {
			t.Fatal(err)
		}
	}
	if s, _, err = svc.Close(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	return st, s
}

// TestExportRacingAPurgeIsConsistent: a purge batch committed between the
// export's reads is seen; the exported row is one import accepts (its
// header accounts for every event it lacks).
func TestExportRacingAPurgeIsConsistent(t *testing.T) {
	st, s := closedSession(t)
	racy := &purgingStore{Store: st, t: t, purges: 1}
	l, err := workflow.Export(context.Background(), racy, []string{s.ID}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	row := l.Sessions[0]
	if row.EventsPurged != 1 || !row.RetentionTruncated || int64(len(row.Events)) != s.EventsObserved-1 {
		t.Fatalf("exported %d events with events_purged %d truncated %v; want %d, 1, true", len(row.Events), row.EventsPurged, row.RetentionTruncated, s.EventsObserved-1)
	}
	fresh, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := workflow.ImportLedger(context.Background(), fresh, strings.NewReader(ledgerJSON(t, l)), func(context.Context, string) error { return nil }); err != nil {
		t.Fatalf("the export does not import: %v", err)
	}
	if got, err := fresh.Get(context.Background(), s.ID); err != nil || got.EventsPurged != 1 {
		t.Fatalf("imported header: %+v, %v", got, err)
	}
}

// TestExportOfASessionPurgedThroughoutFails: a session purged on every
// read fails with conflict, naming it, and nothing is exported.
func TestExportOfASessionPurgedThroughoutFails(t *testing.T) {
	st, s := closedSession(t)
	racy := &purgingStore{Store: st, t: t, purges: workflow.ExportReads}
	l, err := workflow.Export(context.Background(), racy, []string{s.ID}, time.Now())
	if !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), s.ID) || len(l.Sessions) != 0 {
		t.Fatalf("export = %d sessions, %v; want conflict naming %s", len(l.Sessions), err, s.ID)
	}
}

func ledgerJSON(t *testing.T, l workflow.Ledger) string {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
