package search

import (
	"context"
	"fmt"
	"maps"
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

// TestManyFilesKeepWalkOrder searches more files than the batches in
// flight hold: the matches, the max_matches cut and the MaxScannedFiles
// bound follow the walk's order exactly, as a sequential search would.
func TestManyFilesKeepWalkOrder(t *testing.T) {
	files := map[string]string{}
	for d := range 30 {
		for f := range 17 {
			files[fmt.Sprintf("d%02d/f%02d.txt", d, f)] = strings.Repeat("hay\n", f%3) + "hit\n" + strings.Repeat("hit hay\n", d%2)
		}
	}
	p := testProject(t, files)
	// The walk order is git's tree order: here the paths' byte order.
	var want []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		for i, line := range strings.Split(strings.TrimSuffix(files[path], "\n"), "\n") {
			if strings.Contains(line, "hit") {
				want = append(want, fmt.Sprintf("%s:%d", path, i+1))
			}
		}
	}
	brief := func(out Output) []string {
		var got []string
		for _, m := range out.Matches {
			got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
		}
		return got
	}
	out, _, err := run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}, MaxMatches: MaxMatchesLimit}, MaxScannedFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := brief(out); !slices.Equal(got, want) || out.FilesScanned != len(files) || out.Queries[0].Matches != len(want) {
		t.Fatalf("full search: %d files, %d matches, order equal %v", out.FilesScanned, out.Queries[0].Matches, slices.Equal(got, want))
	}
	out, _, err = run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}, MaxMatches: 50}, MaxScannedFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := brief(out); !slices.Equal(got, want[:50]) || out.Queries[0].Matches != len(want) {
		t.Fatalf("max_matches 50: %v, %d counted", got, out.Queries[0].Matches)
	}
	const bound = 100 // files d00..d05 hold 102: the bound falls in d05
	out, _, err = run(context.Background(), p, Input{Queries: []Query{{Query: "hit"}}, MaxMatches: MaxMatchesLimit}, bound)
	if err != nil {
		t.Fatal(err)
	}
	var inBound []string
	for _, w := range want {
		if w < "d05/f15" {
			inBound = append(inBound, w)
		}
	}
	if got := brief(out); !slices.Equal(got, inBound) || out.FilesScanned != bound || !out.ScanIncomplete {
		t.Fatalf("bounded search: %d files, incomplete %v, %d matches (want %d)", out.FilesScanned, out.ScanIncomplete, len(got), len(inBound))
	}
}
