package project

import (
	"os"
	"path"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/failure"
)

// A Tree is a handle on a project's root directory, opened for one tool
// call, through which the file tools do all their I/O: every open, stat,
// directory listing, creation, rename and removal goes through [Tree.Root],
// an [os.Root].
//
// # Guarantee
//
// A path is first checked by the path policy ([Tree.Resolve], the same
// checks and errors as [Project.Resolve]); the check yields the path's
// location with the symlinks that existed at that moment expanded. Each
// operation on that location then resolves it again, one component at a
// time, relative to the root's open directory handle, never following a
// symlink out of the root or an absolute symlink, and never climbing above
// the root with "..". So a directory swapped for a symlink to the outside
// (or renamed away) between the check and the use makes the operation fail
// instead of reaching outside: nothing outside the root is read, created,
// renamed or removed through a Tree. A file created through a Tree (a
// staging file included) is created in the directory it names, inside the
// root.
//
// What it does not cover: a process that can write both inside the project
// and outside may move a directory the call already holds open (the root
// itself included) out of the project, and the call then keeps working in
// it; [os.Root] also does not stop at mount points, bind mounts or device
// files inside the root.
type Tree struct {
	p    Project
	root *os.Root
}

// OpenTree opens a handle on p.Root. The caller closes it. A root that
// cannot be opened is operation_failed.
func (p Project) OpenTree() (*Tree, error) {
	if p.Runner != "" {
		return nil, failure.New(failure.Unavailable, "project %s is served by runner %s: this tool does not run through runners yet", p.ID, p.Runner)
	}
	r, err := os.OpenRoot(p.Root)
	if err != nil {
		return nil, failure.Wrap(failure.OperationFailed, err, "the project root cannot be opened")
	}
	return &Tree{p: p, root: r}, nil
}

// Close releases the root handle.
func (t *Tree) Close() error { return t.root.Close() }

// Root is the handle every operation on a location goes through.
func (t *Tree) Root() *os.Root { return t.root }

// Project is the project the tree belongs to.
func (t *Tree) Project() Project { return t.p }

// Resolve validates rel with the path policy, with exactly the errors of
// [Project.Resolve], and returns its location loc and its canonical form
// clean. loc is relative to the root, in the operating system's form ("."
// for the root), with every symlink that exists now expanded, so that a
// symlink that stays inside (relative, absolute or leaving and re-entering
// the root by name) is honoured; the part of the path that does not exist
// yet is kept as given. Use loc only through [Tree.Root].
func (t *Tree) Resolve(rel string) (loc, clean string, err error) {
	clean, err = Clean(rel)
	if err != nil {
		return "", "", err
	}
	resolved, err := t.p.confine(clean)
	if err != nil {
		return "", "", err
	}
	return t.loc(resolved), clean, nil
}

// ResolveEntry is [Tree.Resolve] for tools that act on a directory entry
// itself rather than on what it points to: the parent of the path is
// expanded, its last component is not, so loc names a symlink rather than
// its target. The whole path must still resolve inside the root.
func (t *Tree) ResolveEntry(rel string) (loc, clean string, err error) {
	loc, clean, err = t.Resolve(rel)
	if err != nil || clean == "." {
		return loc, clean, err
	}
	parent, err := t.p.confine(path.Dir(clean))
	if err != nil {
		return "", "", err
	}
	return filepath.Join(t.loc(parent), path.Base(clean)), clean, nil
}

// OpenFile opens the project path rel through the root with flag (never
// O_CREATE) and returns the file and rel's canonical form, with exactly the
// errors of [Tree.Resolve] for a path the policy refuses and [StatFailure]'s
// kinds for one that cannot be opened.
//
// It is the fast path of Resolve followed by an open: rel is cleaned (no
// I/O) and opened through the root at once, which already refuses every
// way out of the root; only when that open fails does the policy walk run,
// to report the refusal as the policy would have, or to open the expanded
// location of a path whose symlinks stay inside the root but that the root
// handle alone does not follow (an absolute symlink, or one that leaves the
// root and re-enters it by name).
func (t *Tree) OpenFile(rel string, flag int) (*os.File, string, error) {
	clean, err := Clean(rel)
	if err != nil {
		return nil, "", err
	}
	name := filepath.FromSlash(clean)
	f, err := t.root.OpenFile(name, flag, 0)
	if err == nil {
		return f, clean, nil
	}
	loc, _, perr := t.Resolve(clean)
	if perr != nil {
		return nil, clean, perr
	}
	if loc != name {
		if f, err = t.root.OpenFile(loc, flag, 0); err == nil {
			return f, clean, nil
		}
	}
	return nil, clean, StatFailure(err, clean)
}

func (t *Tree) loc(resolved string) string {
	r, err := filepath.Rel(t.p.Root, resolved)
	if err != nil { // confine returned a path inside the root
		panic("project: resolved path " + resolved + " is not below " + t.p.Root)
	}
	return r
}

// Escaped reports the path policy's failure for clean when clean now
// resolves outside the root, and nil otherwise. Callers use it to classify
// a failed operation: a symlink that appeared after Resolve is
// permission_denied, as it would have been had it been there before.
func (t *Tree) Escaped(clean string) error {
	if _, err := t.p.confine(clean); err != nil {
		return err
	}
	return nil
}

// Failure maps the error of an operation on clean through the root to a
// stable kind without exposing an absolute path: [Tree.Escaped]'s failure
// when clean now resolves outside the root, [StatFailure] otherwise.
func (t *Tree) Failure(err error, clean string) error {
	if e := t.Escaped(clean); e != nil {
		return e
	}
	return StatFailure(err, clean)
}
