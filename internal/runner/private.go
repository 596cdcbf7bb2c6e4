// An execution's private directory (Spec.Private): made by the host that
// starts the process, on its machine, writable by the process, and removed
// when the execution ends, after the file it collects (Spec.Collect) was
// handed to the caller.

package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PrivateDirToken, in a Spec's Argv elements and Env values, stands for
// the path of the execution's private directory (Spec.Private): the host
// that starts the process replaces it, on its own machine.
const PrivateDirToken = "{webcodex_private_dir}"

// MaxCollectBytes bounds the file an execution collects (Spec.Collect):
// a longer one is cut at the bound.
const MaxCollectBytes = 64 << 20

// privatePattern names a private directory under the host's temporary
// directory.
const privatePattern = "webcodex-private-"

// ValidCollect reports whether name may name the collected file: a plain
// file name, no path.
func ValidCollect(name string) bool {
	return name != "" && len(name) <= 128 && name == filepath.Base(name) && name != "." && name != ".." &&
		!strings.ContainsAny(name, `/\`+"\x00")
}

// makePrivate makes s's private directory (0700) and returns s with the
// token replaced by its path and the directory writable, and a finish
// that hands the collected file to s.CollectTo and removes the directory.
func makePrivate(s Spec) (Spec, func(), error) {
	dir, err := os.MkdirTemp("", privatePattern)
	if err != nil {
		return s, nil, err
	}
	sub := func(v string) string { return strings.ReplaceAll(v, PrivateDirToken, dir) }
	argv := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		argv[i] = sub(a)
	}
	s.Argv = argv
	if s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = sub(v)
		}
		s.Env = env
	}
	s.Sandbox.Write = append(append([]string{}, s.Sandbox.Write...), dir)
	collect, to := s.Collect, s.CollectTo
	finish := func() {
		if collect != "" && to != nil {
			collectFile(filepath.Join(dir, collect), to)
		}
		os.RemoveAll(dir)
	}
	return s, finish, nil
}

// collectFile copies the regular file at path (at most MaxCollectBytes)
// to w; a missing file, or anything but a regular file, gives nothing.
func collectFile(path string, w io.Writer) error {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return errors.New("no regular file to collect")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		return errors.New("the file to collect changed")
	}
	if _, err := io.Copy(w, io.LimitReader(f, MaxCollectBytes)); err != nil {
		return fmt.Errorf("collect %s: %w", filepath.Base(path), err)
	}
	return nil
}
