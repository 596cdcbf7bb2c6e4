package files

import (
	"cmp"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
)

// BenchmarkReadFiles compares reads through the project's root handle (the
// tool's code) with the path-string reads the tool did before
// (readFilesByPath, kept here only as the baseline: Resolve, then open the
// absolute path), alternated call by call.

var benchInput = ReadFilesInput{Files: []ReadRequest{{Path: "internal/pkg/main.go"}, {Path: "README.md"}}}

func benchProject(b *testing.B) project.Project {
	line := "\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n"
	return kerneltest.TempProject(b, map[string]string{
		"internal/pkg/main.go": strings.Repeat(line, 64), // 4 KiB
		"README.md":            strings.Repeat("Some prose.\n", 80),
	})
}

func BenchmarkReadFiles(b *testing.B) {
	p := benchProject(b)
	ctx := context.Background()
	benchpair.Run(b, "path", func() {
		if _, err := readFilesByPath(ctx, p, benchInput); err != nil {
			b.Fatal(err)
		}
	}, "root", func() {
		if _, _, err := readFiles(ctx, p, benchInput); err != nil {
			b.Fatal(err)
		}
	})
}

// readFilesByPath is read_files as it was before the root handle: the same
// validation, budget and streaming, with every file opened by its absolute
// path after the path policy's check.
func readFilesByPath(ctx context.Context, p project.Project, in ReadFilesInput) (ReadFilesOutput, error) {
	for i, r := range in.Files {
		if err := validateRequest(i, r); err != nil {
			return ReadFilesOutput{}, err
		}
	}
	out := ReadFilesOutput{Files: make([]FileContent, 0, len(in.Files))}
	remaining := MaxReadResponseBytes
	for _, r := range in.Files {
		budget := min(cmp.Or(r.MaxBytes, DefaultReadBytes), remaining)
		abs, clean, err := p.Resolve(r.Path)
		if err != nil {
			return ReadFilesOutput{}, err
		}
		f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return ReadFilesOutput{}, project.StatFailure(err, clean)
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			return ReadFilesOutput{}, failure.New(failure.InvalidArguments, "%q is not a regular file", clean)
		}
		fc, err := readOpen(ctx, f, clean, r, budget, st.Size())
		f.Close()
		if err != nil {
			return ReadFilesOutput{}, err
		}
		remaining -= len(fc.Content)
		out.ContentBytes += len(fc.Content)
		out.Files = append(out.Files, fc)
	}
	return out, nil
}
