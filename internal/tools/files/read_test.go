package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project/filerev"
	"github.com/webcodex/webcodex/internal/tools/files"
)

func readArgs(reqs ...map[string]any) map[string]any {
	list := make([]any, len(reqs))
	for i, r := range reqs {
		list[i] = r
	}
	return map[string]any{"files": list}
}

func file(path string, kv ...any) map[string]any {
	m := map[string]any{"path": path}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestReadWholeFile(t *testing.T) {
	e := newEnv(t)
	content := "alpha\nbeta\r\ngamma"
	e.Write("dir/a.txt", content)
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("./dir//a.txt"))))
	if len(out.Files) != 1 {
		t.Fatalf("files = %+v", out.Files)
	}
	f := out.Files[0]
	want := files.FileContent{
		Path: "dir/a.txt", StartLine: 1, EndLine: 3, TotalLines: 3, Content: content,
		SHA256: filerev.SHA256([]byte(content)), ReadRevision: filerev.Of([]byte(content)),
		SizeBytes: int64(len(content)),
	}
	if f != want {
		t.Fatalf("got  %+v\nwant %+v", f, want)
	}
	if out.ContentBytes != len(content) {
		t.Errorf("content_bytes = %d", out.ContentBytes)
	}
}

func TestReadLineRangeAndContinuation(t *testing.T) {
	e := newEnv(t)
	e.Write("n.txt", "1\n2\n3\n4\n5\n")
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(
		file("n.txt", "start_line", 2, "end_line", 3),
		file("n.txt", "start_line", 4, "end_line", 99),
		file("n.txt", "start_line", 5),
	)))
	got := out.Files
	if got[0].Content != "2\n3\n" || got[0].StartLine != 2 || got[0].EndLine != 3 || got[0].NextStartLine != 4 || got[0].Truncated {
		t.Errorf("range 2-3 = %+v", got[0])
	}
	if got[1].Content != "4\n5\n" || got[1].EndLine != 5 || got[1].NextStartLine != 0 || got[1].TotalLines != 5 {
		t.Errorf("range 4-99 = %+v", got[1])
	}
	if got[2].Content != "5\n" || got[2].NextStartLine != 0 {
		t.Errorf("range 5- = %+v", got[2])
	}
	// Same file read three times: same whole-file revision each time.
	if got[0].ReadRevision != got[2].ReadRevision || got[0].SHA256 != got[1].SHA256 {
		t.Error("whole-file digests differ between ranges")
	}
}

func TestReadByteBudgetContinuationReassemblesFile(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "line %02d é\n", i) // 11 bytes each
	}
	e.Write("big.txt", b.String())
	var got strings.Builder
	start, calls := 1, 0
	for start != 0 {
		calls++
		out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("big.txt", "start_line", start, "max_bytes", 50))))
		f := out.Files[0]
		if len(f.Content) > 50 {
			t.Fatalf("content %d bytes over max_bytes 50", len(f.Content))
		}
		if f.NextStartLine != 0 && !f.Truncated {
			t.Fatalf("stopped before the end without truncation: %+v", f)
		}
		if f.PartialLine {
			t.Fatalf("partial line with lines that fit: %+v", f)
		}
		got.WriteString(f.Content)
		start = f.NextStartLine
	}
	if got.String() != b.String() {
		t.Fatal("continuation reads do not reassemble the file")
	}
	if calls != 10 { // 4 lines of 11 bytes fit in 50
		t.Errorf("calls = %d, want 10", calls)
	}
}

func TestReadPartialLineCutsAtRuneBoundary(t *testing.T) {
	e := newEnv(t)
	e.Write("long.txt", "aéééééé\nnext\n") // 'a' + 6×2 bytes
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("long.txt", "max_bytes", 4))))
	f := out.Files[0]
	if f.Content != "aé" || !f.PartialLine || !f.Truncated || f.EndLine != 1 || f.NextStartLine != 2 {
		t.Fatalf("partial read = %+v", f)
	}
}

