package edit

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/filerev"
)

// target is a validated, resolved path.
type target struct {
	// rel is the canonical project-relative path; loc is the entry's
	// location in the project's Tree (its parent's symlinks expanded, its
	// last component not), used only through the Tree's root.
	rel, loc string
	// key identifies the file for locking: the absolute form of loc, so
	// that aliases through symlinked directories share one lock.
	key string
}

// plan is one fully computed change, ready to be staged and committed.
type plan struct {
	index   int
	op      string
	t       target
	changed bool
	content []byte      // new bytes (create and replace)
	mode    fs.FileMode // mode bits kept by a replace
	// dirs are the locations of the missing parent directories of a
	// create, outermost first.
	dirs   []string
	result FileResult

	// dir is the target's directory, opened through the Tree while
	// committing; tmp is the name of the staged temporary file in it.
	dir *os.Root
	tmp string
}

// applyEdits is apply_text_edits' effect on project p, reporting to fx.
func applyEdits(ctx context.Context, p project.Project, in ApplyInput, fx effects) (ApplyOutput, error) {
	if err := validateApply(in); err != nil {
		return ApplyOutput{}, err
	}
	tree, err := p.OpenTree()
	if err != nil {
		return ApplyOutput{}, err
	}
	defer tree.Close()
	targets := make([]target, len(in.Changes))
	seenRel := map[string]int{}
	seenKey := map[string]int{}
	for i, c := range in.Changes {
		t, err := resolve(tree, c.Path)
		if err != nil {
			return ApplyOutput{}, withChange(err, i, c.Path)
		}
		if j, dup := seenRel[t.rel]; dup {
			return ApplyOutput{}, withChange(failure.New(failure.InvalidArguments,
				"changes[%d] and changes[%d] both name %q; give each path once", j, i, t.rel), i, t.rel)
		}
		if j, dup := seenKey[t.key]; dup {
			return ApplyOutput{}, withChange(failure.New(failure.InvalidArguments,
				"changes[%d] (%q) and changes[%d] (%q) name the same file", j, targets[j].rel, i, t.rel), i, t.rel)
		}
		seenRel[t.rel], seenKey[t.key] = i, i
		targets[i] = t
	}

	keys := make([]string, len(targets))
	for i, t := range targets {
		keys[i] = t.key
	}
	unlock, err := lockPaths(ctx, keys)
	if err != nil {
		return ApplyOutput{}, err
	}
	defer unlock()

	plans := make([]*plan, len(in.Changes))
	for i, c := range in.Changes {
		p, err := planChange(tree, i, c, targets[i])
		if err != nil {
			return ApplyOutput{}, err
		}
		plans[i] = p
	}

	out := ApplyOutput{DryRun: in.DryRun, Files: make([]FileResult, len(plans)), ChangedPaths: []string{}}
	diffs := map[string]string{}
	for _, p := range plans {
		if p.changed {
			diffs[p.t.rel] = diffFact(p.result, p.result.Preview)
		}
	}
	for i, p := range plans {
		if !in.DryRun {
			p.result.Preview, p.result.PreviewTruncated = "", false
		}
		out.Files[i] = p.result
		if p.changed {
			out.ChangedPaths = append(out.ChangedPaths, p.t.rel)
		}
	}
	if in.DryRun {
		fx.dryRun()
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return ApplyOutput{}, failure.Wrap(failure.Interrupted, err, "call was cancelled before anything was written")
	}
	written, err := commit(tree, plans, fx.before)
	if len(written) > 0 {
		fx.changed(written, diffs)
	}
	if err != nil {
		return ApplyOutput{}, err
	}
	return out, nil
}

// validateApply checks everything about the input that needs no I/O.
func validateApply(in ApplyInput) error {
	if len(in.Changes) == 0 || len(in.Changes) > MaxChanges {
		return failure.New(failure.InvalidArguments, "changes must hold 1-%d items, got %d", MaxChanges, len(in.Changes))
	}
	for i, c := range in.Changes {
		if err := validateChange(c); err != nil {
			return withChange(err, i, c.Path)
		}
	}
	return nil
}

