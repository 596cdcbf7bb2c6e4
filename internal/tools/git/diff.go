package git

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// MaxUntrackedOutputBytes bounds the raw untracked listing read from git.
const MaxUntrackedOutputBytes = 1 << 20

// checkPaths validates the paths handed to git: each goes through the path
// policy and is then looked up through the project's root handle, so that
// a path that leads outside the root now (a symlink swapped in after the
// policy check included) is refused before git runs. A path that does not
// exist is allowed: git diffs deleted files. It returns the canonical
// paths.
func checkPaths(p project.Project, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	tree, err := p.OpenTree()
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	specs := make([]string, 0, len(paths))
	for _, rel := range paths {
		loc, clean, err := tree.ResolveEntry(rel)
		if err != nil {
			return nil, err
		}
		if _, err := tree.Root().Lstat(loc); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, tree.Failure(err, clean)
		}
		specs = append(specs, clean)
	}
	return specs, nil
}

// patchOverheadBytes is read beyond max_bytes of patch text, for file and
// hunk headers and line prefixes.
const patchOverheadBytes = 256 << 10

func (t *Tools) gitDiff(ctx context.Context, inv *kernel.Invocation, in DiffInput) (DiffOutput, error) {
	return workspace.Do(ctx, t.Runners.For(inv.Project), inv.Project, diffOp, in)
}

// diff is git_diff's effect, run where the repository is.
func diff(ctx context.Context, env workspace.Env, p project.Project, in DiffInput) (DiffOutput, error) {
	ctxLines, maxBytes := DefaultContextLines, DefaultDiffBytes
	if in.ContextLines != nil {
		if *in.ContextLines < 0 || *in.ContextLines > MaxContextLines {
			return DiffOutput{}, failure.New(failure.InvalidArguments, "context_lines must be 0-%d", MaxContextLines)
		}
		ctxLines = *in.ContextLines
	}
	if in.MaxBytes != nil {
		if *in.MaxBytes < 1 || *in.MaxBytes > MaxDiffBytes {
			return DiffOutput{}, failure.New(failure.InvalidArguments, "max_bytes must be 1-%d", MaxDiffBytes)
		}
		maxBytes = *in.MaxBytes
	}
	if len(in.Paths) > MaxDiffPaths {
		return DiffOutput{}, failure.New(failure.InvalidArguments, "paths may hold at most %d entries, got %d", MaxDiffPaths, len(in.Paths))
	}
	specs, err := checkPaths(p, in.Paths)
	if err != nil {
		return DiffOutput{}, err
	}
	if len(specs) == 0 {
		specs = []string{"."}
	}

	ctx, cancel := gitrepo.WithTimeout(ctx)
	defer cancel()
	r, err := gitrepo.Open(ctx, env.Host, p.Root)
	if err != nil {
		return DiffOutput{}, err
	}
	if !r.Inside {
		return DiffOutput{}, failure.New(failure.InvalidArguments,
			"the project is not inside a git work tree; git_status reports is_git_repo=false").
			WithDetail("is_git_repo", false)
	}

	if !in.Staged {
		var cleanup func()
		if r, cleanup, err = r.PrivateIndex(); err != nil {
			return DiffOutput{}, err
		}
		defer cleanup()
	}
	base := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--relative", "--find-renames"}
	if in.Staged {
		base = append(base, "--cached")
	}
	args := func(extra ...string) []string {
		a := append(append(append([]string{}, base...), extra...), "--")
		return append(a, specs...)
	}
	listOut, listTrunc, err := r.Run(ctx, MaxDiffListBytes, args("--raw", "--numstat", "-z")...)
	if err != nil {
		return DiffOutput{}, err
	}
	patchOut, patchTrunc, err := r.Run(ctx, 2*maxBytes+patchOverheadBytes,
		args("--src-prefix=a/", "--dst-prefix=b/", "-U"+strconv.Itoa(ctxLines))...)
	if err != nil {
		return DiffOutput{}, err
	}
	untrackedOut, untrackedTrunc, err := r.Run(ctx, MaxUntrackedOutputBytes,
		append([]string{"ls-files", "-z", "--others", "--exclude-standard", "--directory", "--no-empty-directory", "--"}, specs...)...)
	if err != nil {
		return DiffOutput{}, err
	}

	files := parseFileList(listOut)
	out := DiffOutput{
		Staged: in.Staged, ContextLines: ctxLines, Files: []DiffFile{},
		TotalFiles: len(files), Truncated: listTrunc, Untracked: []string{},
	}
	for _, f := range files {
		out.Additions += f.Additions
		out.Deletions += f.Deletions
	}
	if len(files) > MaxDiffFiles {
		files, out.Truncated = files[:MaxDiffFiles], true
	}
	sections, lastPartial := parsePatch(patchOut, patchTrunc)
	budget := maxBytes
	for _, f := range files {
		hunks, found := sections[f.Path]
		f.Hunks = []Hunk{}
		expectHunks := !f.Binary && (f.Additions+f.Deletions > 0 || f.Status == StatusUnmerged)
		switch {
		case !found:
			if patchTrunc && expectHunks {
				f.HunksTruncated = true
			}
		case patchTrunc && f.Path == lastPartial:
			f.HunksTruncated = true
		}
		for _, h := range hunks {
			if budget <= 0 {
				f.HunksTruncated = true
				break
			}
			if len(h.Lines) > budget {
				h.Lines, h.Truncated = cutLines(h.Lines, budget), true
				f.HunksTruncated = true
			}
			budget -= len(h.Lines)
			f.Hunks = append(f.Hunks, h)
			if h.Truncated {
				budget = 0
			}
		}
		if f.HunksTruncated {
			out.Truncated = true
		}
		out.Files = append(out.Files, f)
	}

	untracked := splitNUL(untrackedOut)
	out.UntrackedTotal = len(untracked)
	out.UntrackedTruncated = untrackedTrunc
	if len(untracked) > MaxUntracked {
		untracked, out.UntrackedTruncated = untracked[:MaxUntracked], true
	}
	out.Untracked = append(out.Untracked, untracked...)
	return out, nil
}

