package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
)

// A scan searches the groups' files: one goroutine walks them in order and
// decides which to read (globs), GOMAXPROCS readers read (or find too
// large) and search them, and the results are merged in walk order, where
// MaxScannedFiles is applied, so the output is the one a sequential search
// would give. Readers may have read some files past the bound (at most
// the batches in flight); their results are dropped.
type scan struct {
	tree           *project.Tree
	includeIgnored bool
	contextLines   int
	maxMatches     int
	maxReads       int
	// progress, when set, is told the number of files read every
	// ProgressEvery files.
	progress func(files int)

	// Set by the walker; read once it has finished.
	// walkErr ends the scan after the files the walk sent before it.
	walkErr error

	// Set by the merge.
	scanned, binary, large map[string]bool
	reads                  int
	incomplete             bool
}

// A batch is consecutive jobs handed to one reader together, numbered in
// walk order; handing files over one by one cost a goroutine wake-up each.
type batch struct {
	seq  int64
	jobs []job
}

// batchResult holds the results of a batch's jobs, in order.
type batchResult struct {
	seq     int64
	results []result
}

// job is one file to read, numbered in walk order.
type job struct {
	seq int64
	e   walk.Entry
	qs  []*compiled // the queries whose globs admit the file
	// dir, retained, holds the file when the walk found it (rather than
	// the caller naming it); the reader releases it.
	dir *walk.Dir
}

// result is what reading and searching one job's file gave.
type result struct {
	seq   int64
	path  string
	state fileState
	err   error
	hits  []queryHits // by job.qs
}

type fileState int

const (
	fileGone fileState = iota // vanished or unreadable since the walk listed it
	fileScanned
	fileBinary
	fileLarge
	fileFailed // err ends the scan
)

// queryHits are one query's matching lines in one file; matches holds
// the first of them (none when the query was already full).
type queryHits struct {
	q       *compiled
	count   int
	matches []Match
}

// A batch holds at most batchFiles jobs; the walk hands a batch over
// sooner when the readers are idle (no batch waiting).
const batchFiles = 16

// inflightPerReader bounds the batches in flight (walked, not yet merged)
// per reader.
const inflightPerReader = 4

func (s *scan) run(ctx context.Context, groups []*group) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readers := runtime.GOMAXPROCS(0)
	window := readers * inflightPerReader
	jobs := make(chan batch, window)
	results := make(chan batchResult, window)
	slots := make(chan struct{}, window)

	var wg sync.WaitGroup
	wg.Go(func() { s.walk(ctx, groups, jobs, slots) })
	var readersWG sync.WaitGroup
	for range readers {
		readersWG.Go(func() {
			for b := range jobs {
				r := batchResult{seq: b.seq, results: make([]result, len(b.jobs))}
				for i, j := range b.jobs {
					r.results[i] = s.read(ctx, j)
				}
				results <- r
			}
		})
	}
	go func() { readersWG.Wait(); close(results) }()

	err := s.merge(results, slots)
	cancel()
	for range results { // let the readers finish before the tree closes
		<-slots
	}
	wg.Wait()
	return err
}