func validateChange(c Change) error {
	if err := validateFences(c.ExpectedReadRevision, c.ExpectedSHA256); err != nil {
		return err
	}
	fenced := c.ExpectedReadRevision != "" || c.ExpectedSHA256 != ""
	switch c.Op {
	case OpReplace:
		if !fenced {
			return failure.New(failure.InvalidArguments, "replace of %q needs expected_read_revision or expected_sha256 from your last read", c.Path)
		}
		if c.Content != nil {
			return failure.New(failure.InvalidArguments, "content is only for op=create; replace takes edits")
		}
		if len(c.Edits) == 0 || len(c.Edits) > MaxEditsPerChange {
			return failure.New(failure.InvalidArguments, "replace needs 1-%d edits, got %d", MaxEditsPerChange, len(c.Edits))
		}
		for j, e := range c.Edits {
			if err := validateEdit(e); err != nil {
				return withEdit(err, j)
			}
		}
	case OpCreate:
		if fenced {
			return failure.New(failure.InvalidArguments, "create takes no fence: the file must not exist")
		}
		if len(c.Edits) > 0 {
			return failure.New(failure.InvalidArguments, "edits are only for op=replace; create takes content")
		}
		if c.Content == nil {
			return failure.New(failure.InvalidArguments, "create needs content (it may be empty)")
		}
		if len(*c.Content) > MaxContentBytes {
			return failure.New(failure.InvalidArguments, "content is %d bytes; the limit is %d", len(*c.Content), MaxContentBytes)
		}
	case OpDelete:
		if !fenced {
			return failure.New(failure.InvalidArguments, "delete of %q needs expected_read_revision or expected_sha256 from your last read", c.Path)
		}
		if len(c.Edits) > 0 || c.Content != nil {
			return failure.New(failure.InvalidArguments, "delete takes neither edits nor content")
		}
	default:
		return failure.New(failure.InvalidArguments, "op must be replace, create or delete, got %q", truncate(c.Op, 32))
	}
	return nil
}

func validateEdit(e TextEdit) error {
	if e.OldText == "" {
		return failure.New(failure.InvalidArguments, "old_text must not be empty")
	}
	if len(e.OldText) > MaxContentBytes || len(e.NewText) > MaxContentBytes {
		return failure.New(failure.InvalidArguments, "old_text and new_text are limited to %d bytes each", MaxContentBytes)
	}
	if e.Occurrence != nil && (*e.Occurrence < 1 || *e.Occurrence > MaxMatchCount) {
		return failure.New(failure.InvalidArguments, "occurrence must be 1-%d", MaxMatchCount)
	}
	if e.ExpectedMatchCount != nil && (*e.ExpectedMatchCount < 1 || *e.ExpectedMatchCount > MaxMatchCount) {
		return failure.New(failure.InvalidArguments, "expected_match_count must be 1-%d", MaxMatchCount)
	}
	if e.Occurrence != nil && e.ExpectedMatchCount != nil && *e.Occurrence > *e.ExpectedMatchCount {
		return failure.New(failure.InvalidArguments, "occurrence %d is larger than expected_match_count %d", *e.Occurrence, *e.ExpectedMatchCount)
	}
	return nil
}

