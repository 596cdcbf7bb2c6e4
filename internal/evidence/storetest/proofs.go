package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

func bundleVerifiesWithoutDatabase(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 7})
	Fill(t, j, 0, 9, "wc_sess_a")
	Fill(t, j, 9, 20, "wc_sess_b")
	Fill(t, j, 29, 4, "wc_sess_a")
	bundle, err := j.ExportBundle(ctx, "wc_sess_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.ExportBundle(ctx, "nobody"); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("empty session: %v", err)
	}
	j.Close()
	data, _ := json.Marshal(bundle)
	rep, err := evidence.VerifyBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	WantKinds(t, rep)
	if rep.Records != 13 || rep.OK != 13 || rep.LastCheckpoint.Size != 33 {
		t.Fatalf("%+v", rep)
	}

	tamper := func(f func(b *evidence.Bundle)) evidence.Report {
		var c evidence.Bundle
		json.Unmarshal(data, &c)
		f(&c)
		out, _ := json.Marshal(c)
		rep, err := evidence.VerifyBundle(out)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	WantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[2].Record.Outcome = evidence.OutcomeFailed }), evidence.FindingBadLeaf)
	WantKinds(t, tamper(func(b *evidence.Bundle) {
		i := bytes.Index(b.Records[3].Canonical, []byte("read_files"))
		b.Records[3].Canonical[i] = 'R'
	}), evidence.FindingBadLeaf, evidence.FindingNotInTree)
	WantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[4].InclusionProof[0][0] ^= 1 }), evidence.FindingNotInTree)
	WantKinds(t, tamper(func(b *evidence.Bundle) { b.Records[4].Index++ }), evidence.FindingBadLeaf, evidence.FindingNotInTree)
	WantKinds(t, tamper(func(b *evidence.Bundle) { b.Records = append(b.Records, b.Records[0]) }), evidence.FindingDuplicateID)
	WantKinds(t, tamper(func(b *evidence.Bundle) { b.Checkpoint = strings.Replace(b.Checkpoint, "\n33\n", "\n32\n", 1) }), evidence.FindingBadSignature, evidence.FindingNotInTree)
	skey, vkey, _ := note.GenerateKey(nil, bundle.Origin)
	s, _ := note.NewSigner(skey)
	WantKinds(t, tamper(func(b *evidence.Bundle) {
		cp, _ := evidence.ParseCheckpointBody(strings.SplitN(b.Checkpoint, "\n\n", 2)[0] + "\n")
		msg, _ := note.Sign(&note.Note{Text: cp.Body()}, s)
		b.Checkpoint = string(msg) // signed by a key the bundle does not list
	}), evidence.FindingUnknownKey, evidence.FindingNotInTree)
	// Trusting a key out of band overrides the bundle's own keys.
	rep, _ = evidence.VerifyBundleWith(data, []string{vkey})
	if !rep.Has(evidence.FindingUnknownKey) {
		t.Fatalf("%v", rep.Totals)
	}
}

// proofsFromStoredNodes checks that inclusion and consistency proofs
// read from the stored nodes equal the proofs computed from all leaves,
// for every size of a real journal written by single and concurrent
// appends.
func proofsFromStoredNodes(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{CheckpointEvery: 37})
	entries := Fill(t, j, 0, 70, "s")
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				e, err := j.Append(ctx, Rec(1000+w*100+i, evidence.BindingSessionless, "c"))
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
	wg.Wait()
	const n = 170
	slices.SortFunc(entries, func(a, b evidence.Entry) int { return int(a.Index) - int(b.Index) })
	var leaves [][]byte
	for i, e := range entries {
		if e.Index != uint64(i) {
			t.Fatalf("entry %d has index %d", i, e.Index)
		}
		leaves = append(leaves, e.LeafHash)
	}
	if len(leaves) != n {
		t.Fatalf("%d leaves, want %d", len(leaves), n)
	}
	proofs := 0
	for size := uint64(1); size <= n; size++ {
		tb := evidence.NewTreeBuilder()
		indexes := []uint64{0, size / 3, size / 2, size - 1}
		for _, i := range indexes {
			if err := tb.WantInclusion(i, size); err != nil {
				t.Fatal(err)
			}
		}
		froms := []uint64{1, size / 2, size - 1, size}
		for _, s1 := range froms {
			if s1 > 0 {
				if err := tb.WantConsistency(s1, size); err != nil {
					t.Fatal(err)
				}
			}
		}
		tb.WantRoot(size)
		for _, l := range leaves[:size] {
			if err := tb.Append(l); err != nil {
				t.Fatal(err)
			}
		}
		root := tb.Root()
		for _, i := range indexes {
			want, err := tb.InclusionProof(i, size)
			if err != nil {
				t.Fatal(err)
			}
			got, err := j.InclusionProof(ctx, i, size)
			if err != nil {
				t.Fatalf("inclusion (%d, %d): %v", i, size, err)
			}
			if !equalProofs(got, want) {
				t.Fatalf("inclusion (%d, %d): stored nodes give %x, all leaves %x", i, size, got, want)
			}
			if err := proof.VerifyInclusion(evidence.Hasher, i, size, leaves[i], got, root); err != nil {
				t.Fatalf("inclusion (%d, %d) does not verify: %v", i, size, err)
			}
			proofs++
		}
		for _, s1 := range froms {
			if s1 == 0 {
				continue
			}
			want, err := tb.ConsistencyProof(s1, size)
			if err != nil {
				t.Fatal(err)
			}
			got, err := j.ConsistencyProof(ctx, s1, size)
			if err != nil {
				t.Fatalf("consistency (%d, %d): %v", s1, size, err)
			}
			if !equalProofs(got, want) {
				t.Fatalf("consistency (%d, %d): stored nodes give %x, all leaves %x", s1, size, got, want)
			}
			proofs++
		}
	}
	if proofs < 1000 {
		t.Fatalf("only %d proofs compared", proofs)
	}
	j.Close()
	rep := b.Verify(t, evidence.VerifyOptions{})
	// A tree of 170 leaves has 170 - popcount(170) = 166 interior nodes.
	if !rep.Clean || rep.TreeNodesChecked != 166 || rep.Records != n {
		t.Fatalf("%d nodes checked, want 166\n%s", rep.TreeNodesChecked, Dump(rep))
	}
}

