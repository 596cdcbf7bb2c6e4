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
// links and never followed. The start directory (and the ignore files
// above it) is opened through an [os.Root] on the project root, and every
// directory, ignore file and file beneath it through its parent's open
// [Dir], one name at a time without following a symbolic link, so a walk
// never leaves the root, even when a directory is swapped for a symlink
// while it runs.
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
	// Loc is the entry's location in the root Walk was given, in the
	// operating system's form, for opening it through that root.
	Loc  string
	Kind Kind
	// Size is the size in bytes of a regular file, 0 for other kinds (and
	// for every file under Options.NoSizes).
	Size int64
	// Dir is the open directory holding the entry, through which it can
	// be read; it stays open after the visit only when retained.
	Dir *Dir
}

// Name is the entry's base name, its name in Dir.
func (e Entry) Name() string { return e.Path[strings.LastIndexByte(e.Path, '/')+1:] }

// Options configure a Walk. The zero value honours ignore files.
type Options struct {
	// IncludeIgnored disables ignore files; .git is still skipped.
	IncludeIgnored bool
	// NoSizes leaves Entry.Size 0 for files, saving a stat of each file
	// on file systems that give a directory entry's type.
	NoSizes bool
}

// SkipDir returned by a visit function for a directory entry skips the
// directory's contents; returned for any other entry it skips the rest of
// the entry's parent directory.
var SkipDir = fs.SkipDir

// SkipAll returned by a visit function ends the walk without error.
var SkipAll = fs.SkipAll

// Walk calls fn for every entry beneath the directory start of the project
// whose root is open as root, in the order described in the package
// documentation.
//
// start is a clean, slash-separated project-relative directory path ("."
// for the root) that the caller has already confined to the project, and
// loc its location in root (as project.Tree.Resolve returns it; start
// itself when no symlink leads to it). Entry paths are reported below
// start. The ignore files of the root and of every directory from the root
// down to start apply; start itself is walked even when an ignore rule
// names it, because the caller asked for it explicitly. Subdirectories
// that cannot be read are reported but their contents are skipped.
//
// Walk returns nil when the walk completes or fn returns SkipAll, the
// context's error when ctx ends, the error of reading start, or any other
// error fn returns.
func Walk(ctx context.Context, root *os.Root, start, loc string, opts Options, fn func(Entry) error) error {
	var rules []rule
	if !opts.IncludeIgnored {
		rules = appendRules(rules, root, filepath.Join(GitDirName, "info", "exclude"), "")
		rules = appendRules(rules, root, IgnoreFileName, "")
		if start != "." {
			parts := strings.Split(start, "/")
			for i := range parts[:len(parts)-1] {
				dir := strings.Join(parts[:i+1], "/")
				rules = appendRules(rules, root, filepath.Join(filepath.FromSlash(dir), IgnoreFileName), dir)
			}
			rules = appendRules(rules, root, filepath.Join(loc, IgnoreFileName), start)
		}
	}
	d, err := openDir(root, loc)
	if err != nil {
		return err
	}
	defer d.Release()
	w := &walker{ctx: ctx, opts: opts, fn: fn}
	des, err := w.list(d)
	if err != nil {
		return err
	}
	err = w.dir(start, loc, d, des, rules)
	if errors.Is(err, SkipAll) || errors.Is(err, SkipDir) {
		return nil
	}
	return err
}

type walker struct {
	ctx  context.Context
	opts Options
	fn   func(Entry) error
}

// dirEntry is one entry of a directory read by list.
type dirEntry struct {
	name string
	kind Kind
	size int64
}

// list reads the entries of d: their names, kinds and (for regular files,
// unless NoSizes) sizes. A file's kind comes from the directory entry
// when the file system gives it; a file that vanishes before its stat is
// left out.
func (w *walker) list(d *Dir) ([]dirEntry, error) {
	des, err := d.f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(des))
	for _, de := range des {
		e := dirEntry{name: de.Name(), kind: kindOf(de.Type())}
		if e.kind == KindFile && !w.opts.NoSizes {
			kind, size, err := d.lstat(e.name)
			if err != nil {
				continue // vanished since the directory was read
			}
			e.kind, e.size = kind, size
		}
		out = append(out, e)
	}
	return out, nil
}

type sortable struct {
	de  dirEntry
	key string
}

func (w *walker) dir(rel, loc string, d *Dir, des []dirEntry, rules []rule) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	items := make([]sortable, 0, len(des))
	for _, de := range des {
		if de.name == GitDirName {
			continue
		}
		key := de.name
		if de.kind == KindDir {
			key += "/"
		}
		items = append(items, sortable{de: de, key: key})
	}
	slices.SortFunc(items, func(a, b sortable) int { return strings.Compare(a.key, b.key) })
	for _, it := range items {
		name, kind := it.de.name, it.de.kind
		p := name
		if rel != "." {
			p = rel + "/" + name
		}
		if !w.opts.IncludeIgnored && ignored(rules, p, kind == KindDir) {
			continue
		}
		e := Entry{Path: p, Loc: filepath.Join(loc, name), Kind: kind, Size: it.de.size, Dir: d}
		err := w.fn(e)
		if errors.Is(err, SkipDir) {
			if kind == KindDir {
				continue
			}
			return nil
		}
		if err != nil {
			return err
		}
		if kind != KindDir {
			continue
		}
		if err := w.subdir(d, name, p, e.Loc, rules); err != nil {
			return err
		}
	}
	return nil
}

// subdir walks the subdirectory name of d, at project path p and location
// loc; one that cannot be read is skipped.
func (w *walker) subdir(d *Dir, name, p, loc string, rules []rule) error {
	sub, err := d.sub(name, loc)
	if err != nil {
		return nil // unreadable: reported, not entered
	}
	defer sub.Release()
	des, err := w.list(sub)
	if err != nil {
		return nil
	}
	if !w.opts.IncludeIgnored {
		for _, de := range des {
			if de.name == IgnoreFileName {
				rules = append(rules[:len(rules):len(rules)], dirRules(sub, de.kind, p)...)
				break
			}
		}
	}
	return w.dir(p, loc, sub, des, rules)
}

// dirRules returns the rules of the ignore file in d, of kind k as its
// directory entry gives it, located in the project-relative directory
// base. A file that is not regular (a symbolic link included) or cannot be
// read contributes nothing.
func dirRules(d *Dir, k Kind, base string) []rule {
	if k != KindFile {
		return nil
	}
	var buf []byte
	content, large, err := d.ReadRegular(IgnoreFileName, &buf, MaxIgnoreFileBytes)
	if err != nil {
		return nil
	}
	if large {
		// Read the first MaxIgnoreFileBytes, as appendRules does.
		f, err := d.openFile(IgnoreFileName)
		if err != nil {
			return nil
		}
		defer f.Close()
		if content, err = io.ReadAll(io.LimitReader(f, MaxIgnoreFileBytes)); err != nil {
			return nil
		}
		content = content[:bytes.LastIndexByte(content, '\n')+1]
	}
	return parseIgnore(content, base)
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

// appendRules appends the rules of the ignore file at loc in root, located
// in the project-relative directory base, to rules. A missing, unreadable
// or non-regular file (a symbolic link included) contributes nothing.
func appendRules(rules []rule, root *os.Root, loc, base string) []rule {
	if base == "." {
		base = ""
	}
	info, err := root.Lstat(loc)
	if err != nil || !info.Mode().IsRegular() {
		return rules
	}
	f, err := root.Open(loc)
	if err != nil {
		return rules
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(st, info) {
		return rules // replaced since the Lstat
	}
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
