package files

import (
	"context"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
)

func testProject(t *testing.T, files map[string]string) project.Project {
	return kerneltest.TempProject(t, files)
}

func TestReadFilesObservesDistinctCanonicalPaths(t *testing.T) {
	p := testProject(t, map[string]string{"b.txt": "b\n", "a/x.txt": "x\n", "bin": "\x00"})
	_, observed, err := readFiles(context.Background(), p, ReadFilesInput{Files: []ReadRequest{
		{Path: "b.txt"}, {Path: "./a//x.txt"}, {Path: "b.txt", StartLine: 1}, {Path: "bin"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b.txt", "a/x.txt", "bin"}; !slices.Equal(observed, want) {
		t.Fatalf("observed = %v, want %v", observed, want)
	}
}

func TestReadFilesObservesNothingOnFailure(t *testing.T) {
	p := testProject(t, map[string]string{"b.txt": "b\n"})
	_, observed, err := readFiles(context.Background(), p, ReadFilesInput{Files: []ReadRequest{{Path: "b.txt"}, {Path: "missing"}}})
	if failure.KindOf(err) != failure.NotFound {
		t.Fatalf("err = %v, want not_found", err)
	}
	if observed != nil {
		t.Fatalf("observed = %v on failure", observed)
	}
}

func TestReadCancelled(t *testing.T) {
	p := testProject(t, map[string]string{"f": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tree, err := p.OpenTree()
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	_, err = readOne(ctx, tree, ReadRequest{Path: "f"}, DefaultReadBytes)
	if failure.KindOf(err) != failure.Interrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
}

func TestListScanBound(t *testing.T) {
	if MaxListScan != 100_000 {
		t.Fatalf("MaxListScan = %d", MaxListScan)
	}
	p := testProject(t, map[string]string{"a": "", "b": "", "c": "", "d": ""})
	out, err := listFiles(context.Background(), p, ListInput{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 3 || out.Total != 3 || !out.TotalIsLowerBound || !out.Truncated {
		t.Fatalf("bounded listing = %+v", out)
	}
	out, err = listFiles(context.Background(), p, ListInput{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 4 || out.TotalIsLowerBound || out.Truncated {
		t.Fatalf("listing at the bound = %+v", out)
	}
}

func TestOverviewScanBound(t *testing.T) {
	if MaxOverviewScan != 50_000 {
		t.Fatalf("MaxOverviewScan = %d", MaxOverviewScan)
	}
	p := testProject(t, map[string]string{"a.go": "1", "b.go": "22", "c.go": "333"})
	out, err := overview(context.Background(), p, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Truncated || out.FileCount != 2 || out.TotalBytes != 3 || len(out.TopLevel) != 3 {
		t.Fatalf("bounded overview = %+v", out)
	}
	out, err = overview(context.Background(), p, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out.Truncated || out.FileCount != 3 || out.TotalBytes != 6 {
		t.Fatalf("overview at the bound = %+v", out)
	}
}
