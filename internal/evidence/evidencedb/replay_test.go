package evidencedb_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
)

// replayRec is record i (verified, session sess) as the replay of the
// original effect of.
func replayRec(i int, sess, of string) evidence.Record {
	r := rec(i, evidence.BindingVerified, sess)
	r.Tool = "complete_session_message"
	r.Replayed, r.ReplayOf = true, of
	return r
}

// TestReplayRecordsVerify appends replays among ordinary records: they are
// stored in version 2, read back with their original, and the journal,
// an edit of the replay_of column, and a session bundle verify as the
// format says.
func TestReplayRecordsVerify(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	j := open(t, dir, evidence.Options{})
	fill(t, j, 0, 4, "wc_sess_a")
	for i, of := range []string{"wc_cmp_1", "wc_cmp_1"} {
		e, err := j.Append(ctx, replayRec(4+i, "wc_sess_a", of))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := evidence.SchemaOf(e.Canonical); v != 2 {
			t.Fatalf("replay written in version %d", v)
		}
	}
	e, err := j.Append(ctx, rec(6, evidence.BindingVerified, "wc_sess_a"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := evidence.SchemaOf(e.Canonical); v != 1 {
		t.Fatalf("a record that is no replay written in version %d", v)
	}
	got, err := j.SessionRecords(ctx, "wc_sess_a", 50)
	if err != nil {
		t.Fatal(err)
	}
	replays := 0
	for _, e := range got {
		if e.Record.Replayed {
			replays++
			if e.Record.ReplayOf != "wc_cmp_1" || e.Record.InvocationID != "inv-000004" && e.Record.InvocationID != "inv-000005" {
				t.Fatalf("replay read back as %+v", e.Record)
			}
		}
	}
	if replays != 2 {
		t.Fatalf("%d replays read back, want 2", replays)
	}
	// fill(0, 4) cycles through the four bindings; the two replays and
	// record 6 are verified.
	if c, err := j.SessionCounts(ctx, "wc_sess_a"); err != nil || c != (evidence.Counts{Verified: 4, Sessionless: 1, InvalidClaim: 1, Unknown: 1, Replays: 2}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	b, err := j.ExportBundle(ctx, "wc_sess_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	j.Close()
	wantKinds(t, verify(t, dir, evidence.VerifyOptions{}))
	data, _ := json.Marshal(b)
	rep, err := evidence.VerifyBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds(t, rep)
	if rep.Records != 7 || rep.OK != 7 {
		t.Fatalf("bundle: %+v", rep)
	}

	// A replay fact removed from, or added to, the columns no longer
	// re-encodes to the leaf.
	db := rawDB(t, dir)
	exec(t, db, `UPDATE records SET replay_of = '' WHERE idx = 4`)
	exec(t, db, `UPDATE records SET replay_of = 'wc_cmp_1' WHERE idx = 6`)
	rep = verify(t, dir, evidence.VerifyOptions{})
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
	exec(t, db, `ALTER TABLE records DROP COLUMN replay_of`)
	db.Close()
	rep := verify(t, dir, evidence.VerifyOptions{})
	wantKinds(t, rep)
	if rep.Records != 8 || rep.OK != 8 {
		t.Fatalf("%s", dump(rep))
	}
}
