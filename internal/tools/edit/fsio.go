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

// commit writes the plans. It first stages every new content in a synced
// temporary file next to its target (creating missing directories) and
// proves that every directory of a delete is writable; a failure while
// staging undoes the staging and changes nothing. It then renames and
// removes in change order and syncs the touched directories. It returns
// the project-relative paths it changed; a failure after the first rename
// is an outcome_unknown failure listing them.
func commit(plans []*plan) (written []string, err error) {
	var createdDirs []string
	cleanup := func() {
		for _, p := range plans {
			if p.tmp != "" {
				os.Remove(p.tmp)
				p.tmp = ""
			}
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			os.Remove(createdDirs[i]) // only succeeds while empty
		}
	}
	for _, p := range plans {
		if !p.changed {
			continue
		}
		for _, d := range p.dirs {
			if err := os.Mkdir(d, 0o777); err != nil {
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				cleanup()
				return nil, withChange(ioFailure(err, p.t.rel), p.index, p.t.rel)
			}
			createdDirs = append(createdDirs, d)
		}
		switch p.op {
		case OpDelete:
			err = probeWritable(filepath.Dir(p.t.abs))
		default:
			p.tmp, err = stage(filepath.Dir(p.t.abs), p.content, p.mode, p.op != OpCreate)
		}
		if err != nil {
			cleanup()
			return nil, withChange(ioFailure(err, p.t.rel), p.index, p.t.rel)
		}
	}

	dirs := map[string]bool{}
	for _, p := range plans {
		if !p.changed {
			continue
		}
		if p.op == OpDelete {
			err = os.Remove(p.t.abs)
		} else {
			err = os.Rename(p.tmp, p.t.abs)
			if err == nil {
				p.tmp = ""
			}
		}
		if err != nil {
			cleanup()
			if len(written) == 0 {
				return nil, withChange(ioFailure(err, p.t.rel), p.index, p.t.rel)
			}
			return written, failure.Wrap(failure.OutcomeUnknown, err,
				"writing %q failed after %d other file(s) of this call were written; inspect the files before retrying", p.t.rel, len(written)).
				WithDetail("written_paths", slices.Clone(written)).
				WithDetail("failed_path", p.t.rel).
				WithDetail("change_index", p.index).
				WithDetail("state_changed", true)
		}
		written = append(written, p.t.rel)
		dirs[filepath.Dir(p.t.abs)] = true
	}
	for _, d := range createdDirs {
		dirs[filepath.Dir(d)] = true
	}
	for d := range dirs {
		syncDir(d)
	}
	return written, nil
}

// stage writes content to a new synced temporary file in dir. With keep
// the file gets mode; otherwise it is created 0666 minus the umask, as any
// new file.
func stage(dir string, content []byte, mode fs.FileMode, keep bool) (string, error) {
	name := filepath.Join(dir, tempName())
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(name)
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

// probeWritable proves that entries of dir can be created and removed.
func probeWritable(dir string) error {
	name := filepath.Join(dir, tempName())
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(name)
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
// It stops after MaxStagingScanEntries entries (complete is then false).
// Call it only when no edit can be running on the project.
func RemoveStaging(ctx context.Context, root string) (removed int, complete bool, err error) {
	seen := 0
	scan := func(dir string) error {
		des, err := os.ReadDir(dir)
		if err != nil {
			return nil // the walk reports unreadable directories; nothing to remove
		}
		for _, de := range des {
			if seen++; seen > MaxStagingScanEntries {
				return walk.SkipAll
			}
			if !de.Type().IsRegular() || !IsStagingName(de.Name()) {
				continue
			}
			if err := os.Remove(filepath.Join(dir, de.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removed++
		}
		return nil
	}
	err = scan(root)
	if err == nil {
		err = walk.Walk(ctx, root, ".", walk.Options{}, func(e walk.Entry) error {
			if e.Kind != walk.KindDir {
				if seen++; seen > MaxStagingScanEntries {
					return walk.SkipAll
				}
				return nil
			}
			return scan(e.Abs)
		})
	}
	if errors.Is(err, walk.SkipAll) {
		err = nil
	}
	return removed, seen <= MaxStagingScanEntries, err
}

// syncDir makes the directory entries of dir durable. File systems that
// cannot sync a directory are tolerated: the rename itself is atomic.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
