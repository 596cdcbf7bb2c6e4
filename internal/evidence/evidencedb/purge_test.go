package evidencedb_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
)

// purgeChildDir names the data directory TestPurgeChild purges in; the
// test runs only as the child of TestPurgeKilledMidBatch.
const purgeChildDir = "WEBCODEX_TEST_PURGE_CHILD_DIR"

// TestPurgeChild purges the first records in batches of 2 and, inside the
// second batch's transaction (its writes done, not committed), says so on
// stdout and waits to be killed.
func TestPurgeChild(t *testing.T) {
	dir := os.Getenv(purgeChildDir)
	if dir == "" {
		t.Skip("run by TestPurgeKilledMidBatch")
	}
	j := open(t, dir, evidence.Options{})
	batches := 0
	evidencedb.SetBeforePurgeCommit(func() {
		if batches++; batches == 2 {
			fmt.Println("in-batch")
			select {} // killed here
		}
	})
	j.PurgeBefore(context.Background(), "kill", storetest.T0.Add(8*time.Millisecond), 2)
	t.Fatal("the purge finished; it should have been killed in its second batch")
}

// TestPurgeKilledMidBatch kills (SIGKILL) a real process in the middle of
// a purge batch: the batch committed before it stays (with its log row),
// the killed one is wholly undone, the journal verifies clean, and the
// next purge finishes the work.
func TestPurgeKilledMidBatch(t *testing.T) {
	dir, _ := journal10(t)
	// os.StartProcess: this package's tests already name a helper exec.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess(os.Args[0], []string{os.Args[0], "-test.run=^TestPurgeChild$"}, &os.ProcAttr{
		Env: append(os.Environ(), purgeChildDir+"="+dir), Files: []*os.File{nil, w, os.Stderr}})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.Contains(sc.Text(), "in-batch") {
	}
	if err := p.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	p.Wait()
	r.Close()

	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Purged != 2 || rep.OK != 8 || len(rep.PurgedRanges) != 1 || rep.PurgedRanges[0] != (evidence.IndexRange{First: 0, Last: 1}) {
		t.Fatalf("after the kill: purged %d ranges %v ok %d", rep.Purged, rep.PurgedRanges, rep.OK)
	}
	j := open(t, dir, evidence.Options{})
	sum, err := j.PurgeBefore(context.Background(), "kill", storetest.T0.Add(8*time.Millisecond), 2)
	j.Close()
	if err != nil || sum.Purged != 6 || *sum.Range != (evidence.IndexRange{First: 2, Last: 7}) {
		t.Fatalf("the next purge: %+v %v", sum, err)
	}
	rep = verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Purged != 8 || rep.OK != 2 {
		t.Fatalf("after the next purge: purged %d ok %d", rep.Purged, rep.OK)
	}
}

// TestPayloadTableMigration opens a journal of the shape before migration
// 0005 (one records table; purged records blanked in place) with some
// records purged: the migration keeps every record as it read before, a
// purged one has no payload row, and the journal verifies clean and
// purges on.
func TestPayloadTableMigration(t *testing.T) {
	ctx := context.Background()
	dir, _ := journal10(t)
	j := open(t, dir, evidence.Options{})
	storetest.PurgeFirst(t, j, 4)
	before, err := j.SessionRecords(ctx, "s", 100)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db := rawDB(t, dir)
	exec(t, db, `CREATE TABLE records_v4 AS SELECT * FROM records`)
	exec(t, db, `DROP VIEW records`)
	exec(t, db, `DROP TABLE record_leaves`)
	exec(t, db, `DROP TABLE record_payloads`)
	exec(t, db, `ALTER TABLE records_v4 RENAME TO records`)
	exec(t, db, `DELETE FROM schema_migrations WHERE name = '0005_payload_table.sql'`)
	db.Close()

	j = open(t, dir, evidence.Options{})
	defer j.Close()
	after, err := j.SessionRecords(ctx, "s", 100)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("records after the migration differ (%v):\n%+v\nwant\n%+v", err, after, before)
	}
	var payloads int
	if err := rawDB(t, dir).QueryRow(`SELECT COUNT(*) FROM record_payloads`).Scan(&payloads); err != nil || payloads != 6 {
		t.Fatalf("%d payload rows (%v), want 6", payloads, err)
	}
	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Purged != 4 || rep.OK != 6 {
		t.Fatalf("after the migration: purged %d ok %d", rep.Purged, rep.OK)
	}
	if sum, err := j.PurgeBefore(ctx, "test", storetest.T0.Add(10*time.Millisecond), 0); err != nil || sum.Purged != 6 {
		t.Fatalf("purge the rest: %+v %v", sum, err)
	}
	if rep := verify(t, dir, evidence.VerifyOptions{}); rep.Purged != 10 || !rep.Clean {
		t.Fatalf("after purging on: %s", dump(rep))
	}
}

// TestPurgedPagesAreReused: the pages a purge frees are reused by the
// records appended after it, so a journal whose payloads are purged as
// fast as records arrive grows only by what every record keeps forever
// (its leaf row, index entries and tree nodes).
func TestPurgedPagesAreReused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	defer j.Close()
	db := rawDB(t, dir)
	pages := func() int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const n = 1000
	p0 := pages()
	fill(t, j, 0, n, "s")
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	p1 := pages()
	storetest.PurgeFirst(t, j, n)
	fill(t, j, n, n, "s")
	p2 := pages()
	t.Logf("pages: empty %d, after %d records %d, after purging them and %d more %d", p0, n, p1, n, p2)
	if p2-p1 > (p1-p0)/2 {
		t.Fatalf("the second %d records took %d pages, the first %d: the purged pages were not reused", n, p2-p1, p1-p0)
	}
}
