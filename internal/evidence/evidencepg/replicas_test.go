package evidencepg_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// replica opens a journal of b on its own pool.
func replica(t *testing.T, b backend, opts evidence.Options) *evidencepg.Journal {
	t.Helper()
	j, err := evidencepg.Open(context.Background(), b.pool(t), b.keyFile, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestReplicasAppendOneOrder: two replicas (two pools) append at once,
// singly and in outbox batches; the indexes are one gap-free order, the
// journal verifies, and every record's inclusion proof verifies against
// the signed head.
func TestReplicasAppendOneOrder(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	a, c := replica(t, b, evidence.Options{CheckpointEvery: 16}), replica(t, b, evidence.Options{CheckpointEvery: 16})
	const workers, per = 3, 20
	var mu sync.Mutex
	var entries []evidence.Entry
	var wg sync.WaitGroup
	for r, j := range []*evidencepg.Journal{a, c} {
		for w := range workers {
			wg.Go(func() {
				for i := range per {
					n := (r*workers+w)*per + i
					e, err := j.Append(ctx, storetest.Rec(n, storetest.Kinds[n%4], fmt.Sprint("s", n%3)))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					entries = append(entries, e)
					mu.Unlock()
				}
			})
		}
		wg.Go(func() { // each replica also applies its own outbox
			for i := range 5 {
				seq := int64(r*100 + i*4)
				var items []evidence.OutboxItem
				for k := range 4 {
					items = append(items, evidence.OutboxItem{Seq: seq + int64(k) + 1, Record: storetest.Rec(10000+int(seq)+k, evidence.BindingVerified, "ob")})
				}
				if _, err := j.ApplyOutbox(ctx, items, true); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	cp, err := c.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const appended = 2 * workers * per
	if len(entries) != appended {
		t.Fatalf("%d entries", len(entries))
	}
	// Every index below the head is taken once: the outbox's records fill
	// the indexes the appends left.
	seen := map[uint64]bool{}
	for _, e := range entries {
		if seen[e.Index] || e.Index >= cp.Size {
			t.Fatalf("index %d twice or beyond the head %d", e.Index, cp.Size)
		}
		seen[e.Index] = true
		p, err := a.InclusionProof(ctx, e.Index, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(evidence.Hasher, e.Index, cp.Size, e.LeafHash, p, cp.Root); err != nil {
			t.Fatalf("record %d: %v", e.Index, err)
		}
	}
	rep := b.Verify(t, evidence.VerifyOptions{})
	storetest.WantKinds(t, rep)
	if uint64(rep.Records) != cp.Size || *rep.LastIndex != cp.Size-1 || !rep.HeadMatchesCheckpoint {
		t.Fatalf("records %d, last %d, head %d", rep.Records, *rep.LastIndex, cp.Size)
	}
	// Replica c's outbox (watermarks 101..120) came after a's (1..20) or
	// before it: whichever batch ran second skipped what the first covered.
	if rep.Records < appended+20 {
		t.Fatalf("%d records, want at least %d", rep.Records, appended+20)
	}
}

// TestReplicasApplyTheSameOutboxOnce: two replicas over two pools apply the
// same outbox items at once, in the same batches; every record is
// journaled once, in outbox order, and both see the stored watermark.
func TestReplicasApplyTheSameOutboxOnce(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	a, c := replica(t, b, evidence.Options{}), replica(t, b, evidence.Options{})
	const n, batch = 60, 6
	var items []evidence.OutboxItem
	for i := range n {
		items = append(items, evidence.OutboxItem{Seq: int64(i + 1), Record: storetest.Rec(i, evidence.BindingVerified, "ob")})
	}
	var wg sync.WaitGroup
	for _, j := range []*evidencepg.Journal{a, c} {
		wg.Go(func() {
			for i := 0; i < n; i += batch {
				if _, err := j.ApplyOutbox(ctx, items[i:i+batch], true); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := a.SessionRecords(ctx, "ob", evidence.MaxSessionRecords)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d records, want %d", len(got), n)
	}
	for k, e := range got { // newest first
		if want := fmt.Sprintf("inv-%06d", n-1-k); e.Record.InvocationID != want || e.Index != uint64(n-1-k) {
			t.Fatalf("record at %d is %s (index %d), want %s", k, e.Record.InvocationID, e.Index, want)
		}
	}
	for _, j := range []*evidencepg.Journal{a, c} {
		if applied, durable := j.Watermarks(); applied != n || durable != n {
			t.Fatalf("watermarks %d, %d", applied, durable)
		}
	}
	if _, err := a.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
}

// TestReplicasSignEachSizeOnce: replicas checkpointing at once (Run on
// every replica) sign each head size once.
func TestReplicasSignEachSizeOnce(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	a, c := replica(t, b, evidence.Options{}), replica(t, b, evidence.Options{})
	var wg sync.WaitGroup
	for r, j := range []*evidencepg.Journal{a, c} {
		wg.Go(func() {
			for i := range 15 {
				storetest.Fill(t, j, r*100+i, 1, "s")
				for range 2 {
					if _, err := j.Checkpoint(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	var dups int
	if err := b.pool(t).Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT size FROM evidence.checkpoints GROUP BY size HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d sizes signed more than once", dups)
	}
	storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
}

// TestWritersLockTheHead: an append, an outbox batch, a checkpoint and a
// replica's start each wait for the head row's lock before they read the head (so before
// they take an index or decide to sign): while another transaction holds
// the lock, the call's backend waits on it in its FOR UPDATE read, not
// later. Without the lock, two replicas would read the same head, take the
// same index or sign the same size twice.
func TestWritersLockTheHead(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(b backend, replicaDB *pgdb.DB, j *evidencepg.Journal) error
	}{
		{"Append", func(_ backend, _ *pgdb.DB, j *evidencepg.Journal) error {
			_, err := j.Append(ctx, storetest.Rec(2, evidence.BindingVerified, "s"))
			return err
		}},
		{"ApplyOutbox", func(_ backend, _ *pgdb.DB, j *evidencepg.Journal) error {
			_, err := j.ApplyOutbox(ctx, []evidence.OutboxItem{{Seq: 1, Record: storetest.Rec(2, evidence.BindingVerified, "s")}}, true)
			return err
		}},
		{"Checkpoint", func(_ backend, _ *pgdb.DB, j *evidencepg.Journal) error {
			_, err := j.Checkpoint(ctx)
			return err
		}},
		// A replica starting decides on its key under the lock, so that
		// replicas starting together on a new journal list one key.
		{"Open", func(b backend, replicaDB *pgdb.DB, _ *evidencepg.Journal) error {
			_, err := evidencepg.Open(ctx, replicaDB, b.keyFile, evidence.Options{})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t)
			j := replica(t, b, evidence.Options{})
			storetest.Fill(t, j, 0, 2, "s")
			db := b.pool(t)
			tx, err := db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A failing test must still release the lock, or closing the
			// pools would wait for the call forever.
			var once sync.Once
			release := func() { once.Do(func() { tx.Rollback(ctx) }) }
			t.Cleanup(release)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM evidence.head WHERE id = 1 FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			replicaDB := b.pool(t)
			go func() { done <- c.call(b, replicaDB, j) }()
			var query string
			for {
				err := db.Pool.QueryRow(ctx, `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&query)
				if err == nil {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("the call finished (%v) while the head was locked", err)
				default:
				}
			}
			if !strings.Contains(query, "evidence.head") || !strings.Contains(query, "FOR UPDATE") {
				t.Fatalf("the call waits in %q, not in its locked read of the head", query)
			}
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}), map[bool][]evidence.FindingKind{
				true: nil, false: {evidence.FindingNoCheckpoint}}[c.name == "Checkpoint"]...)
		})
	}
}

// TestReplicaWithAnotherKeyRefuses: a replica given another key than the
// journal's refuses to start, on a journal with records and checkpoints
// and on one that is empty but whose key another replica listed, and
// writes nothing; one given no key file on such a journal creates none.
func TestReplicaWithAnotherKeyRefuses(t *testing.T) {
	ctx := context.Background()
	for _, used := range []bool{false, true} {
		t.Run(fmt.Sprint("records=", used), func(t *testing.T) {
			b := newBackend(t)
			first := replica(t, b, evidence.Options{})
			if used {
				storetest.Fill(t, first, 0, 3, "s")
				if _, err := first.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
			}
			db := b.pool(t)
			other := filepath.Join(t.TempDir(), evidence.KeyFile)
			foreign, err := evidence.CreateKeyFile(other, first.Origin())
			if err != nil {
				t.Fatal(err)
			}
			_, err = evidencepg.Open(ctx, db, other, evidence.Options{})
			if failure.KindOf(err) != failure.Unavailable || !errors.Is(err, evidence.ErrForeignKey) ||
				!strings.Contains(err.Error(), foreign.ID) || !strings.Contains(err.Error(), first.KeyID()) {
				t.Fatalf("open with another key: %v", err)
			}
			var keys int
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM evidence.public_keys`).Scan(&keys); err != nil || keys != 1 {
				t.Fatalf("%d public keys (%v): the refused key was listed", keys, err)
			}
			missing := filepath.Join(t.TempDir(), evidence.KeyFile)
			if _, err := evidencepg.Open(ctx, db, missing, evidence.Options{}); failure.KindOf(err) != failure.Unavailable || !strings.Contains(err.Error(), missing) {
				t.Fatalf("open without the key file: %v", err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a key was created for a journal that has one")
			}
			// The journal's own key still opens it.
			if j := replica(t, b, evidence.Options{}); j.KeyID() != first.KeyID() {
				t.Fatalf("key %s, want %s", j.KeyID(), first.KeyID())
			}
		})
	}
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	replica(t, b, evidence.Options{})
	db := b.pool(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO evidence.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := evidencepg.Open(ctx, db, b.keyFile, evidence.Options{}); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "evidence") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// TestVerifyWithoutJournal: Verify never creates the schema.
func TestVerifyWithoutJournal(t *testing.T) {
	db := pgtest.Open(t)
	if _, err := evidencepg.Verify(context.Background(), db, evidence.VerifyOptions{}); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("verify of an empty database: %v", err)
	}
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = 'evidence'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("schema created by Verify: %d %v", n, err)
	}
}

// TestVerifyStreamsAndFindsTampering: a journal longer than FetchRows
// (records and level-1 nodes) verifies clean through the cursors, and
// edits of its tables are found.
func TestVerifyStreamsAndFindsTampering(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	j := replica(t, b, evidence.Options{})
	const n = 2*evidencepg.FetchRows + 90
	var items []evidence.OutboxItem
	for i := range n {
		items = append(items, evidence.OutboxItem{Seq: int64(i + 1), Record: storetest.Rec(i, storetest.Kinds[i%4], "s")})
	}
	if _, err := j.ApplyOutbox(ctx, items, true); err != nil {
		t.Fatal(err)
	}
	cp, err := j.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep := b.Verify(t, evidence.VerifyOptions{})
	storetest.WantKinds(t, rep)
	if rep.Records != n || rep.TreeNodesChecked != uint64(n-popcount(n)) {
		t.Fatalf("records %d, nodes %d", rep.Records, rep.TreeNodesChecked)
	}
	db := b.pool(t)
	exec := func(q string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`UPDATE evidence.records SET duration_ms = duration_ms + 1 WHERE idx = 7`)
	rep = b.Verify(t, evidence.VerifyOptions{})
	if !storetest.HasFinding(rep, "record", evidence.FindingBadLeaf, 7) {
		t.Fatalf("edited column: %s", storetest.Dump(rep))
	}
	exec(`UPDATE evidence.records SET duration_ms = duration_ms - 1 WHERE idx = 7`)
	exec(`UPDATE evidence.tree_nodes SET hash = sha256(hash) WHERE level = 1 AND idx = 300`)
	storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}), evidence.FindingBadNode)
	exec(`DELETE FROM evidence.records WHERE idx = 400`)
	rep = b.Verify(t, evidence.VerifyOptions{From: []byte(cp.Note)})
	// The signed head is now larger than the journal (truncated, and a
	// rollback from the kept checkpoint); the index still holds the row.
	storetest.WantKinds(t, rep, evidence.FindingBadNode, evidence.FindingMissing, evidence.FindingNotInTree,
		evidence.FindingRollback, evidence.FindingTruncated)
}

func popcount(n int) int {
	c := 0
	for ; n > 0; n &= n - 1 {
		c++
	}
	return c
}

// TestLostHeadIsRebuilt: a journal whose head row was deleted is rebuilt
// from every leaf at the next open, which says so in the log; it then
// verifies clean and appends after its last record. A gap refuses.
func TestLostHeadIsRebuilt(t *testing.T) {
	ctx := context.Background()
	b := journal10(t)
	db := b.pool(t)
	if _, err := db.Pool.Exec(ctx, `DELETE FROM evidence.head`); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	j, err := evidencepg.Open(ctx, db, b.keyFile, evidence.Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "rebuilding the tree index from every leaf") {
		t.Fatalf("log: %q", log.String())
	}
	if e := storetest.Fill(t, j, 10, 1, "s")[0]; e.Index != 10 {
		t.Fatalf("index %d after the rebuild", e.Index)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))

	for _, q := range []string{`DELETE FROM evidence.head`, `DELETE FROM evidence.records WHERE idx = 4`} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := evidencepg.Open(ctx, db, b.keyFile, evidence.Options{}); failure.KindOf(err) != failure.Unavailable || !strings.Contains(err.Error(), "index 4 is missing") {
		t.Fatalf("open with a gap: %v", err)
	}
}

// TestReplicasStartingTogetherShareOneKey: replicas started at once on a
// new database, each without a key file, agree on one journal: exactly
// one of them creates and lists its key; the others refuse to start,
// because the key they created is not the listed one (ErrForeignKey) or
// because the journal has a key by the time they look and theirs is
// missing; the journal has one identity.
func TestReplicasStartingTogetherShareOneKey(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	const replicas = 4
	type result struct {
		j   *evidencepg.Journal
		err error
	}
	results := make(chan result, replicas)
	var wg sync.WaitGroup
	for range replicas {
		db := b.pool(t)
		keyFile := filepath.Join(t.TempDir(), evidence.KeyFile)
		wg.Go(func() {
			j, err := evidencepg.Open(ctx, db, keyFile, evidence.Options{})
			results <- result{j, err}
		})
	}
	wg.Wait()
	close(results)
	var opened []*evidencepg.Journal
	for r := range results {
		switch {
		case r.err == nil:
			opened = append(opened, r.j)
		case failure.KindOf(r.err) != failure.Unavailable || !errors.Is(r.err, evidence.ErrForeignKey) && !strings.Contains(r.err.Error(), "is missing"):
			t.Fatalf("a replica failed otherwise: %v", r.err)
		}
	}
	if len(opened) != 1 {
		t.Fatalf("%d replicas opened the new journal, want 1", len(opened))
	}
	var ids, keys int
	if err := b.pool(t).Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM evidence.journal), (SELECT count(*) FROM evidence.public_keys)`).Scan(&ids, &keys); err != nil {
		t.Fatal(err)
	}
	if ids != 1 || keys != 1 {
		t.Fatalf("%d identities and %d keys", ids, keys)
	}
}
