package evidencerow_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
)

func record() evidence.Record {
	d := evidence.Digest([]byte("x"))
	return evidence.Record{InvocationID: "inv-1", At: time.Unix(0, 1_700_000_000_123_456_789).UTC(), Tool: "read_files",
		Source: evidence.SourceMCP, Claim: evidence.Claim{BusinessSessionID: "s", ClientWindow: d},
		Binding: evidence.BindingSessionless, Reasons: []evidence.Reason{evidence.ReasonNoRecorderRequested},
		Outcome: evidence.OutcomeOK, DurationMS: 7, ArgumentsDigest: d, ResultDigest: d}
}

// TestArgsDecodeRoundTrip: the values Args stores decode back to the
// record, one per column of Columns (NumColumns).
func TestArgsDecodeRoundTrip(t *testing.T) {
	if n := len(strings.Split(evidencerow.Columns, ",")); n != evidencerow.NumColumns {
		t.Fatalf("Columns names %d columns, NumColumns is %d", n, evidencerow.NumColumns)
	}
	r := record()
	canon, err := r.Canonical("j", "k", 3)
	if err != nil {
		t.Fatal(err)
	}
	args := evidencerow.Args(3, "k", r, canon, evidence.LeafHash(canon))
	if len(args) != evidencerow.NumColumns {
		t.Fatalf("%d args", len(args))
	}
	row := evidencerow.Decode(args)
	if row.ColumnsErr != nil || row.Index != 3 || row.KeyID != "k" || !bytes.Equal(row.Canonical, canon) {
		t.Fatalf("decoded %+v", row)
	}
	again, err := row.Columns.Canonical("j", "k", 3)
	if err != nil || !bytes.Equal(again, canon) {
		t.Fatalf("the decoded columns re-encode differently (%v)", err)
	}
	args[3] = "not a number"
	if row := evidencerow.Decode(args); row.ColumnsErr == nil {
		t.Fatal("a mistyped column decoded")
	}
}

// TestBounds: the limit rule, the origin rule, the listed signers and the
// compact-range codec.
func TestBounds(t *testing.T) {
	for in, want := range map[int]int{0: evidence.DefaultSessionRecords, 3: 3, evidence.MaxSessionRecords + 1: evidence.MaxSessionRecords} {
		if got, err := evidencerow.ClampLimit(in); err != nil || got != want {
			t.Errorf("ClampLimit(%d) = %d, %v", in, got, err)
		}
	}
	if _, err := evidencerow.ClampLimit(-1); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("ClampLimit(-1): %v", err)
	}
	if err := evidencerow.CheckSessionID(strings.Repeat("s", evidence.MaxFieldBytes+1)); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("long session id: %v", err)
	}
	for _, o := range []string{"a b", "a+b", strings.Repeat("o", evidence.MaxFieldBytes+1)} {
		if err := evidencerow.CheckOrigin(o); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("origin %q: %v", o, err)
		}
	}
	ids := make([]string, evidence.MaxListedSigners+2)
	for i := range ids {
		ids[i] = "k"
	}
	if got := evidence.ListSigners(ids); strings.Count(got, "k") != evidence.MaxListedSigners || !strings.HasSuffix(got, ", ...") {
		t.Errorf("listed %q", got)
	}
	if _, err := evidencerow.Range(1, make([]byte, evidencerow.HashSize+1)); err == nil {
		t.Error("a range of a partial hash")
	}
	tb := evidence.NewTreeBuilder()
	for i := range 5 {
		tb.Append(evidence.LeafHash([]byte{byte(i)}))
	}
	rng, err := evidencerow.Range(5, bytes.Join(tb.Hashes(), nil))
	if err != nil || rng.End() != 5 || !bytes.Equal(evidencerow.RangeBlob(rng), bytes.Join(tb.Hashes(), nil)) {
		t.Fatalf("range round trip: %v", err)
	}
}
