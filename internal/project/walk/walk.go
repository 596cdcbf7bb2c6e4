// Package walk enumerates a project's directory tree the way git sees it,
// for the tools that list and search project files.
//
// [Walk] honours the .gitignore file of every directory (and the project's
// .git/info/exclude) with gitignore(5) semantics: later and deeper rules
// take precedence, '!' re-includes, a directory that is ignored is not
// entered (so nothing beneath it can be re-included), and matching is
// case-sensitive. Global git excludes are not read, so the result does not
// depend on the host's git configuration. A directory named .git is never
// reported or entered, ignore rules or not. Symbolic links are reported as
// links and never followed, so a walk never leaves the directory tree it
// starts in.
//
// Entries arrive depth-first in a deterministic order: the byte order of
// their project-relative paths, where a directory's path is compared as if
// it ended in '/' (git's tree order). Every directory is reported before
// its contents.
package walk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxIgnoreFileBytes bounds how much of one ignore file is read; rules past
// this many bytes are not applied.
const MaxIgnoreFileBytes = 1 << 20

// IgnoreFileName is the per-directory ignore file Walk honours.
const IgnoreFileName = ".gitignore"

// GitDirName is the directory Walk never reports or enters.
const GitDirName = ".git"

// Kind classifies an entry by its own type (symbolic links are not
// followed).
type Kind string

// Entry kinds.
const (
	KindFile    Kind = "file"
	KindDir     Kind = "dir"
	KindSymlink Kind = "symlink"
	// KindOther is a named pipe, socket or device.
	KindOther Kind = "other"
)

// An Entry is one file-system object found by Walk.
type Entry struct {
	// Path is the project-relative, slash-separated path.
	Path string
	// Abs is the absolute path under the root Walk was given.
	Abs  string
	Kind Kind
	// Size is the size in bytes of a regular file, 0 for other kinds.
	Size int64
}

// Options configure a Walk. The zero value honours ignore files.
type Options struct {
	// IncludeIgnored disables ignore files; .git is still skipped.
	IncludeIgnored bool
}

// SkipDir returned by a visit function for a directory entry skips the
// directory's contents; returned for any other entry it skips the rest of
// the entry's parent directory.
var SkipDir = fs.SkipDir

// SkipAll returned by a visit function ends the walk without error.
var SkipAll = fs.SkipAll

// Walk calls fn for every entry beneath the directory start of the project
// rooted at root, in the order described in the package documentation.
//
// root must be the project's absolute root and start a clean,
// slash-separated project-relative directory path ("." for the root) that
// the caller has already confined to the project. The ignore files of root
// and of every directory from root down to start apply; start itself is
// walked even when an ignore rule names it, because the caller asked for
// it explicitly. Subdirectories that cannot be read are reported but their
// contents are skipped.
//
// Walk returns nil when the walk completes or fn returns SkipAll, the
// context's error when ctx ends, the error of reading start, or any other
// error fn returns.
func Walk(ctx context.Context, root, start string, opts Options, fn func(Entry) error) error {
	var rules []rule
	if !opts.IncludeIgnored {
		rules = appendRules(rules, filepath.Join(root, GitDirName, "info", "exclude"), "")
		rules = appendRules(rules, filepath.Join(root, IgnoreFileName), "")
		if start != "." {
			parts := strings.Split(start, "/")
			for i := range parts {
				dir := strings.Join(parts[:i+1], "/")
				rules = appendRules(rules, filepath.Join(root, filepath.FromSlash(dir), IgnoreFileName), dir)
			}
		}
	}
	abs := filepath.Join(root, filepath.FromSlash(start))
	des, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	w := &walker{ctx: ctx, root: root, opts: opts, fn: fn}
	err = w.dir(start, abs, des, rules)
	if errors.Is(err, SkipAll) || errors.Is(err, SkipDir) {
		return nil
	}
	return err
}

type walker struct {
	ctx  context.Context
	root string
	opts Options
	fn   func(Entry) error
}

type sortable struct {
	de   fs.DirEntry
	key  string
	kind Kind
}

func (w *walker) dir(rel, abs string, des []fs.DirEntry, rules []rule) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	items := make([]sortable, 0, len(des))
	for _, de := range des {
		if de.Name() == GitDirName {
			continue
		}
		k := kindOf(de.Type())
		key := de.Name()
		if k == KindDir {
			key += "/"
		}
		items = append(items, sortable{de: de, key: key, kind: k})
	}
	slices.SortFunc(items, func(a, b sortable) int { return strings.Compare(a.key, b.key) })
	for _, it := range items {
		name := it.de.Name()
		p := name
		if rel != "." {
			p = rel + "/" + name
		}
		if !w.opts.IncludeIgnored && ignored(rules, p, it.kind == KindDir) {
			continue
		}
		e := Entry{Path: p, Abs: filepath.Join(abs, name), Kind: it.kind}
		if it.kind == KindFile {
			info, err := it.de.Info()
			if err != nil {
				continue // vanished since the directory was read
			}
			e.Size = info.Size()
		}
		err := w.fn(e)
		if errors.Is(err, SkipDir) {
			if it.kind == KindDir {
				continue
			}
			return nil
		}
		if err != nil {
			return err
		}
		if it.kind != KindDir {
			continue
		}
		sub, err := os.ReadDir(e.Abs)
		if err != nil {
			continue // unreadable: reported, not entered
		}
		subRules := rules
		if !w.opts.IncludeIgnored {
			subRules = appendRules(rules[:len(rules):len(rules)], filepath.Join(e.Abs, IgnoreFileName), p)
		}
		if err := w.dir(p, e.Abs, sub, subRules); err != nil {
			return err
		}
	}
	return nil
}

func kindOf(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	default:
		return KindOther
	}
}

// appendRules appends the rules of the ignore file at abs, located in the
// project-relative directory base, to rules. A missing, unreadable or
// non-regular file (a symbolic link included) contributes nothing.
func appendRules(rules []rule, abs, base string) []rule {
	if base == "." {
		base = ""
	}
	info, err := os.Lstat(abs)
	if err != nil || !info.Mode().IsRegular() {
		return rules
	}
	f, err := os.Open(abs)
	if err != nil {
		return rules
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, MaxIgnoreFileBytes))
	if err != nil {
		return rules
	}
	if len(content) == MaxIgnoreFileBytes {
		// Never apply a line that was cut in half.
		content = content[:bytes.LastIndexByte(content, '\n')+1]
	}
	return append(rules, parseIgnore(content, base)...)
}
