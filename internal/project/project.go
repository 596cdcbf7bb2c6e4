// Package project is the registry of local projects that agents may work on,
// and the path policy that confines every tool path to its project root.
//
// A local project has the id agent:local:<name> and an absolute root
// directory. The agent:<client>:<project> form is reserved for remote runners.
//
// # Path policy
//
// Every path a tool receives is project-relative. [Project.Resolve] rejects
// absolute paths, drive or URI forms, invalid UTF-8, control characters and
// any ".." component with [failure.InvalidArguments] before any I/O, and
// rejects a path whose existing part resolves (through symlinks, including
// dangling ones) outside the root with [failure.PermissionDenied]. The file
// tools do their I/O through a [Tree], a per-call handle on the root that
// repeats the confinement in every system call.
//
// # Registry
//
// [Registry] registers, looks up and removes projects over a [Store];
// project/projectdb is the SQLite implementation.
package project

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/ident"
)

// LocalPrefix prefixes the id of every project registered on this host.
const LocalPrefix = "agent:local:"

// MaxPathBytes bounds one project-relative path.
const MaxPathBytes = 4096

// A Project is a registered directory tree agents may work on.
type Project struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Root    string    `json:"root"`
	AddedAt time.Time `json:"added_at"`
	// Sandbox is the project's sandbox mode for the processes agents
	// start in it (workspace-write, read-only or off); empty takes the
	// server's default.
	Sandbox string `json:"sandbox,omitempty"`
	// Source is the id of the source project of a managed worktree
	// (work_on_project mode=worktree), and BaseCommit the exact commit it
	// was created at; both empty for an ordinary project.
	Source     string `json:"source,omitempty"`
	BaseCommit string `json:"base_commit,omitempty"`
	// Runner is the client id of the `webcodex runner` that serves the
	// project (its id is agent:<runner>:<name> and Root is a path on the
	// runner's machine), and Owner the authority group of that runner's
	// token: only principals of that group see the project. Both are
	// empty for a project on this host.
	Runner string `json:"runner,omitempty"`
	Owner  string `json:"owner,omitempty"`
}

// RunnerID returns the id of the project name served by the runner
// clientID.
func RunnerID(clientID, name string) string { return "agent:" + clientID + ":" + name }

// Worktree reports whether p is a managed worktree.
func (p Project) Worktree() bool { return p.Source != "" }

// LocalID returns the project id for a local project name.
func LocalID(name string) string { return LocalPrefix + name }

// ValidateName reports whether name may name a local project.
func ValidateName(name string) error {
	if !ident.Valid(name) {
		return failure.New(failure.InvalidArguments, "project name %q must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// NameFromDir derives a project name from a directory's base name, replacing
// characters a name may not hold with '-'.
func NameFromDir(dir string) string {
	base := filepath.Base(filepath.Clean(dir))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".-_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "project"
	}
	return name
}

// CanonicalRoot returns the absolute, symlink-resolved form of dir, which
// must be an existing directory.
func CanonicalRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", failure.Wrap(failure.InvalidArguments, err, "project directory %q cannot be made absolute", dir)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", failure.New(failure.InvalidArguments, "project directory %q does not exist", dir)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", failure.New(failure.InvalidArguments, "project directory %q is not a directory", dir)
	}
	return real, nil
}

// Clean validates a project-relative path and returns its canonical
// slash-separated form ("." for the root). It performs no I/O.
//
// It returns [failure.InvalidArguments] for an empty path, a path longer than
// [MaxPathBytes], invalid UTF-8, any control character (C0, DEL, C1), a
// backslash, an absolute, home ("~"), drive ("C:") or URI ("x://") form, and
// any ".." component. "a/./b", "a//b" and a trailing "/" are normalized.
func Clean(rel string) (string, error) {
	if rel == "" {
		return "", failure.New(failure.InvalidArguments, "path must not be empty")
	}
	if len(rel) > MaxPathBytes {
		return "", failure.New(failure.InvalidArguments, "path is longer than %d bytes", MaxPathBytes)
	}
	if !utf8.ValidString(rel) {
		return "", failure.New(failure.InvalidArguments, "path is not valid UTF-8")
	}
	for _, r := range rel {
		if unicode.IsControl(r) {
			return "", failure.New(failure.InvalidArguments, "path contains a control character")
		}
	}
	if strings.Contains(rel, "\\") {
		return "", failure.New(failure.InvalidArguments, "path %q must use '/' separators", rel)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", failure.New(failure.InvalidArguments, "path %q must not contain '..'", rel)
		}
	}
	// The forms are checked on the raw and the cleaned path: cleaning turns
	// "./~" into "~" and "file://x" into "file:/x".
	clean := path.Clean(rel)
	for _, p := range []string{rel, clean} {
		if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || hasDrive(p) || strings.Contains(p, "://") {
			return "", failure.New(failure.InvalidArguments, "path %q must be relative to the project root", rel)
		}
	}
	return clean, nil
}

