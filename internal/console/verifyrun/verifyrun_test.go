package verifyrun_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/console/verifyrun"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
)

// journal writes n records and a checkpoint into a fresh data directory.
func journal(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	j, err := evidencedb.Open(ctx, dir, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		r := evidence.Record{
			InvocationID: fmt.Sprintf("inv-%06d", i), At: t0.Add(time.Duration(i) * time.Millisecond),
			Tool: "read_files", Source: evidence.SourceMCP, Binding: evidence.BindingSessionless,
			Claim:   evidence.Claim{BusinessSessionID: "wc_sess_x"},
			Reasons: []evidence.Reason{evidence.ReasonNoRecorderRequested}, Outcome: evidence.OutcomeOK,
		}
		if _, err := j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitDone follows the runner's changes until the run leaves running; it
// returns every state seen.
func waitDone(t *testing.T, r *verifyrun.Runner) []verifyrun.State {
	t.Helper()
	var seen []verifyrun.State
	for {
		st, ch := r.Watch()
		seen = append(seen, st)
		if st.Phase != verifyrun.PhaseRunning {
			return seen
		}
		<-ch
	}
}

func TestRealJournalCleanThenTampered(t *testing.T) {
	dir := journal(t, 40)
	r := verifyrun.New(func(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error) {
		return evidencedb.Verify(ctx, dir, opts)
	}, nil)
	defer r.Close()
	if st, _ := r.Watch(); st.Phase != verifyrun.PhaseIdle || st.Run != 0 {
		t.Fatalf("before any run: %+v", st)
	}
	st, err := r.Start()
	if err != nil || st.Run != 1 || st.Phase != verifyrun.PhaseRunning {
		t.Fatalf("Start = %+v, %v", st, err)
	}
	seen := waitDone(t, r)
	last := seen[len(seen)-1]
	if last.Phase != verifyrun.PhaseFinished || last.Report == nil || !last.Report.Clean || last.Report.Records != 40 || last.Done != 40 || last.Total != 40 {
		t.Fatalf("clean run ended %+v", last)
	}

	// Delete a record as an attacker with file access would.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, evidencedb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM record_leaves WHERE idx = 7`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := r.Start(); err != nil || st.Run != 2 {
		t.Fatalf("second Start = %+v, %v", st, err)
	}
	seen = waitDone(t, r)
	last = seen[len(seen)-1]
	if last.Phase != verifyrun.PhaseFinished || last.Report.Clean || !last.Report.Has(evidence.FindingMissing) {
		t.Fatalf("tampered run ended %+v (kinds %v)", last, last.Report.Kinds())
	}
}

func TestMissingJournalFails(t *testing.T) {
	dir := t.TempDir()
	r := verifyrun.New(func(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error) {
		return evidencedb.Verify(ctx, dir, opts)
	}, nil)
	defer r.Close()
	if _, err := r.Start(); err != nil {
		t.Fatal(err)
	}
	seen := waitDone(t, r)
	last := seen[len(seen)-1]
	if last.Phase != verifyrun.PhaseFailed || last.ErrKind != failure.NotFound || last.Report != nil || last.Err == "" {
		t.Fatalf("run over no journal ended %+v", last)
	}
}

// gate is a verifier that reports progress when told and returns when
// released or cancelled.
type gate struct {
	started  chan struct{}
	progress chan uint64
	release  chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 1), progress: make(chan uint64), release: make(chan struct{})}
}

func (g *gate) verify(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error) {
	g.started <- struct{}{}
	for {
		select {
		case n := <-g.progress:
			opts.Progress(n, 100)
		case <-g.release:
			return evidence.Report{Records: 100, Clean: true}, nil
		case <-ctx.Done():
			return evidence.Report{}, failure.Wrap(failure.Cancelled, ctx.Err(), "verification cancelled")
		}
	}
}

func TestOneRunAtATimeAndProgress(t *testing.T) {
	g := newGate()
	r := verifyrun.New(g.verify, nil)
	defer r.Close()
	if _, err := r.Start(); err != nil {
		t.Fatal(err)
	}
	<-g.started
	st, err := r.Start()
	if !failure.Is(err, failure.Conflict) || st.Run != 1 || st.Phase != verifyrun.PhaseRunning {
		t.Fatalf("second Start while running = %+v, %v", st, err)
	}
	_, ch := r.Watch()
	g.progress <- 30
	<-ch
	if st, _ := r.Watch(); st.Done != 30 || st.Total != 100 || st.Phase != verifyrun.PhaseRunning {
		t.Fatalf("after progress: %+v", st)
	}
	close(g.release)
	last := waitDone(t, r)
	if st := last[len(last)-1]; st.Phase != verifyrun.PhaseFinished || st.Run != 1 || st.Done != 100 {
		t.Fatalf("ended %+v", st)
	}
}

func TestCloseCancelsTheRunAndRefusesStarts(t *testing.T) {
	g := newGate()
	r := verifyrun.New(g.verify, nil)
	if _, err := r.Start(); err != nil {
		t.Fatal(err)
	}
	<-g.started
	r.Close() // returns only once the run has ended
	st, _ := r.Watch()
	if st.Phase != verifyrun.PhaseFailed || st.ErrKind != failure.Cancelled {
		t.Fatalf("after Close: %+v", st)
	}
	if _, err := r.Start(); !failure.Is(err, failure.Unavailable) {
		t.Fatalf("Start after Close: %v", err)
	}
	if st2, _ := r.Watch(); st2.Run != st.Run {
		t.Fatalf("a refused Start changed the state: %+v", st2)
	}
}
