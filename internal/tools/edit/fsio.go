package edit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
)

// pathLocks serializes writers of the same file across every registry in
// the process. An entry lives while some call holds or waits for it.
var pathLocks = struct {
	mu sync.Mutex
	m  map[string]*pathLock
}{m: map[string]*pathLock{}}

type pathLock struct {
	ch   chan struct{} // holds one token while locked
	refs int
}

// lockPaths locks every key, in sorted order so that calls sharing files
// cannot deadlock. It returns the unlock function, or an Interrupted
// failure when ctx ends while waiting (nothing is then held).
func lockPaths(ctx context.Context, keys []string) (func(), error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var held []*pathLock
	release := func() {
		for _, l := range held {
			<-l.ch
		}
		pathLocks.mu.Lock()
		for i, l := range held {
			l.refs--
			if l.refs == 0 {
				delete(pathLocks.m, keys[i])
			}
		}
		pathLocks.mu.Unlock()
	}
	for _, k := range keys {
		pathLocks.mu.Lock()
		l := pathLocks.m[k]
		if l == nil {
			l = &pathLock{ch: make(chan struct{}, 1)}
			pathLocks.m[k] = l
		}
		l.refs++
		pathLocks.mu.Unlock()
		select {
		case l.ch <- struct{}{}:
			held = append(held, l)
		case <-ctx.Done():
			pathLocks.mu.Lock()
			l.refs--
			if l.refs == 0 {
				delete(pathLocks.m, k)
			}
			pathLocks.mu.Unlock()
			release()
			return nil, failure.Wrap(failure.Interrupted, ctx.Err(), "call was cancelled while waiting for another edit of the same file; nothing was written")
		}
	}
	return release, nil
}

// commit writes the plans through tree. It first stages every new content
// in a synced temporary file next to its target (creating missing
// directories) and proves that every directory of a delete is writable; a
// failure while staging undoes the staging and changes nothing. It then
// renames and removes in change order and syncs the touched directories.
//
// Every directory is created, and every target's directory opened, through
// the tree's root handle; the staging file is then created, renamed over
// the target (or the target removed) and the directory synced through that
// one directory handle. So none of these can land outside the project,
// even when a directory is swapped for a symlink meanwhile, and a staging
// file is always renamed within the directory it was created in. It
// returns the project-relative paths it changed; a failure after the first
// rename is an outcome_unknown failure listing them.
//
// before (which may be nil) is called once before the first effect a crash
// could leave unexplained: before the first directory is created, else
// after every staging file is written and synced (a staging file is
// removed at the next start) and before the first rename or removal. When
// it fails nothing is changed and its error is returned.
func commit(tree *project.Tree, plans []*plan, before func() error) (written []string, err error) {
	root := tree.Root()
	var createdDirs []string
	defer func() {
		for _, p := range plans {
			if p.dir != nil {
				p.dir.Close()
				p.dir = nil
			}
		}
	}()
	cleanup := func() {
		for _, p := range plans {
			if p.tmp != "" {
				p.dir.Remove(p.tmp)
				p.tmp = ""
			}
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			root.Remove(createdDirs[i]) // only succeeds while empty
		}
	}
	ready := before == nil
	effect := func() error {
		if ready {
			return nil
		}
		ready = true
		if err := before(); err != nil {
			cleanup()
			return err
		}
		return nil
	}
	for _, p := range plans {
		if !p.changed {
			continue
		}
		if len(p.dirs) > 0 {
			if err := effect(); err != nil {
				return nil, err
			}
		}
		for _, d := range p.dirs {
			if err := root.Mkdir(d, 0o777); err != nil {
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				cleanup()
				return nil, withChange(ioFailure(tree, err, p.t.rel), p.index, p.t.rel)
			}
			createdDirs = append(createdDirs, d)
		}
		p.dir, err = root.OpenRoot(filepath.Dir(p.t.loc))
		if err == nil {
			switch p.op {
			case OpDelete:
				err = probeWritable(p.dir)
			default:
				p.tmp, err = stage(p.dir, p.content, p.mode, p.op != OpCreate)
			}
		}
		if err != nil {
			cleanup()
			return nil, withChange(ioFailure(tree, err, p.t.rel), p.index, p.t.rel)
		}
	}

	if err := effect(); err != nil {
		return nil, err
	}
	var synced []*os.Root
	for _, p := range plans {
		if !p.changed {
			continue
		}
		base := filepath.Base(p.t.loc)
		if p.op == OpDelete {
			err = p.dir.Remove(base)
		} else {
			err = p.dir.Rename(p.tmp, base)
			if err == nil {
				p.tmp = ""
			}
		}
		if err != nil {
			cleanup()
			if len(written) == 0 {
				return nil, withChange(ioFailure(tree, err, p.t.rel), p.index, p.t.rel)
			}
			return written, failure.Wrap(failure.OutcomeUnknown, err,
				"writing %q failed after %d other file(s) of this call were written; inspect the files before retrying", p.t.rel, len(written)).
				WithDetail("written_paths", slices.Clone(written)).
				WithDetail("failed_path", p.t.rel).
				WithDetail("change_index", p.index).
				WithDetail("state_changed", true)
		}
		written = append(written, p.t.rel)
		synced = append(synced, p.dir)
	}
	for _, d := range synced {
		syncDir(d, ".")
	}
	parents := map[string]bool{}
	for _, d := range createdDirs {
		parents[filepath.Dir(d)] = true
	}
	for d := range parents {
		syncDir(root, d)
	}
	return written, nil
}