func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))
}

// Resolve validates rel and returns the absolute path it names inside the
// project together with its canonical relative form.
//
// The path is resolved component by component from the root, following
// symlinks the way the kernel does (at most [MaxSymlinkHops] expansions).
// The first component that does not exist ends the walk: the rest of the path
// is what a creating tool would make below the last existing directory, so a
// path that does not exist yet is allowed as long as its existing ancestors
// (and any dangling symlink it goes through) stay inside. The fully resolved
// location must be inside the root.
//
// Errors: [failure.InvalidArguments] from [Clean]; [failure.PermissionDenied]
// when the path resolves outside the root, has too many symlinks, or a
// component cannot be inspected.
//
// Resolve requires p.Root to be canonical (see [CanonicalRoot]); a root that
// is not its own real path fails closed. The check is a point-in-time check:
// it does not protect against a concurrent process that swaps a component for
// a symlink between Resolve and the caller's I/O. The file tools therefore do
// their I/O through a [Tree], which repeats the confinement in every system
// call.
func (p Project) Resolve(rel string) (abs, clean string, err error) {
	clean, err = Clean(rel)
	if err != nil {
		return "", "", err
	}
	if p.Runner != "" {
		// The files are on the runner's machine: the path is only joined
		// here, and the runner confines it against its own filesystem
		// before any use.
		return filepath.Join(p.Root, filepath.FromSlash(clean)), clean, nil
	}
	if _, err := p.confine(clean); err != nil {
		return "", "", err
	}
	return filepath.Join(p.Root, filepath.FromSlash(clean)), clean, nil
}

// MaxSymlinkHops bounds the symlink expansions while resolving one path,
// like the kernel's ELOOP limit.
const MaxSymlinkHops = 40

// confine resolves clean (an output of Clean) against the root, checks that
// the location it names is inside the root and returns that location: an
// absolute path with every existing symlink expanded (the part that does
// not exist is applied lexically).
func (p Project) confine(clean string) (string, error) {
	outside := func() error {
		return failure.New(failure.PermissionDenied, "path %q resolves outside the project root", clean)
	}
	resolved := p.Root // invariant: a real path (no symlinks), unless tail is set
	var pending []string
	if clean != "." {
		pending = strings.Split(clean, "/")
	}
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..": // only from symlink targets; Clean rejects it in rel
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return "", failure.Wrap(failure.PermissionDenied, err, "path %q cannot be resolved", clean)
			}
			// Nothing exists below here: the remaining components are
			// what a creating tool would make, so apply them lexically.
			resolved = next
			for _, c := range pending {
				switch c {
				case "", ".":
				case "..":
					resolved = filepath.Dir(resolved)
				default:
					resolved = filepath.Join(resolved, c)
				}
			}
			pending = nil
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		hops++
		if hops > MaxSymlinkHops {
			return "", failure.New(failure.PermissionDenied, "path %q has too many levels of symbolic links", clean)
		}
		target, err := os.Readlink(next)
		if err != nil || target == "" {
			return "", failure.New(failure.PermissionDenied, "path %q cannot be resolved", clean)
		}
		if filepath.IsAbs(target) {
			vol := filepath.VolumeName(target)
			resolved = vol + string(filepath.Separator)
			target = target[len(vol):]
		}
		// resolved stays the directory holding the link: a relative target
		// is interpreted from there.
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	if !within(p.Root, resolved) {
		return "", outside()
	}
	return resolved, nil
}

// within reports whether p is root or lies below it. Both must be clean.
func within(root, p string) bool {
	if p == root {
		return true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// Rel returns the project-relative slash path of abs, which must be inside
// the root.
func (p Project) Rel(abs string) (string, error) {
	r, err := filepath.Rel(p.Root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("project: %s is outside %s", abs, p.Root)
	}
	return filepath.ToSlash(r), nil
}

// Store persists the registry. Implementations must make Add and Remove
// durable before returning.
type Store interface {
	// Add registers p; it returns failure.Conflict when the id is taken by
	// a different root.
	Add(ctx context.Context, p Project) error
	// Remove unregisters id; failure.UnknownProject when absent.
	Remove(ctx context.Context, id string) error
	// Get returns the project with id; failure.UnknownProject when absent.
	Get(ctx context.Context, id string) (Project, error)
	// List returns every project ordered by id.
	List(ctx context.Context) ([]Project, error)
}

// StatFailure maps an error from opening or stating the project path
// clean (as Resolve returned it) to a stable kind, without exposing the
// absolute path: not_found, permission_denied or operation_failed.
func StatFailure(err error, clean string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return failure.New(failure.NotFound, "%q does not exist", clean)
	case errors.Is(err, fs.ErrPermission):
		return failure.Wrap(failure.PermissionDenied, err, "%q is not readable", clean)
	default:
		return failure.Wrap(failure.OperationFailed, err, "%q cannot be read", clean)
	}
}
