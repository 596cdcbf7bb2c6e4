package evidencedb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func logged(l *logBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// allLeaves reads every leaf hash of the journal, as a verifier would.
func allLeaves(t *testing.T, dir string) [][]byte {
	t.Helper()
	rows, err := rawDB(t, dir).Query(`SELECT leaf_hash FROM records ORDER BY idx`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

func equalProofs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestOldJournalWithoutTreeIndex opens a journal written before the tree
// index existed (its tables and migration row removed): verify checks no
// nodes, the first open rebuilds the index and says so, later opens read
// the state row, and proofs, bundles and appends work.
func TestOldJournalWithoutTreeIndex(t *testing.T) {
	ctx := context.Background()
	var fresh logBuffer
	open(t, t.TempDir(), evidence.Options{Log: logged(&fresh)}).Close()
	if fresh.String() != "" {
		t.Fatalf("a new journal logged %q", fresh.String())
	}
	dir, _ := journal10(t)
	raw := rawDB(t, dir)
	exec(t, raw, `DROP TABLE tree_nodes`)
	exec(t, raw, `DROP TABLE tree_state`)
	exec(t, raw, `DELETE FROM schema_migrations WHERE name = '0002_tree_nodes.sql'`)
	raw.Close()
	rep := verify(t, dir, evidence.VerifyOptions{})
	if !rep.Clean || rep.TreeNodesChecked != 0 {
		t.Fatalf("old journal: clean %v, %d nodes checked\n%s", rep.Clean, rep.TreeNodesChecked, dump(rep))
	}

	var log logBuffer
	j := open(t, dir, evidence.Options{Log: logged(&log)})
	if !strings.Contains(log.String(), "rebuilding the tree index") || !strings.Contains(log.String(), "no stored tree state") {
		t.Fatalf("log %q does not say the index was rebuilt", log.String())
	}
	fill(t, j, 10, 5, "s")
	bun, err := j.ExportBundle(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(bun.Records) != 15 {
		t.Fatalf("%d bundle records", len(bun.Records))
	}
	data, err := json.Marshal(bun)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := evidence.VerifyBundle(data); err != nil || !r.Clean {
		t.Fatalf("bundle: %v %+v", err, r.Totals)
	}
	j.Close()

	var log2 logBuffer
	j = open(t, dir, evidence.Options{Log: logged(&log2)})
	j.Close()
	if log2.String() != "" {
		t.Fatalf("second open logged %q; it should read the state row", log2.String())
	}
	rep = verify(t, dir, evidence.VerifyOptions{})
	if !rep.Clean || rep.TreeNodesChecked != 15-4 {
		t.Fatalf("migrated journal: clean %v, %d nodes checked\n%s", rep.Clean, rep.TreeNodesChecked, dump(rep))
	}
}

// TestInconsistentTreeStateIsRebuilt checks that a state row that
// disagrees with the records (here: a stale size, as a build without the
// index would leave it) is rebuilt at open, logged, and repaired.
func TestInconsistentTreeStateIsRebuilt(t *testing.T) {
	dir, _ := journal10(t)
	raw := rawDB(t, dir)
	exec(t, raw, `UPDATE tree_state SET size = 3`)
	raw.Close()
	if rep := verify(t, dir, evidence.VerifyOptions{}); !rep.Has(evidence.FindingBadNode) {
		t.Fatalf("a stale state row is not a finding\n%s", dump(rep))
	}
	var log logBuffer
	j := open(t, dir, evidence.Options{Log: logged(&log)})
	j.Close()
	if !strings.Contains(log.String(), "the stored tree state has size 3 but the journal 10 records") {
		t.Fatalf("log %q", log.String())
	}
	if rep := verify(t, dir, evidence.VerifyOptions{}); !rep.Clean || rep.TreeNodesChecked != 10-2 {
		t.Fatalf("after the rebuild: %d nodes\n%s", rep.TreeNodesChecked, dump(rep))
	}
}

// TestTamperedNodeFailsBundle checks that a bundle whose proof would pass
// through an edited stored node is refused, not exported with a proof
// that does not verify.
func TestTamperedNodeFailsBundle(t *testing.T) {
	ctx := context.Background()
	dir, _ := journal10(t)
	raw := rawDB(t, dir)
	// Node (1,0) is on the inclusion path of records 2..9.
	exec(t, raw, `UPDATE tree_nodes SET hash = zeroblob(32) WHERE level = 1 AND idx = 0`)
	raw.Close()
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	_, err := j.ExportBundle(ctx, "s")
	if failure.KindOf(err) != failure.Internal || !strings.Contains(err.Error(), "evidence verify") {
		t.Fatalf("export over a tampered node: %v", err)
	}
	var fe *failure.Error
	if !errors.As(err, &fe) {
		t.Fatalf("not a failure: %T", err)
	}
}

// TestOpenLeavesAGapToVerify: a record deleted below the last one is not
// looked for at start (decision 0045). The journal opens on its stored
// tree, which still holds the deleted leaf, so what it signs next is a
// consistent extension of its earlier checkpoint; verify reports the gap.
func TestOpenLeavesAGapToVerify(t *testing.T) {
	dir, cp10 := journal10(t)
	execRecords(t, rawDB(t, dir), `DELETE FROM %s WHERE idx = 3`)
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	if e := fill(t, j, 10, 2, "s"); e[0].Index != 10 || e[1].Index != 11 {
		t.Fatalf("appended at %d and %d, want 10 and 11", e[0].Index, e[1].Index)
	}
	ctx := context.Background()
	cp12, err := j.Checkpoint(ctx)
	if err != nil || cp12.Size != 12 {
		t.Fatalf("checkpoint %+v (%v), want size 12", cp12.Checkpoint, err)
	}
	p, err := j.ConsistencyProof(ctx, 10, 12)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(evidence.Hasher, 10, 12, p, cp10.Root, cp12.Root); err != nil {
		t.Fatalf("the checkpoint signed after the gap does not extend the one before it: %v", err)
	}
	rep := verify(t, dir, evidence.VerifyOptions{})
	if !hasFinding(rep, "journal", evidence.FindingMissing, 3) || rep.Clean {
		t.Fatalf("verify does not report the deleted record 3:\n%s", dump(rep))
	}
}