func TestReadLongLinesAcrossBuffer(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", 200<<10)
	content := "first\n" + long + "\nlast"
	e.Write("l.txt", content)
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("l.txt", "max_bytes", files.MaxReadBytes))))
	f := out.Files[0]
	if f.Content != content || f.TotalLines != 3 || f.Truncated {
		t.Fatalf("long-line read: len %d, total %d, truncated %v", len(f.Content), f.TotalLines, f.Truncated)
	}
	out = kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("l.txt", "start_line", 3))))
	if out.Files[0].Content != "last" || out.Files[0].StartLine != 3 {
		t.Fatalf("line after long line = %+v", out.Files[0])
	}
}

func TestReadDefaultBudget(t *testing.T) {
	if files.DefaultReadBytes != 64<<10 {
		t.Fatalf("DefaultReadBytes = %d", files.DefaultReadBytes)
	}
	e := newEnv(t)
	line := strings.Repeat("y", 1023) + "\n"
	e.Write("d.txt", strings.Repeat(line, 100)) // 100 KiB
	f := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("d.txt")))).Files[0]
	if len(f.Content) != files.DefaultReadBytes || f.EndLine != 64 || f.NextStartLine != 65 || !f.Truncated {
		t.Fatalf("default budget: %d bytes, end %d, next %d, truncated %v", len(f.Content), f.EndLine, f.NextStartLine, f.Truncated)
	}
	if f.SizeBytes != 100<<10 || f.TotalLines != 100 {
		t.Fatalf("whole-file facts wrong: %+v", f.SizeBytes)
	}
}

func TestReadResponseCap(t *testing.T) {
	if files.MaxReadResponseBytes != 512<<10 || files.MaxReadBytes != 256<<10 || files.MaxReadFiles != 8 {
		t.Fatal("read bounds changed")
	}
	e := newEnv(t)
	line := strings.Repeat("z", 1023) + "\n"
	e.Write("c.txt", strings.Repeat(line, 300)) // 300 KiB
	req := file("c.txt", "max_bytes", files.MaxReadBytes)
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(req, req, req)))
	if out.ContentBytes != files.MaxReadResponseBytes {
		t.Fatalf("content_bytes = %d, want %d", out.ContentBytes, files.MaxReadResponseBytes)
	}
	if len(out.Files[0].Content) != files.MaxReadBytes || len(out.Files[1].Content) != files.MaxReadBytes {
		t.Fatal("first two files not read to max_bytes")
	}
	third := out.Files[2]
	if third.Content != "" || !third.Truncated || third.NextStartLine != 1 || third.EndLine != 0 || third.PartialLine {
		t.Fatalf("third file past the response cap = %+v", third)
	}
}

func TestReadBinaryFile(t *testing.T) {
	e := newEnv(t)
	content := "PNG\x00\x01\x02rest"
	e.Write("img.bin", content)
	f := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("img.bin")))).Files[0]
	want := files.FileContent{
		Path: "img.bin", Binary: true, SHA256: filerev.SHA256([]byte(content)),
		ReadRevision: filerev.Of([]byte(content)), SizeBytes: int64(len(content)),
	}
	if f != want {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
}

func TestReadInvalidUTF8IsFlagged(t *testing.T) {
	e := newEnv(t)
	e.Write("latin1.txt", "caf\xe9\n")
	f := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("latin1.txt")))).Files[0]
	if !f.InvalidUTF8 || f.Binary {
		t.Fatalf("latin-1 file = %+v", f)
	}
}

func TestReadEmptyFileAndPastEnd(t *testing.T) {
	e := newEnv(t)
	e.Write("empty.txt", "")
	e.Write("two.txt", "a\nb\n")
	f := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("empty.txt")))).Files[0]
	if f.StartLine != 1 || f.EndLine != 0 || f.TotalLines != 0 || f.Content != "" || f.Truncated || f.NextStartLine != 0 {
		t.Fatalf("empty file = %+v", f)
	}
	msg := kerneltest.Fails(t, e.Call("read_files", readArgs(file("two.txt", "start_line", 3))), failure.InvalidArguments)
	if !strings.Contains(msg, "past the end") {
		t.Errorf("message = %q", msg)
	}
}