// stage writes content to a new synced temporary file in the directory
// dir and returns its name. With keep the file gets mode; otherwise it is
// created 0666 minus the umask, as any new file.
func stage(dir *os.Root, content []byte, mode fs.FileMode, keep bool) (string, error) {
	name := tempName()
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			dir.Remove(name)
		}
	}()
	if keep {
		if err := f.Chmod(mode); err != nil {
			return "", err
		}
	}
	if _, err := f.Write(content); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	ok = true
	return name, nil
}

// probeWritable proves that entries of the directory dir can be created
// and removed.
func probeWritable(dir *os.Root) error {
	name := tempName()
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return dir.Remove(name)
}

// Staging file names: StagingPrefix, 16 lowercase hex digits,
// StagingSuffix. Nothing else writes names of this form.
const (
	StagingPrefix = ".wc-edit-"
	StagingSuffix = ".tmp"
	stagingHex    = 16
)

// tempName is the name of a staging file: hidden, unique and short enough
// for any file system.
func tempName() string {
	var b [stagingHex / 2]byte
	rand.Read(b[:])
	return StagingPrefix + hex.EncodeToString(b[:]) + StagingSuffix
}

// IsStagingName reports whether a file's base name is exactly of the form
// this package gives its staging files.
func IsStagingName(name string) bool {
	mid, ok := strings.CutPrefix(name, StagingPrefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, StagingSuffix)
	if !ok || len(mid) != stagingHex {
		return false
	}
	for _, c := range []byte(mid) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// MaxStagingScanEntries bounds the entries one RemoveStaging walk visits.
const MaxStagingScanEntries = 1_000_000

// RemoveStaging removes the staging files a crash left beneath the project
// rooted at root: regular files whose name IsStagingName. It visits the
// directories the project tools walk (never .git, an ignored directory or
// a symbolic link) and reads each one itself, so that a staging file is
// found even where an ignore rule (such as *.tmp) hides it from listings.
// Every directory is read and every file removed through a root handle on
// root, so nothing outside the project is touched. It stops after
// MaxStagingScanEntries entries (complete is then false). Call it only
// when no edit can be running on the project.
func RemoveStaging(ctx context.Context, root string) (removed int, complete bool, err error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, false, err
	}
	defer r.Close()
	seen := 0
	scan := func(loc string) error {
		dir, err := r.OpenRoot(loc)
		if err != nil {
			return nil // the walk reports unreadable directories; nothing to remove
		}
		defer dir.Close()
		f, err := dir.Open(".")
		if err != nil {
			return nil
		}
		des, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return nil
		}
		for _, de := range des {
			if seen++; seen > MaxStagingScanEntries {
				return walk.SkipAll
			}
			if !de.Type().IsRegular() || !IsStagingName(de.Name()) {
				continue
			}
			if err := dir.Remove(de.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removed++
		}
		return nil
	}
	err = scan(".")
	if err == nil {
		err = walk.Walk(ctx, r, ".", ".", walk.Options{}, func(e walk.Entry) error {
			if e.Kind != walk.KindDir {
				if seen++; seen > MaxStagingScanEntries {
					return walk.SkipAll
				}
				return nil
			}
			return scan(e.Loc)
		})
	}
	if errors.Is(err, walk.SkipAll) {
		err = nil
	}
	return removed, seen <= MaxStagingScanEntries, err
}

// syncDir makes the directory entries of the directory dir of root
// durable. File systems that cannot sync a directory are tolerated: the
// rename itself is atomic.
func syncDir(root *os.Root, dir string) {
	d, err := root.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
