package search

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
)

func testProject(t *testing.T, files map[string]string) project.Project {
	return kerneltest.TempProject(t, files)
}

func TestObservedPathsAreReturnedMatchFiles(t *testing.T) {
	p := testProject(t, map[string]string{
		"z.txt": "hit\nhit\n", "a/b.txt": "hit\n", "c.txt": "miss\n", "d.txt": "hit\n",
	})
	in := Input{Queries: []Query{{Query: "hit"}, {Query: "hit", Path: "a"}}, MaxMatches: 3}
	_, observed, err := run(context.Background(), p, in, MaxScannedFiles)
	if err != nil {
		t.Fatal(err)
	}
	// Query 0 returns a/b.txt, d.txt and the first z.txt line (max 3);
	// query 1 returns a/b.txt. c.txt had no match.
	if want := []string{"a/b.txt", "d.txt", "z.txt"}; !slices.Equal(observed, want) {
		t.Fatalf("observed = %v, want %v", observed, want)
	}
	in.MaxMatches = 1
	_, observed, err = run(context.Background(), p, in, MaxScannedFiles)
	if err != nil {
		t.Fatal(err)
	}
	// Matches that were counted but not returned are not observed.
	if want := []string{"a/b.txt"}; !slices.Equal(observed, want) {
		t.Fatalf("observed = %v, want %v", observed, want)
	}
}

func TestNothingObservedWithoutMatchesOrOnFailure(t *testing.T) {
	p := testProject(t, map[string]string{"a.txt": "text\n"})
	out, observed, err := run(context.Background(), p, Input{Queries: []Query{{Query: "absent"}}}, MaxScannedFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(observed) != 0 || out.FilesScanned != 1 {
		t.Fatalf("observed %v, scanned %d", observed, out.FilesScanned)
	}
	_, observed, err = run(context.Background(), p, Input{Queries: []Query{{Query: "text"}, {Query: "(", Regex: true}}}, MaxScannedFiles)
	if failure.KindOf(err) != failure.InvalidArguments || observed != nil {
		t.Fatalf("err %v observed %v", err, observed)
	}
}

func TestScannedFilesBound(t *testing.T) {
	if MaxScannedFiles != 20_000 {
		t.Fatalf("MaxScannedFiles = %d", MaxScannedFiles)
	}
	p := testProject(t, map[string]string{"a": "hit\n", "b": "hit\n", "c": "hit\n"})
	out, _, err := run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if out.FilesScanned != 2 || !out.ScanIncomplete || !out.Truncated || !out.Queries[0].Truncated || len(out.Matches) != 2 {
		t.Fatalf("bounded scan = %+v", out)
	}
	out, _, err = run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out.FilesScanned != 3 || out.ScanIncomplete || out.Truncated {
		t.Fatalf("scan at the bound = %+v", out)
	}
}

// TestScannedFilesBoundSkipsLargeFiles checks that files found too large
// are not reads: the bound falls on the third file read, and the large
// files are counted up to it, not beyond.
func TestScannedFilesBoundSkipsLargeFiles(t *testing.T) {
	big := strings.Repeat("hit\n", MaxFileBytes/4+1)
	p := testProject(t, map[string]string{"a": "hit\n", "b": big, "c": "hit\n", "d": "hit\n", "e": big})
	out, _, err := run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if out.FilesScanned != 2 || out.FilesSkippedLarge != 1 || !out.ScanIncomplete || out.Queries[0].Matches != 2 {
		t.Fatalf("bounded scan = %+v", out)
	}
	out, _, err = run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out.FilesScanned != 3 || out.FilesSkippedLarge != 2 || out.ScanIncomplete || out.Queries[0].Matches != 3 {
		t.Fatalf("scan at the bound = %+v", out)
	}
}

func TestSearchCancelled(t *testing.T) {
	p := testProject(t, map[string]string{"a": "hit\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, path := range []string{"", "a"} {
		_, _, err := run(ctx, p, Input{Queries: []Query{{Query: "hit", Path: path}}}, MaxScannedFiles)
		if failure.KindOf(err) != failure.Interrupted {
			t.Fatalf("path %q: err = %v, want interrupted", path, err)
		}
	}
}
