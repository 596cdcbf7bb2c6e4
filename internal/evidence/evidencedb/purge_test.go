package evidencedb_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
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
