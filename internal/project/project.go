// Package project is the registry of local projects that agents may work on,
// and the path policy that confines every tool path to its project root.
//
// A local project has the id agent:local:<name> and an absolute root
// directory. The agent:<client>:<project> form is reserved for remote runners.
//
// # Path policy
//
// Every path a tool receives is project-relative. [Project.Resolve] rejects
// absolute paths, drive or URI forms, control characters and any ".."
// component with [failure.InvalidArguments] before any I/O, and rejects a path
// whose existing part resolves (through symlinks) outside the root with
// [failure.PermissionDenied].
package project

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// LocalPrefix prefixes the id of every project registered on this host.
const LocalPrefix = "agent:local:"

// MaxPathBytes bounds one project-relative path.
const MaxPathBytes = 4096

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// A Project is a registered directory tree agents may work on.
type Project struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Root    string    `json:"root"`
	AddedAt time.Time `json:"added_at"`
}

// LocalID returns the project id for a local project name.
func LocalID(name string) string { return LocalPrefix + name }

// ValidateName reports whether name may name a local project.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
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
func Clean(rel string) (string, error) {
	if rel == "" {
		return "", failure.New(failure.InvalidArguments, "path must not be empty")
	}
	if len(rel) > MaxPathBytes {
		return "", failure.New(failure.InvalidArguments, "path is longer than %d bytes", MaxPathBytes)
	}
	for _, r := range rel {
		if r < 0x20 || r == 0x7f {
			return "", failure.New(failure.InvalidArguments, "path contains a control character")
		}
	}
	if strings.Contains(rel, "\\") {
		return "", failure.New(failure.InvalidArguments, "path %q must use '/' separators", rel)
	}
	if strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "~") || hasDrive(rel) || strings.Contains(rel, "://") {
		return "", failure.New(failure.InvalidArguments, "path %q must be relative to the project root", rel)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", failure.New(failure.InvalidArguments, "path %q must not contain '..'", rel)
		}
	}
	return path.Clean(rel), nil
}

func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))
}

// Resolve validates rel and returns the absolute path it names inside the
// project together with its canonical relative form. The longest existing
// prefix of the path is resolved through symlinks and must stay inside the
// root; a path that does not exist yet is allowed (for creation) as long as
// its existing ancestors are inside.
func (p Project) Resolve(rel string) (abs, clean string, err error) {
	clean, err = Clean(rel)
	if err != nil {
		return "", "", err
	}
	abs = filepath.Join(p.Root, filepath.FromSlash(clean))
	if err := p.confine(abs, clean); err != nil {
		return "", "", err
	}
	return abs, clean, nil
}

// confine checks that the existing part of abs resolves inside the root.
func (p Project) confine(abs, clean string) error {
	probe := abs
	for {
		real, err := filepath.EvalSymlinks(probe)
		if err == nil {
			if !within(p.Root, real) {
				return failure.New(failure.PermissionDenied, "path %q resolves outside the project root", clean)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			// A dangling symlink or unreadable component: inspect the link
			// itself so that a link pointing outside is still refused.
			if target, lerr := os.Readlink(probe); lerr == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(probe), target)
				}
				if !within(p.Root, filepath.Clean(target)) {
					return failure.New(failure.PermissionDenied, "path %q resolves outside the project root", clean)
				}
			}
			return failure.Wrap(failure.PermissionDenied, err, "path %q cannot be resolved", clean)
		}
		if fi, lerr := os.Lstat(probe); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			// Dangling symlink: refuse if it points outside.
			target, _ := os.Readlink(probe)
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(probe), target)
			}
			if !within(p.Root, filepath.Clean(target)) {
				return failure.New(failure.PermissionDenied, "path %q resolves outside the project root", clean)
			}
		}
		parent := filepath.Dir(probe)
		if parent == probe || !within(p.Root, parent) && parent != p.Root {
			return failure.New(failure.PermissionDenied, "path %q resolves outside the project root", clean)
		}
		probe = parent
	}
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
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