func TestReadArgumentBounds(t *testing.T) {
	e := newEnv(t)
	e.Write("a.txt", "a\n")
	nine := make([]map[string]any, files.MaxReadFiles+1)
	for i := range nine {
		nine[i] = file("a.txt")
	}
	out := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(nine[:files.MaxReadFiles]...)))
	if len(out.Files) != files.MaxReadFiles {
		t.Fatalf("%d files read", len(out.Files))
	}
	cases := map[string]map[string]any{
		"nine files":         readArgs(nine...),
		"no files":           readArgs(),
		"max_bytes too big":  readArgs(file("a.txt", "max_bytes", files.MaxReadBytes+1)),
		"max_bytes negative": readArgs(file("a.txt", "max_bytes", -1)),
		"negative start":     readArgs(file("a.txt", "start_line", -1)),
		"end before start":   readArgs(file("a.txt", "start_line", 3, "end_line", 2)),
		"unknown field":      readArgs(file("a.txt", "encoding", "utf-8")),
		"unknown top field":  {"files": []any{file("a.txt")}, "extra": true},
		"traversal":          readArgs(file("../x")),
		"absolute":           readArgs(file("/etc/passwd")),
		"empty path":         readArgs(file("")),
		"directory":          readArgs(file(".")),
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			kerneltest.Fails(t, e.Call("read_files", args), failure.InvalidArguments)
		})
	}
	okMax := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("a.txt", "max_bytes", files.MaxReadBytes))))
	if okMax.Files[0].Content != "a\n" {
		t.Fatal("max_bytes at the bound refused")
	}
}

func TestReadMissingFileFailsWholeCall(t *testing.T) {
	e := newEnv(t)
	e.Write("a.txt", "a\n")
	kerneltest.Fails(t, e.Call("read_files", readArgs(file("a.txt"), file("nope.txt"))), failure.NotFound)
	kerneltest.Fails(t, e.Call("read_files", readArgs(file("a.txt/child"))), failure.NotFound)
}

func TestReadSymlinks(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(e.Project.Root, "escape")); err != nil {
		t.Fatal(err)
	}
	kerneltest.Fails(t, e.Call("read_files", readArgs(file("escape"))), failure.PermissionDenied)

	e.Write("real.txt", "inside\n")
	if err := os.Symlink("real.txt", filepath.Join(e.Project.Root, "alias")); err != nil {
		t.Fatal(err)
	}
	f := kerneltest.OK[files.ReadFilesOutput](t, e.Call("read_files", readArgs(file("alias")))).Files[0]
	if f.Path != "alias" || f.Content != "inside\n" {
		t.Fatalf("in-project symlink = %+v", f)
	}
}

func TestReadRefusals(t *testing.T) {
	e := newEnv(t)
	e.Write("a.txt", "a\n")
	kerneltest.Fails(t, e.Call("read_files", map[string]any{"project": "agent:local:other", "files": []any{file("a.txt")}}), failure.UnknownProject)
	kerneltest.Fails(t, e.Raw(auth.LocalUser(), "read_files", []byte(`{"files":[{"path":"a.txt"}]}`)), failure.InvalidArguments)
	weak := auth.Principal{Kind: auth.KindAPIToken, ID: "t1", Owner: "local", Scopes: []auth.Scope{auth.ScopeRuntimeRead}}
	kerneltest.Fails(t, e.CallAs(weak, "read_files", readArgs(file("a.txt"))), failure.InsufficientScope)
	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "t2", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	kerneltest.OK[files.ReadFilesOutput](t, e.CallAs(reader, "read_files", readArgs(file("a.txt"))))
}