// walk sends the groups' files as batches of jobs, in order, and closes
// jobs.
func (s *scan) walk(ctx context.Context, groups []*group, jobs chan batch, slots chan struct{}) {
	defer close(jobs)
	var fileSeq, batchSeq int64
	var pending []job
	// flush sends the pending jobs; when the scan is cancelled it
	// releases their directories instead.
	flush := func() bool {
		if len(pending) == 0 {
			return true
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			for _, j := range pending {
				if j.dir != nil {
					j.dir.Release()
				}
			}
			pending = nil
			return false
		}
		jobs <- batch{seq: batchSeq, jobs: pending}
		batchSeq++
		pending = make([]job, 0, batchFiles)
		return true
	}
	defer flush()
	// visit queues the file e.
	visit := func(e walk.Entry, queries []*compiled) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var qs []*compiled
		for _, q := range queries {
			if q.globs.Match(e.Path) {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			return nil
		}
		if e.Dir != nil {
			e.Dir.Retain()
		}
		pending = append(pending, job{seq: fileSeq, e: e, qs: qs, dir: e.Dir})
		fileSeq++
		if (len(pending) >= batchFiles || len(jobs) == 0) && !flush() {
			return ctx.Err()
		}
		return nil
	}
	for _, g := range groups {
		var err error
		if g.isFile {
			err = visit(walk.Entry{Path: g.rel, Loc: g.loc, Kind: walk.KindFile, Size: g.size}, g.queries)
		} else {
			opts := walk.Options{IncludeIgnored: s.includeIgnored, NoSizes: true}
			err = walk.Walk(ctx, s.tree.Root(), g.rel, g.loc, opts, func(e walk.Entry) error {
				if e.Kind != walk.KindFile {
					return nil
				}
				return visit(e, g.queries)
			})
		}
		var fe *failure.Error
		switch {
		case err == nil:
			continue
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			err = cancelled(err)
		case errors.As(err, &fe):
		default:
			err = s.tree.Failure(err, g.rel)
		}
		s.walkErr = err
		return
	}
}

// merge takes the results in walk order until the walk ends, a result
// fails the scan (it returns that failure) or a read beyond maxReads
// comes (the scan is incomplete). Files found too large are not reads.
func (s *scan) merge(results <-chan batchResult, slots <-chan struct{}) error {
	pending := map[int64]batchResult{}
	var next int64
	for b := range results {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-slots
			if err := s.mergeBatch(b); err != nil || s.incomplete {
				return err
			}
		}
	}
	return s.walkErr // the results are closed: the walk has ended
}

// mergeBatch takes a batch's results in order, as merge describes.
func (s *scan) mergeBatch(b batchResult) error {
	for _, r := range b.results {
		if r.state == fileFailed {
			return r.err
		}
		if r.state != fileLarge {
			if s.reads == s.maxReads {
				s.incomplete = true
				return nil
			}
			s.reads++
			if s.progress != nil && s.reads%ProgressEvery == 0 {
				s.progress(s.reads)
			}
		}
		s.take(r)
	}
	return nil
}

// take merges one file's result.
func (s *scan) take(r result) {
	switch r.state {
	case fileScanned:
		s.scanned[r.path] = true
	case fileBinary:
		s.binary[r.path] = true
	case fileLarge:
		s.large[r.path] = true
	}
	for _, h := range r.hits {
		q := h.q
		if h.count == 0 {
			continue
		}
		q.count += h.count
		q.files++
		room := s.maxMatches - len(q.matches)
		q.matches = append(q.matches, h.matches[:min(room, len(h.matches))]...)
		if len(q.matches) >= s.maxMatches && q.fullAt.Load() > r.seq {
			q.fullAt.Store(r.seq)
		}
	}
}