// parseFileList parses `git diff --raw --numstat -z`: every raw record,
// then one numstat record per raw record in the same order. Records of an
// unmerged path (a U record followed by its work-tree record) are merged
// into one file with status unmerged.
func parseFileList(out []byte) []DiffFile {
	toks := splitNUL(out)
	var raws []DiffFile
	i := 0
	for i < len(toks) && strings.HasPrefix(toks[i], ":") {
		f := strings.Fields(toks[i][1:])
		if len(f) < 5 {
			break
		}
		d := DiffFile{Status: statusName(f[4][0])}
		if f[4][0] == 'R' || f[4][0] == 'C' {
			if i+2 >= len(toks) {
				break
			}
			d.OldPath, d.Path = toks[i+1], toks[i+2]
			i += 3
		} else {
			if i+1 >= len(toks) {
				break
			}
			d.Path = toks[i+1]
			i += 2
		}
		raws = append(raws, d)
	}
	for n := 0; n < len(raws) && i < len(toks); n++ {
		parts := strings.SplitN(toks[i], "\t", 3)
		if len(parts) < 3 {
			break
		}
		if parts[2] == "" {
			i += 3 // rename or copy: old and new path follow
		} else {
			i++
		}
		if parts[0] == "-" && parts[1] == "-" {
			raws[n].Binary = true
			continue
		}
		raws[n].Additions, _ = strconv.Atoi(parts[0])
		raws[n].Deletions, _ = strconv.Atoi(parts[1])
	}
	files := make([]DiffFile, 0, len(raws))
	at := map[string]int{}
	for _, d := range raws {
		if k, dup := at[d.Path]; dup {
			// The work-tree record of an unmerged path: keep its counts.
			files[k].Additions, files[k].Deletions, files[k].Binary = d.Additions, d.Deletions, d.Binary
			continue
		}
		at[d.Path] = len(files)
		files = append(files, d)
	}
	return files
}

func statusName(c byte) string {
	switch c {
	case 'A':
		return StatusAdded
	case 'D':
		return StatusDeleted
	case 'R':
		return StatusRenamed
	case 'C':
		return StatusCopied
	case 'T':
		return StatusTypeChanged
	case 'U':
		return StatusUnmerged
	}
	return StatusModified
}

// parsePatch splits patch output into hunks per file path (the new path).
// When truncated, only whole lines are parsed and the path of the section
// open at the cut is returned as partial.
func parsePatch(out []byte, truncated bool) (sections map[string][]Hunk, partial string) {
	sections = map[string][]Hunk{}
	text := string(out)
	if truncated {
		text = text[:strings.LastIndexByte(text, '\n')+1]
	}
	var (
		header []string
		inHdr  bool
		path   string
		hunks  []Hunk
		cur    *Hunk
		body   strings.Builder
		last   string
	)
	flushHunk := func() {
		if cur != nil {
			cur.Lines = body.String()
			hunks = append(hunks, *cur)
			cur = nil
			body.Reset()
		}
	}
	flushSection := func() {
		flushHunk()
		if inHdr {
			path = sectionPath(header)
		}
		if header != nil && path != "" {
			sections[path] = append(sections[path], hunks...)
			last = path
		}
		header, inHdr, path, hunks = nil, false, "", nil
	}
	for _, raw := range strings.SplitAfter(text, "\n") {
		line := strings.TrimSuffix(raw, "\n")
		switch {
		case raw == "":
		case strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "diff --cc ") || strings.HasPrefix(line, "diff --combined "):
			flushSection()
			header, inHdr = []string{line}, true
		case strings.HasPrefix(line, "@@"):
			if inHdr {
				path, inHdr = sectionPath(header), false
			}
			flushHunk()
			h := parseHunkHeader(line)
			cur = &h
		case inHdr:
			header = append(header, line)
		case cur != nil:
			body.WriteString(raw)
		}
	}
	flushSection()
	if truncated {
		partial = last
	}
	return sections, partial
}

