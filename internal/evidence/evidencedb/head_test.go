package evidencedb_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
)

func TestHeadCountsUnsignedRecords(t *testing.T) {
	ctx := context.Background()
	j := open(t, t.TempDir(), evidence.Options{})
	defer j.Close()
	if h, err := j.Head(ctx); err != nil || h.Size != 0 || h.Origin != j.Origin() {
		t.Fatalf("empty head = %+v, %v", h, err)
	}
	fill(t, j, 0, 3, "wc_sess_a")
	cp, err := j.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := j.Head(ctx)
	if err != nil || h.Size != 3 || !bytes.Equal(h.Root, cp.Root) {
		t.Fatalf("head = %+v, %v; checkpoint %+v", h, err, cp.Checkpoint)
	}
	// Records after the checkpoint are in the head, not in the checkpoint.
	fill(t, j, 3, 2, "wc_sess_a")
	h2, err := j.Head(ctx)
	if err != nil || h2.Size != 5 || bytes.Equal(h2.Root, cp.Root) {
		t.Fatalf("head after 2 more = %+v, %v", h2, err)
	}
	if last, err := j.Latest(ctx); err != nil || last.Size != 3 {
		t.Fatalf("Head signed something: latest = %+v, %v", last, err)
	}
}