var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// read reads and searches one job's file: a walked file through its
// directory, which it releases, and a named one through the tree's root.
func (s *scan) read(ctx context.Context, j job) result {
	if j.dir != nil {
		defer j.dir.Release()
	}
	r := result{seq: j.seq, path: j.e.Path}
	if ctx.Err() != nil {
		r.state, r.err = fileFailed, cancelled(ctx.Err())
		return r
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	var content []byte
	var large bool
	var err error
	if j.dir != nil {
		content, large, err = j.dir.ReadRegular(j.e.Name(), bp, MaxFileBytes)
	} else if j.e.Size > MaxFileBytes {
		large = true
	} else {
		var f *os.File
		if f, err = s.tree.Root().OpenFile(j.e.Loc, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			content, err = readSmall(f, bp)
			f.Close()
			large = len(content) > MaxFileBytes
		}
	}
	switch {
	case err != nil && j.dir != nil:
		return r // fileGone
	case err != nil:
		r.state, r.err = fileFailed, s.tree.Failure(err, j.e.Path)
		return r
	case large:
		r.state = fileLarge
		return r
	case walk.IsBinary(content):
		r.state = fileBinary
		return r
	}
	r.state = fileScanned
	r.hits = make([]queryHits, len(j.qs))
	for i, q := range j.qs {
		r.hits[i] = s.searchFile(content, j.e.Path, q, j.seq)
	}
	return r
}

// readSmall reads at most MaxFileBytes+1 bytes of f, which must be a
// regular file, into *buf (grown as needed). f was opened through a root,
// so a symlink found in its place (a walked file replaced since the walk
// listed it) was followed only within that root.
func readSmall(f *os.File, buf *[]byte) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	want := int(min(st.Size(), MaxFileBytes)) + 1
	if cap(*buf) < want {
		*buf = make([]byte, want+want/4)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < MaxFileBytes+1 {
		if n == len(b) {
			*buf = append(b, 0)[:0]
			b = (*buf)[:cap(*buf)]
		}
		m, err := f.Read(b[n:min(len(b), MaxFileBytes+1)])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return b[:n], nil
}

// searchFile finds q's matching lines in content. Only the lines holding
// q's prefilter factor are tested; matches are built until max_matches
// unless an earlier file already filled q.
func (s *scan) searchFile(content []byte, path string, q *compiled, seq int64) queryHits {
	h := queryHits{q: q}
	m := q.m
	build := q.fullAt.Load() > seq
	// next returns the start of the first line at or after pos that may
	// match, or -1.
	next := func(pos int) int {
		var i int
		switch {
		case m.factor != nil:
			i = m.factor.index(content[pos:])
		case m.factorFold != nil:
			i = m.factorFold.index(content[pos:])
		default:
			return pos
		}
		if i < 0 {
			return -1
		}
		return pos + bytes.LastIndexByte(content[pos:pos+i], '\n') + 1
	}
	lineNo, counted := 1, 0 // lineNo is the number of the line starting at counted
	for pos := 0; pos < len(content); {
		start := next(pos)
		if start < 0 {
			break
		}
		end := len(content)
		if i := bytes.IndexByte(content[start:], '\n'); i >= 0 {
			end = start + i
		}
		pos = end + 1
		line := trimCR(content[start:end])
		at := m.find(line)
		if at < 0 {
			continue
		}
		lineNo += bytes.Count(content[counted:start], []byte{'\n'})
		counted = start
		h.count++
		if !build || len(h.matches) >= s.maxMatches {
			continue
		}
		h.matches = append(h.matches, s.match(content, q.index, path, start, end, lineNo, line, at))
	}
	return h
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// match builds the match on the line content[start:end] (line, without
// its '\r'), number n, whose first match is at byte at.
func (s *scan) match(content []byte, query int, path string, start, end, n int, line []byte, at int) Match {
	m := Match{QueryIndex: query, Path: path, Line: n, Column: utf8.RuneCount(line[:at]) + 1}
	m.Text, m.TextStartColumn, m.TextTruncated = window(line, m.Column-1)
	// Lines before: walk back from start.
	b := start
	for k := 0; k < s.contextLines && b > 0; k++ {
		prevEnd := b - 1 // the '\n' ending the previous line
		prevStart := bytes.LastIndexByte(content[:prevEnd], '\n') + 1
		m.Before = append(m.Before, contextLine(trimCR(content[prevStart:prevEnd]), n-k-1))
		b = prevStart
	}
	slices.Reverse(m.Before)
	a := end
	for k := 0; k < s.contextLines && a < len(content); k++ {
		nextStart := a + 1
		if nextStart >= len(content) {
			break
		}
		nextEnd := len(content)
		if i := bytes.IndexByte(content[nextStart:], '\n'); i >= 0 {
			nextEnd = nextStart + i
		}
		m.After = append(m.After, contextLine(trimCR(content[nextStart:nextEnd]), n+k+1))
		a = nextEnd
	}
	return m
}