// sectionPath finds the new path of a file section from its header lines:
// the combined-diff path, "rename to"/"copy to", "+++ b/", "--- a/", and
// finally the symmetric "diff --git a/P b/P" line.
func sectionPath(header []string) string {
	if len(header) == 0 {
		return ""
	}
	first := header[0]
	for _, p := range []string{"diff --cc ", "diff --combined "} {
		if strings.HasPrefix(first, p) {
			return unquote(strings.TrimPrefix(first, p))
		}
	}
	var plus, minus string
	for _, l := range header[1:] {
		switch {
		case strings.HasPrefix(l, "rename to "):
			return unquote(strings.TrimPrefix(l, "rename to "))
		case strings.HasPrefix(l, "copy to "):
			return unquote(strings.TrimPrefix(l, "copy to "))
		case strings.HasPrefix(l, "+++ "):
			plus = unquote(strings.TrimSuffix(strings.TrimPrefix(l, "+++ "), "\t"))
		case strings.HasPrefix(l, "--- "):
			minus = unquote(strings.TrimSuffix(strings.TrimPrefix(l, "--- "), "\t"))
		}
	}
	if strings.HasPrefix(plus, "b/") {
		return plus[2:]
	}
	if strings.HasPrefix(minus, "a/") {
		return minus[2:]
	}
	return symmetricPath(strings.TrimPrefix(first, "diff --git "))
}

// symmetricPath returns P from `a/P b/P` (either side possibly quoted).
func symmetricPath(s string) string {
	if strings.HasPrefix(s, `"`) {
		end := closingQuote(s)
		if end < 0 {
			return ""
		}
		if b := strings.TrimPrefix(s[end+1:], " "); b != "" {
			if p := unquote(b); strings.HasPrefix(p, "b/") {
				return p[2:]
			}
		}
		return ""
	}
	if strings.HasSuffix(s, `"`) {
		if k := strings.LastIndex(s, ` "`); k >= 0 {
			if p := unquote(s[k+1:]); strings.HasPrefix(p, "b/") {
				return p[2:]
			}
		}
		return ""
	}
	if len(s) >= 5 && (len(s)-5)%2 == 0 {
		n := (len(s) - 5) / 2
		if s[:2] == "a/" && s[2+n:5+n] == " b/" && s[2:2+n] == s[5+n:] {
			return s[5+n:]
		}
	}
	if k := strings.LastIndex(s, " b/"); k >= 0 {
		return s[k+3:]
	}
	return ""
}

// closingQuote returns the index of the quote closing the C-quoted string
// that starts s, or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unquote undoes git's C-style quoting of a path; unquoted input is
// returned as it is.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// parseHunkHeader parses "@@ -a,b +c,d @@ ..." and the combined form
// "@@@ -a,b -c,d +e,f @@@ ...": old is the first '-' range, new the last
// '+' range. A missing count is 1.
func parseHunkHeader(line string) Hunk {
	h := Hunk{Header: line}
	n := len(line) - len(strings.TrimLeft(line, "@"))
	rest := line[n:]
	if end := strings.Index(rest, strings.Repeat("@", n)); end >= 0 {
		rest = rest[:end]
	}
	oldSeen := false
	for _, f := range strings.Fields(rest) {
		switch {
		case strings.HasPrefix(f, "-") && !oldSeen:
			h.OldStart, h.OldLines = parseRange(f[1:])
			oldSeen = true
		case strings.HasPrefix(f, "+"):
			h.NewStart, h.NewLines = parseRange(f[1:])
		}
	}
	return h
}

func parseRange(s string) (start, count int) {
	a, b, ok := strings.Cut(s, ",")
	start, _ = strconv.Atoi(a)
	if !ok {
		return start, 1
	}
	count, _ = strconv.Atoi(b)
	return start, count
}

// cutLines returns the longest prefix of s made of whole lines that fits
// in n bytes.
func cutLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := strings.LastIndexByte(s[:n], '\n')
	if k < 0 {
		return ""
	}
	return s[:k+1]
}

// splitNUL splits NUL-terminated records. The element after the last NUL
// is empty for a complete output and an incomplete record for a truncated
// one; either way it is dropped.
func splitNUL(out []byte) []string {
	toks := strings.Split(string(out), "\x00")
	return toks[:len(toks)-1]
}
