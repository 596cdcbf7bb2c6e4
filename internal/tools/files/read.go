package files

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"os"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/filerev"
	"github.com/webcodex/webcodex/internal/project/walk"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of read_files.
const (
	// MaxReadFiles bounds the files (ranges) one call reads.
	MaxReadFiles = 8
	// DefaultReadBytes is the content budget of one file when max_bytes is
	// omitted.
	DefaultReadBytes = 64 << 10
	// MaxReadBytes is the largest max_bytes a caller may ask for.
	MaxReadBytes = 256 << 10
	// MaxReadResponseBytes bounds the content of all files of one call
	// together; files past the budget are returned truncated.
	MaxReadResponseBytes = 512 << 10
)

// readBufferBytes is the buffered reader size; lines longer than this are
// read in pieces.
const readBufferBytes = 64 << 10

// ReadFilesInput is the input of read_files.
type ReadFilesInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Files []ReadRequest `json:"files" jsonschema:"1-8 files or line ranges to read, answered in this order"`
}

// ReadRequest names one file or line range.
type ReadRequest struct {
	Path      string `json:"path" jsonschema:"project-relative file path"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return, 1-based; default 1"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line, inclusive; default the end of the file"`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"bytes of content for this file; default 65536, at most 262144"`
}

// ReadFilesOutput is the output of read_files.
type ReadFilesOutput struct {
	Files []FileContent `json:"files"`
	// ContentBytes is the total size of the returned content.
	ContentBytes int `json:"content_bytes"`
}

// FileContent is one file's read result. Content holds the exact bytes of
// lines StartLine..EndLine, line terminators included, so that consecutive
// reads following NextStartLine concatenate to the file. SHA256,
// ReadRevision, SizeBytes and TotalLines always describe the whole file.
type FileContent struct {
	Path string `json:"path" jsonschema:"canonical project-relative path"`
	// Binary files (a NUL byte in the first 8 KiB) carry no content and no
	// line numbers.
	Binary     bool   `json:"binary,omitempty" jsonschema:"the file is binary; content is omitted"`
	StartLine  int    `json:"start_line" jsonschema:"first returned line, 1-based"`
	EndLine    int    `json:"end_line" jsonschema:"last returned line; start_line-1 when no line is returned"`
	TotalLines int    `json:"total_lines" jsonschema:"lines in the whole file"`
	Content    string `json:"content" jsonschema:"exact text of the returned lines, terminators included"`
	// InvalidUTF8 is set when the content is not valid UTF-8; JSON carries
	// it with replacement characters, so it is not byte-exact.
	InvalidUTF8  bool   `json:"invalid_utf8,omitempty" jsonschema:"content is not valid UTF-8 and is not byte-exact in JSON"`
	SHA256       string `json:"sha256" jsonschema:"hex SHA-256 of the whole file"`
	ReadRevision string `json:"read_revision" jsonschema:"revision of the whole file, the fence edit tools accept"`
	SizeBytes    int64  `json:"size_bytes"`
	// Truncated is set when the byte budget stopped the read before the
	// requested end.
	Truncated bool `json:"truncated" jsonschema:"the byte budget ended the read before the requested end"`
	// PartialLine is set when the only returned line was cut to fit the
	// budget (its remainder is not returned).
	PartialLine bool `json:"partial_line,omitempty" jsonschema:"the single returned line was cut to fit the budget"`
	// NextStartLine is the first line after the returned ones when the
	// file has more lines; 0 (omitted) at the end of the file.
	NextStartLine int `json:"next_start_line,omitempty" jsonschema:"start_line to continue with; absent at the end of the file"`
}

func readFilesHandler(runners workspace.Runners) func(context.Context, *kernel.Invocation, ReadFilesInput) (ReadFilesOutput, error) {
	return func(ctx context.Context, inv *kernel.Invocation, in ReadFilesInput) (ReadFilesOutput, error) {
		res, err := workspace.Do(ctx, runners.For(inv.Project), inv.Project, readOp, in)
		if err != nil {
			return ReadFilesOutput{}, err
		}
		inv.Observe(res.Observed...)
		ds := make([]kernel.Digest, 0, len(res.Output.Files))
		for _, f := range res.Output.Files {
			ds = append(ds, kernel.Digest{Path: f.Path, SHA256: f.SHA256})
		}
		inv.Saw(ds...)
		return res.Output, nil
	}
}

// readResult is what files.read returns: the output and the distinct paths
// read, in first-read order.
type readResult struct {
	Output   ReadFilesOutput `json:"output"`
	Observed []string        `json:"observed"`
}

func readOnRunner(ctx context.Context, _ workspace.Env, p project.Project, in ReadFilesInput) (readResult, error) {
	out, observed, err := readFiles(ctx, p, in)
	return readResult{Output: out, Observed: observed}, err
}

// readFiles runs read_files and returns the output together with the
// distinct paths it observed, in first-read order.
func readFiles(ctx context.Context, p project.Project, in ReadFilesInput) (ReadFilesOutput, []string, error) {
	if len(in.Files) == 0 || len(in.Files) > MaxReadFiles {
		return ReadFilesOutput{}, nil, failure.New(failure.InvalidArguments, "files must hold 1-%d entries, got %d", MaxReadFiles, len(in.Files))
	}
	for i, r := range in.Files {
		if err := validateRequest(i, r); err != nil {
			return ReadFilesOutput{}, nil, err
		}
	}
	t, err := p.OpenTree()
	if err != nil {
		return ReadFilesOutput{}, nil, err
	}
	defer t.Close()
	out := ReadFilesOutput{Files: make([]FileContent, 0, len(in.Files))}
	var observed []string
	seen := map[string]bool{}
	remaining := MaxReadResponseBytes
	for _, r := range in.Files {
		budget := r.MaxBytes
		if budget == 0 {
			budget = DefaultReadBytes
		}
		budget = min(budget, remaining)
		fc, err := readOne(ctx, t, r, budget)
		if err != nil {
			return ReadFilesOutput{}, nil, err
		}
		remaining -= len(fc.Content)
		out.ContentBytes += len(fc.Content)
		out.Files = append(out.Files, fc)
		if !seen[fc.Path] {
			seen[fc.Path] = true
			observed = append(observed, fc.Path)
		}
	}
	return out, observed, nil
}

func validateRequest(i int, r ReadRequest) error {
	switch {
	case r.StartLine < 0:
		return failure.New(failure.InvalidArguments, "files[%d].start_line must be at least 1", i)
	case r.EndLine < 0:
		return failure.New(failure.InvalidArguments, "files[%d].end_line must be at least 1", i)
	case r.EndLine > 0 && r.EndLine < max(r.StartLine, 1):
		return failure.New(failure.InvalidArguments, "files[%d].end_line %d is before start_line %d", i, r.EndLine, max(r.StartLine, 1))
	case r.MaxBytes < 0 || r.MaxBytes > MaxReadBytes:
		return failure.New(failure.InvalidArguments, "files[%d].max_bytes must be 1-%d", i, MaxReadBytes)
	}
	return nil
}

// openRegular resolves rel and opens it for reading through t. It fails
// with not_found when it does not exist, invalid_arguments when it is a
// directory or not a regular file, and the path policy's kinds otherwise
// (also when a symlink to the outside appeared after the check).
func openRegular(t *project.Tree, rel string) (*os.File, string, int64, error) {
	// O_NONBLOCK keeps a named pipe from blocking the open; it has no
	// effect on regular files.
	f, clean, err := t.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, clean, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, clean, 0, failure.Wrap(failure.OperationFailed, err, "%q cannot be read", clean)
	}
	if st.IsDir() {
		f.Close()
		return nil, clean, 0, failure.New(failure.InvalidArguments, "%q is a directory; list it with list_project_files", clean)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, clean, 0, failure.New(failure.InvalidArguments, "%q is not a regular file", clean)
	}
	return f, clean, st.Size(), nil
}

// readers recycles the 64 KiB line readers: one per call would dominate
// the allocation of small reads.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferBytes) }}

// readOne streams one file: the whole file is hashed and its lines
// counted, while at most budget bytes of the requested lines are kept.
func readOne(ctx context.Context, t *project.Tree, r ReadRequest, budget int) (FileContent, error) {
	f, clean, size, err := openRegular(t, r.Path)
	if err != nil {
		return FileContent{}, err
	}
	defer f.Close()
	return readOpen(ctx, f, clean, r, budget, size)
}

// readOpen streams the open regular file f, whose canonical path is clean,
// for readOne. size is the file's size when it was opened, a hint that
// sizes the content buffer once (the file may have changed since).
func readOpen(ctx context.Context, f *os.File, clean string, r ReadRequest, budget int, size int64) (FileContent, error) {
	start := max(r.StartLine, 1)
	end := r.EndLine
	if end == 0 {
		end = math.MaxInt
	}
	h := sha256.New()
	br := readers.Get().(*bufio.Reader)
	br.Reset(io.TeeReader(f, h))
	defer func() {
		br.Reset(nil) // drop the file before the reader is reused
		readers.Put(br)
	}()
	fc := FileContent{Path: clean}

	head, _ := br.Peek(walk.BinarySniffBytes)
	if walk.IsBinary(head) {
		n, err := io.Copy(io.Discard, br)
		if err != nil {
			return FileContent{}, failure.Wrap(failure.OperationFailed, err, "%q cannot be read", clean)
		}
		fc.Binary = true
		fc.SizeBytes = n
		fc.SHA256 = hex.EncodeToString(h.Sum(nil))
		fc.ReadRevision = revisionOf(fc.SHA256)
		return fc, nil
	}

	lr := lineReader{start: start, end: end, budget: budget, collecting: true}
	if start == 1 {
		lr.content = make([]byte, 0, min(int64(budget), max(size, 0)))
	}
	for {
		if err := ctx.Err(); err != nil {
			return FileContent{}, cancelled(err)
		}
		chunk, err := br.ReadSlice('\n')
		lr.feed(chunk)
		if err == nil || errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			lr.eof()
			break
		}
		return FileContent{}, failure.Wrap(failure.OperationFailed, err, "%q cannot be read", clean)
	}

	fc.SizeBytes = lr.size
	fc.SHA256 = hex.EncodeToString(h.Sum(nil))
	fc.ReadRevision = revisionOf(fc.SHA256)
	fc.TotalLines = lr.line
	if start > lr.line && start > 1 {
		return FileContent{}, failure.New(failure.InvalidArguments, "start_line %d is past the end of %q, which has %d lines", start, clean, lr.line).
			WithDetail("total_lines", lr.line)
	}
	fc.StartLine = start
	fc.EndLine = start - 1
	if lr.lastLine > 0 {
		fc.EndLine = lr.lastLine
	}
	fc.Content = string(lr.content)
	fc.InvalidUTF8 = !utf8.Valid(lr.content)
	fc.Truncated = lr.truncated
	fc.PartialLine = lr.partial
	next := fc.EndLine + 1
	if lr.truncated && !lr.partial {
		next = lr.stoppedAt
	}
	if next <= lr.line {
		fc.NextStartLine = next
	}
	return fc, nil
}

// revisionOf returns the read revision of content whose hex SHA-256 is sum;
// it equals filerev.Of(content) (a test holds the two together).
func revisionOf(sum string) string { return filerev.FromSHA256(sum) }

// lineReader collects the lines start..end of a stream fed in chunks, each
// chunk ending at a '\n' or at a buffer boundary.
type lineReader struct {
	start, end, budget int

	size       int64
	line       int  // current (or last) line number
	inLine     bool // the current line has started but not ended
	pending    []byte
	overflow   bool // the current line does not fit the remaining budget
	collecting bool
	content    []byte
	lastLine   int // last line appended to content
	truncated  bool
	partial    bool
	stoppedAt  int // first line not returned because of the budget
}

func (lr *lineReader) feed(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	lr.size += int64(len(chunk))
	if !lr.inLine {
		lr.line++
		lr.inLine = true
		lr.pending = lr.pending[:0]
		lr.overflow = false
	}
	if lr.collecting && lr.line >= lr.start && lr.line <= lr.end && !lr.overflow {
		room := lr.budget - len(lr.content) - len(lr.pending)
		take := chunk
		if len(take) > room {
			take = take[:room]
			lr.overflow = true
		}
		lr.pending = append(lr.pending, take...)
	}
	if chunk[len(chunk)-1] == '\n' {
		lr.endLine()
	}
}

func (lr *lineReader) eof() {
	if lr.inLine {
		lr.endLine()
	}
}

func (lr *lineReader) endLine() {
	lr.inLine = false
	if !lr.collecting || lr.line < lr.start || lr.line > lr.end {
		return
	}
	if !lr.overflow {
		lr.content = append(lr.content, lr.pending...)
		lr.lastLine = lr.line
		return
	}
	lr.collecting = false
	lr.truncated = true
	lr.stoppedAt = lr.line
	if lr.lastLine == 0 && len(lr.pending) > 0 {
		// Not even one line fits: return the part that does, so that the
		// caller always makes progress.
		lr.content = append(lr.content, redact.TrimIncompleteRune(lr.pending)...)
		lr.lastLine = lr.line
		lr.partial = true
	}
}