// validateFences checks the syntax of the fences that are present.
func validateFences(rev, sum string) error {
	if rev != "" {
		r := strings.ToLower(strings.TrimSpace(rev))
		if !strings.HasPrefix(r, filerev.Prefix) || !isHex(r[len(filerev.Prefix):], 32) {
			return failure.New(failure.InvalidArguments, "expected_read_revision must be %s followed by 32 hex digits, as returned by a read", filerev.Prefix)
		}
	}
	if sum != "" && !isHex(strings.ToLower(strings.TrimSpace(sum)), 64) {
		return failure.New(failure.InvalidArguments, "expected_sha256 must be 64 hex digits")
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// fenceHolds reports whether every fence that is present names content.
func fenceHolds(rev, sum string, content []byte) bool {
	if rev != "" && !filerev.Matches(rev, content) {
		return false
	}
	if sum != "" && !filerev.Matches(sum, content) {
		return false
	}
	return true
}

// resolve applies the path policy and this package's extra rules, and
// computes the lock key.
func resolve(tree *project.Tree, rel string) (target, error) {
	loc, clean, err := tree.ResolveEntry(rel)
	if err != nil {
		return target{}, err
	}
	if clean == "." {
		return target{}, failure.New(failure.InvalidArguments, "path must name a file, not the project root")
	}
	for _, part := range strings.Split(clean, "/") {
		if strings.EqualFold(part, ".git") {
			return target{}, failure.New(failure.PermissionDenied, "path %q is inside git metadata; edit tools never write there", clean)
		}
	}
	return target{rel: clean, loc: loc, key: filepath.Join(tree.Project().Root, loc)}, nil
}

// planChange computes change i in memory. It reads but never writes.
func planChange(tree *project.Tree, i int, c Change, t target) (*plan, error) {
	p := &plan{index: i, op: c.Op, t: t, result: FileResult{Path: t.rel, Op: c.Op}}
	switch c.Op {
	case OpCreate:
		dirs, err := planCreate(tree, t)
		if err != nil {
			return nil, withChange(err, i, t.rel)
		}
		content := []byte(*c.Content)
		p.dirs, p.content, p.changed = dirs, content, true
		p.result.Changed = true
		p.result.ReadRevision, p.result.SHA256, p.result.Bytes = filerev.Of(content), filerev.SHA256(content), len(content)
		p.result.AddedLines = countLines(content)
		p.result.Preview, p.result.PreviewTruncated = previewWhole('+', content)
		return p, nil
	}

	old, mode, err := readExisting(tree, t)
	if err != nil {
		return nil, withChange(err, i, t.rel)
	}
	if !fenceHolds(c.ExpectedReadRevision, c.ExpectedSHA256, old) {
		return nil, conflict(ConflictSHA256Mismatch, i, t.rel,
			"%q changed since it was read (its current read revision differs from the fence); read it again", t.rel).
			WithDetail("reason", ReasonFenceMismatch)
	}
	p.result.PreviousReadRevision = filerev.Of(old)
	if c.Op == OpDelete {
		p.changed = true
		p.result.Changed = true
		p.result.RemovedLines = countLines(old)
		p.result.Preview, p.result.PreviewTruncated = previewWhole('-', old)
		return p, nil
	}

	reps, err := matchEdits(i, t.rel, old, c.Edits)
	if err != nil {
		return nil, err
	}
	content := applyReplacements(old, reps)
	if len(content) > MaxFileBytes {
		return nil, withChange(failure.New(failure.InvalidArguments,
			"the edited file would be %d bytes; the limit is %d", len(content), MaxFileBytes), i, t.rel)
	}
	p.content, p.mode = content, mode
	p.changed = !bytes.Equal(old, content)
	p.result.Changed = p.changed
	p.result.ReadRevision, p.result.SHA256, p.result.Bytes = filerev.Of(content), filerev.SHA256(content), len(content)
	p.result.Replacements = len(reps)
	p.result.AddedLines, p.result.RemovedLines, p.result.Preview, p.result.PreviewTruncated = diffStats(old, reps)
	return p, nil
}

// planCreate checks that t does not exist and that its parent is, or can
// become, a directory. It returns the locations of the missing parent
// directories, outermost first.
func planCreate(tree *project.Tree, t target) ([]string, error) {
	root := tree.Root()
	if _, err := root.Lstat(t.loc); err == nil {
		return nil, conflictNoIndex(ConflictSHA256Mismatch,
			"%q already exists; read it and use op=replace (or write_project_file with a fence)", t.rel).
			WithDetail("reason", ReasonAlreadyExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, ioFailure(tree, err, t.rel)
	}
	var missing []string
	dir := filepath.Dir(t.loc)
	for {
		fi, err := root.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return nil, failure.New(failure.InvalidArguments, "a parent of %q is not a directory", t.rel)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, ioFailure(tree, err, t.rel)
		}
		if dir == "." {
			return nil, failure.New(failure.InvalidArguments, "no existing parent directory for %q", t.rel)
		}
		missing = append([]string{dir}, missing...)
		dir = filepath.Dir(dir)
	}
	return missing, nil
}

// readExisting reads the regular file t, bounded by MaxFileBytes, and
// returns its bytes and the mode bits to keep. A missing file is a
// sha256_mismatch conflict (reason missing) without change index; callers
// add it.
func readExisting(tree *project.Tree, t target) ([]byte, fs.FileMode, error) {
	fi, err := tree.Root().Lstat(t.loc)
	if errors.Is(err, fs.ErrNotExist) {
		if e := tree.Escaped(t.rel); e != nil {
			return nil, 0, e
		}
		return nil, 0, conflictNoIndex(ConflictSHA256Mismatch,
			"%q does not exist (it was deleted or moved since it was read)", t.rel).
			WithDetail("reason", ReasonMissing)
	}
	if err != nil {
		return nil, 0, ioFailure(tree, err, t.rel)
	}
	if err := checkRegular(fi, t.rel); err != nil {
		return nil, 0, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, 0, failure.New(failure.InvalidArguments, "%q is %d bytes; these tools edit files of at most %d bytes", t.rel, fi.Size(), MaxFileBytes)
	}
	f, err := tree.Root().OpenFile(t.loc, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, ioFailure(tree, err, t.rel)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(st, fi) {
		return nil, 0, failure.New(failure.OperationFailed, "%q was replaced while it was read; read it again", t.rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, 0, ioFailure(tree, err, t.rel)
	}
	if len(b) > MaxFileBytes {
		return nil, 0, failure.New(failure.InvalidArguments, "%q is larger than %d bytes", t.rel, MaxFileBytes)
	}
	return b, keptMode(fi.Mode()), nil
}

func checkRegular(fi fs.FileInfo, rel string) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return failure.New(failure.InvalidArguments, "%q is a symbolic link; edit the file it points to", rel)
	case fi.IsDir():
		return failure.New(failure.InvalidArguments, "%q is a directory", rel)
	case !fi.Mode().IsRegular():
		return failure.New(failure.InvalidArguments, "%q is not a regular file", rel)
	}
	return nil
}

// keptMode is the part of a file mode a rewrite preserves.
func keptMode(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// replacement replaces content[start:end] with text; edit is the index of
// the edit it came from.
type replacement struct {
	start, end int
	text       string
	edit       int
}

// matchEdits finds the replacements of every edit of change i in old, and
// returns a conflict when an edit does not select its matches
// unambiguously or when two selected matches overlap. The result is sorted
// by start.
func matchEdits(i int, rel string, old []byte, edits []TextEdit) ([]replacement, error) {
	var reps []replacement
	for j, e := range edits {
		needle := []byte(e.OldText)
		keep := MaxCandidateLines
		if e.Occurrence != nil {
			keep = max(keep, *e.Occurrence)
		}
		if e.ExpectedMatchCount != nil {
			keep = max(keep, *e.ExpectedMatchCount)
		}
		offs, n := findAll(old, needle, keep)
		fail := func(kind, format string, args ...any) error {
			err := conflict(kind, i, rel, format, args...).
				WithDetail("edit_index", j).WithDetail("match_count", n)
			lines := candidateLines(old, offs)
			if n == 0 {
				lines = nearMisses(old, e.OldText)
			}
			return err.WithDetail("candidate_lines", lines)
		}
		switch {
		case n == 0:
			return nil, fail(ConflictMatchNotFound, "edits[%d].old_text does not occur in %q; read the file again and copy the text exactly", j, rel)
		case e.ExpectedMatchCount != nil && n > *e.ExpectedMatchCount:
			return nil, fail(ConflictMultipleMatches, "edits[%d].old_text occurs %d times in %q, expected %d", j, n, rel, *e.ExpectedMatchCount)
		case e.ExpectedMatchCount != nil && n < *e.ExpectedMatchCount:
			return nil, fail(ConflictMatchNotFound, "edits[%d].old_text occurs %d times in %q, expected %d", j, n, rel, *e.ExpectedMatchCount)
		case e.Occurrence != nil && *e.Occurrence > n:
			return nil, fail(ConflictOccurrenceOutOfRange, "edits[%d].occurrence is %d but old_text occurs %d times in %q", j, *e.Occurrence, n, rel)
		case e.Occurrence != nil:
			off := offs[*e.Occurrence-1]
			reps = append(reps, replacement{start: off, end: off + len(needle), text: e.NewText, edit: j})
		case e.ExpectedMatchCount != nil:
			for _, off := range offs {
				reps = append(reps, replacement{start: off, end: off + len(needle), text: e.NewText, edit: j})
			}
		case n > 1:
			return nil, fail(ConflictMultipleMatches, "edits[%d].old_text occurs %d times in %q; add surrounding text, or set occurrence or expected_match_count", j, n, rel)
		default:
			reps = append(reps, replacement{start: offs[0], end: offs[0] + len(needle), text: e.NewText, edit: j})
		}
	}
	sort.SliceStable(reps, func(a, b int) bool { return reps[a].start < reps[b].start })
	for k := 1; k < len(reps); k++ {
		if reps[k].start < reps[k-1].end {
			a, b := reps[k-1].edit, reps[k].edit
			return nil, conflict(ConflictOverlappingEdits, i, rel,
				"edits[%d] and edits[%d] match overlapping text in %q; merge them into one edit", min(a, b), max(a, b), rel).
				WithDetail("edit_indexes", []int{min(a, b), max(a, b)}).
				WithDetail("candidate_lines", []int{lineOf(old, reps[k].start)})
		}
	}
	return reps, nil
}

// findAll returns the offsets of the first keep non-overlapping matches of
// needle in hay, and the total number of matches.
func findAll(hay, needle []byte, keep int) ([]int, int) {
	var offs []int
	n := 0
	for pos := 0; pos <= len(hay); {
		k := bytes.Index(hay[pos:], needle)
		if k < 0 {
			break
		}
		if len(offs) < keep {
			offs = append(offs, pos+k)
		}
		n++
		pos += k + len(needle)
	}
	return offs, n
}

// lineOf returns the 1-based line number of offset off.
func lineOf(b []byte, off int) int { return bytes.Count(b[:off], []byte{'\n'}) + 1 }

func candidateLines(b []byte, offs []int) []int {
	lines := []int{}
	for _, off := range offs {
		if len(lines) == MaxCandidateLines {
			break
		}
		lines = append(lines, lineOf(b, off))
	}
	return lines
}

// nearMisses returns up to MaxCandidateLines lines that contain the first
// non-blank line of old, compared without surrounding whitespace: the
// likely places an inexact old_text was meant to match.
func nearMisses(b []byte, old string) []int {
	lines := []int{}
	var probe string
	for _, l := range strings.Split(old, "\n") {
		if probe = strings.TrimSpace(l); probe != "" {
			break
		}
	}
	if probe == "" {
		return lines
	}
	for n, l := range bytes.Split(b, []byte{'\n'}) {
		if bytes.Contains(l, []byte(probe)) {
			lines = append(lines, n+1)
			if len(lines) == MaxCandidateLines {
				break
			}
		}
	}
	return lines
}

func applyReplacements(old []byte, reps []replacement) []byte {
	size := len(old)
	for _, r := range reps {
		size += len(r.text) - (r.end - r.start)
	}
	out := make([]byte, 0, size)
	pos := 0
	for _, r := range reps {
		out = append(out, old[pos:r.start]...)
		out = append(out, r.text...)
		pos = r.end
	}
	return append(out, old[pos:]...)
}

// countLines counts lines, a final line without newline included.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// splitLines splits b into lines that keep their newline.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:k+1])
		b = b[k+1:]
	}
	return out
}

// diffStats groups the replacements into blocks of whole lines, trims the
// lines each block leaves unchanged at its ends, and counts (and previews)
// the rest as removed and added lines.
func diffStats(old []byte, reps []replacement) (added, removed int, preview string, truncated bool) {
	var pv previewer
	delta := 0 // new line number minus old line number before the block
	for k := 0; k < len(reps); {
		ls := bytes.LastIndexByte(old[:reps[k].start], '\n') + 1
		le := lineEnd(old, reps[k].end)
		m := k + 1
		for m < len(reps) && reps[m].start < le {
			le = max(le, lineEnd(old, reps[m].end))
			m++
		}
		var nb []byte
		pos := ls
		for _, r := range reps[k:m] {
			nb = append(nb, old[pos:r.start]...)
			nb = append(nb, r.text...)
			pos = r.end
		}
		nb = append(nb, old[pos:le]...)
		ol, nl := splitLines(old[ls:le]), splitLines(nb)
		pre := 0
		for pre < len(ol) && pre < len(nl) && bytes.Equal(ol[pre], nl[pre]) {
			pre++
		}
		suf := 0
		for suf < len(ol)-pre && suf < len(nl)-pre && bytes.Equal(ol[len(ol)-1-suf], nl[len(nl)-1-suf]) {
			suf++
		}
		rm, ad := ol[pre:len(ol)-suf], nl[pre:len(nl)-suf]
		removed += len(rm)
		added += len(ad)
		oldStart := lineOf(old, ls) + pre
		if len(rm) > 0 || len(ad) > 0 {
			pv.hunk(oldStart, len(rm), oldStart+delta, len(ad), rm, ad)
		}
		delta += len(nl) - len(ol)
		k = m
	}
	return added, removed, pv.b.String(), pv.truncated
}

// lineEnd returns the offset just after the newline that ends the line
// holding offset end-1 (or len(b)).
func lineEnd(b []byte, end int) int {
	if end > 0 && b[end-1] == '\n' {
		return end
	}
	k := bytes.IndexByte(b[end:], '\n')
	if k < 0 {
		return len(b)
	}
	return end + k + 1
}

// previewer builds a diff-like preview bounded by MaxPreviewBytes, cutting
// only at line boundaries.
type previewer struct {
	b         strings.Builder
	truncated bool
}

func (pv *previewer) line(s string) bool {
	if pv.truncated {
		return false
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n\\ No newline at end of file\n"
	}
	if pv.b.Len()+len(s) > MaxPreviewBytes {
		pv.truncated = true
		return false
	}
	pv.b.WriteString(s)
	return true
}

func (pv *previewer) hunk(oldStart, oldN, newStart, newN int, rm, ad [][]byte) {
	if !pv.line(fmt.Sprintf("@@ -%d,%d +%d,%d @@\n", oldStart, oldN, newStart, newN)) {
		return
	}
	for _, l := range rm {
		if !pv.line("-" + string(l)) {
			return
		}
	}
	for _, l := range ad {
		if !pv.line("+" + string(l)) {
			return
		}
	}
}

// previewWhole previews a whole file as added ('+') or removed ('-').
func previewWhole(sign byte, b []byte) (string, bool) {
	var pv previewer
	lines := splitLines(b)
	if sign == '+' {
		pv.hunk(0, 0, 1, len(lines), nil, lines)
	} else {
		pv.hunk(1, len(lines), 0, 0, lines, nil)
	}
	return pv.b.String(), pv.truncated
}

// conflict returns an edit_conflict failure with the standard detail.
func conflict(kind string, i int, rel, format string, args ...any) *failure.Error {
	return conflictNoIndex(kind, format, args...).WithDetail("change_index", i).WithDetail("path", rel)
}

func conflictNoIndex(kind, format string, args ...any) *failure.Error {
	return failure.New(failure.EditConflict, format, args...).WithDetail("conflict_kind", kind)
}

// withChange adds change_index and path detail to a failure, prefixing
// its message with the change. A negative i (write_project_file) leaves
// err as it is.
func withChange(err error, i int, rel string) error {
	var fe *failure.Error
	if i < 0 || !errors.As(err, &fe) {
		return err
	}
	if _, ok := fe.Detail["change_index"]; ok {
		return fe
	}
	if fe.Kind != failure.EditConflict {
		fe.Message = fmt.Sprintf("changes[%d]: %s", i, fe.Message)
	}
	return fe.WithDetail("change_index", i).WithDetail("path", truncate(rel, 256))
}

func withEdit(err error, j int) error {
	var fe *failure.Error
	if errors.As(err, &fe) {
		fe.Message = fmt.Sprintf("edits[%d]: %s", j, fe.Message)
		return fe.WithDetail("edit_index", j)
	}
	return err
}

// ioFailure maps an I/O error on rel through tree to a stable kind without
// exposing the absolute path. When rel now resolves outside the root (a
// symlink appeared after the check, and the root handle refused it), it is
// the path policy's permission_denied.
func ioFailure(tree *project.Tree, err error, rel string) error {
	if e := tree.Escaped(rel); e != nil {
		return e
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return failure.Wrap(failure.InvalidArguments, err, "a parent of %q is not a directory", rel)
	}
	if errors.Is(err, fs.ErrPermission) {
		return failure.Wrap(failure.PermissionDenied, err, "permission denied on %q", rel)
	}
	return failure.Wrap(failure.OperationFailed, err, "cannot access %q", rel)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
