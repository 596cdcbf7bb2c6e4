package evidencedb_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
)

func replayRec(i int, sess, of string) evidence.Record { return storetest.ReplayRec(i, sess, of) }

// TestReplayColumnEditsFound: a replay fact removed from, or added to,
// the replay_of column no longer re-encodes to the leaf (the replays'
// contract is storetest's).
func TestReplayColumnEditsFound(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 4, "wc_sess_a")
	for i := range 2 {
		if _, err := j.Append(ctx, replayRec(4+i, "wc_sess_a", "wc_cmp_1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append(ctx, rec(6, evidence.BindingVerified, "wc_sess_a")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	j.Close()
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
	db := rawDB(t, dir)
	setRecord(t, db, 4, "replay_of", "")
	setRecord(t, db, 6, "replay_of", "wc_cmp_1")
	rep := verify(t, dir, evidence.VerifyOptions{})
	if !hasFinding(rep, "record", evidence.FindingBadLeaf, 4) || !hasFinding(rep, "record", evidence.FindingBadLeaf, 6) || rep.OK != 5 {
		t.Fatalf("edited replay_of: %s", dump(rep))
	}
}

// TestVerifyJournalWithoutReplayColumn verifies a journal written before
// replays were recorded (no replay_of column), read-only, as clean:
// verification never migrates, and no record of such a journal is a
// replay.
func TestVerifyJournalWithoutReplayColumn(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 8, "wc_sess_a")
	if _, err := j.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	db := rawDB(t, dir)
	// The journal's shape before migration 0003: one records table, no
	// replay_of.
	exec(t, db, `CREATE TABLE records_v1 AS SELECT `+evidencerow.ColumnsV1+` FROM records`)
	exec(t, db, `DROP VIEW records`)
	exec(t, db, `ALTER TABLE records_v1 RENAME TO records`)
	db.Close()
	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Records != 8 || rep.OK != 8 {
		t.Fatalf("%s", dump(rep))
	}
}
