package workflowdb

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// instancesDir is the directory, beside workflow.db, holding one lock file
// per process that has the ledger open.
const instancesDir = "workflow.instances"

// An instance is this process's claim on the ledger: an exclusive lock on
// its own file (lock_unix.go, lock_windows.go), held until Close (or
// released by the kernel when the process dies). Every open call is
// stamped with the instance that started it, so recovery in one process
// never finishes the live calls of another process serving the same data
// directory (a stdio server beside an HTTP one).
type instance struct {
	id   string
	dir  string
	file *os.File
}

func newInstance(dbPath string) (*instance, error) {
	dir := filepath.Join(filepath.Dir(dbPath), instancesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workflowdb: instances: %w", err)
	}
	var b [12]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	f, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workflowdb: instance lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("workflowdb: instance lock: %w", err)
	}
	return &instance{id: id, dir: dir, file: f}, nil
}

// close releases the claim.
func (in *instance) close() { removeLocked(in.file) }

// alive reports whether the process of instance id (not this one) still
// holds its lock. An empty id (a call opened before instances were
// recorded) and a missing lock file are dead. A dead instance's lock file
// is removed.
func (in *instance) alive(id string) bool {
	if id == "" || id == in.id {
		return id == in.id
	}
	if len(id) != 24 {
		return false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return false
	}
	name := filepath.Join(in.dir, id+".lock")
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return lockHeld(err)
	}
	removeLocked(f)
	return false
}

// Shared reports whether another process has the ledger open now.
func (s *Store) Shared() bool {
	des, err := os.ReadDir(s.inst.dir)
	if err != nil {
		return true // unknown: assume it is
	}
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".lock")
		if ok && id != s.inst.id && s.inst.alive(id) {
			return true
		}
	}
	return false
}

// markAcknowledged writes seq, the number of this process's newest
// acknowledged read-only call, at the start of its lock file, before the
// call's response is sent. The write is not synced: it survives the
// process being killed, the failure a behind write is exposed to.
func (in *instance) markAcknowledged(seq int64) {
	var b [20]byte
	copy(b[:], fmt.Sprintf("%019d\n", seq))
	in.file.WriteAt(b[:], 0)
}

// acknowledgedBy reads the newest acknowledged read of instance id from
// its lock file (0 when it holds none).
func acknowledgedBy(dir, id string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, id+".lock"))
	if err != nil || len(b) < 20 {
		return 0
	}
	var n int64
	if _, err := fmt.Sscanf(string(b[:19]), "%d", &n); err != nil {
		return 0
	}
	return n
}