func equalProofs(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// proofRejects checks the bad inputs of the proof methods: a size beyond
// the journal, an index outside the tree, sizes out of order.
func proofRejects(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{})
	Fill(t, j, 0, 10, "s")
	for _, c := range []struct {
		name string
		call func() ([][]byte, error)
	}{
		{"size beyond the journal", func() ([][]byte, error) { return j.InclusionProof(ctx, 0, 11) }},
		{"index outside the tree", func() ([][]byte, error) { return j.InclusionProof(ctx, 5, 5) }},
		{"consistency beyond the journal", func() ([][]byte, error) { return j.ConsistencyProof(ctx, 2, 11) }},
		{"consistency sizes reversed", func() ([][]byte, error) { return j.ConsistencyProof(ctx, 7, 3) }},
	} {
		p, err := c.call()
		if failure.KindOf(err) != failure.InvalidArguments || p != nil {
			t.Errorf("%s: %v %v, want invalid_arguments", c.name, p, err)
		}
	}
}

// ReplayRec is record i (verified, session sess) as the replay of the
// original effect of.
func ReplayRec(i int, sess, of string) evidence.Record {
	r := Rec(i, evidence.BindingVerified, sess)
	r.Tool = "complete_session_message"
	r.Replayed, r.ReplayOf = true, of
	return r
}

// replayRecordsVerify appends replays among ordinary records: they are
// stored in version 3 (salted) with replay_of, read back with their
// original, and the journal and a session bundle verify.
func replayRecordsVerify(t *testing.T, b Backend) {
	ctx := context.Background()
	j := open(t, b, evidence.Options{})
	Fill(t, j, 0, 4, "wc_sess_a")
	for i, of := range []string{"wc_cmp_1", "wc_cmp_1"} {
		e, err := j.Append(ctx, ReplayRec(4+i, "wc_sess_a", of))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := evidence.SchemaOf(e.Canonical); v != evidence.SaltedSchemaVersion || len(e.Record.Salt) != evidence.SaltBytes {
			t.Fatalf("replay written in version %d", v)
		}
	}
	e, err := j.Append(ctx, Rec(6, evidence.BindingVerified, "wc_sess_a"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := evidence.SchemaOf(e.Canonical); v != evidence.SaltedSchemaVersion {
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
	if c, err := j.SessionCounts(ctx, "wc_sess_a"); err != nil || c != (evidence.Counts{Verified: 4, Sessionless: 1, InvalidClaim: 1, Unknown: 1, Replays: 2}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	bundle, err := j.ExportBundle(ctx, "wc_sess_a")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	WantKinds(t, b.Verify(t, evidence.VerifyOptions{}))
	data, _ := json.Marshal(bundle)
	rep, err := evidence.VerifyBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	WantKinds(t, rep)
	if rep.Records != 7 || rep.OK != 7 {
		t.Fatalf("bundle: %+v", rep)
	}
}

// runSignsPeriodically: Run signs the grown head with the journal's clock.
// The test watches Latest until Run's checkpoint appears (no sleep).
func runSignsPeriodically(t *testing.T, b Backend) {
	j := open(t, b, evidence.Options{CheckpointInterval: 5 * time.Millisecond, Now: func() time.Time { return T0 }})
	if _, err := j.Latest(context.Background()); failure.KindOf(err) != failure.NotFound {
		t.Fatalf("latest before any checkpoint: %v", err)
	}
	Fill(t, j, 0, 3, "s")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	for {
		cp, err := j.Latest(context.Background())
		if err == nil && cp.Size == 3 {
			if !cp.CreatedAt.Equal(T0) {
				t.Fatalf("created_at %v, want the injected clock", cp.CreatedAt)
			}
			break
		}
		if err != nil && failure.KindOf(err) != failure.NotFound {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}
