package evidencerow

import (
	"bytes"
	"fmt"

	"github.com/transparency-dev/merkle/compact"

	"github.com/webcodex/webcodex/internal/evidence"
)

// MaxNodeLevel bounds the tree levels a node check compares (a tree of
// 2^63 leaves has 63 levels).
const MaxNodeLevel = 64

// A NodeCursor streams one level's stored interior nodes in index order.
type NodeCursor interface {
	// Next returns the next stored node; ok is false at the end.
	Next() (idx uint64, hash []byte, ok bool, err error)
	Close()
}

// NodeStore is a journal's stored tree index as a verifier reads it.
type NodeStore struct {
	// Level opens the cursor of one level (>= 1).
	Level func(level uint) (NodeCursor, error)
	// State reads the stored compact range (its size and concatenated
	// hashes); found is false when no state is stored.
	State func() (size uint64, hashes []byte, found bool, err error)
}

// NewNodeCheck returns the evidence.NodeCheck that compares s with the
// tree a Checker rebuilds: it merges one cursor per level with the nodes
// the rebuilt tree creates, which appear in index order per level, so it
// holds O(levels) nodes whatever the journal's size.
func NewNodeCheck(s NodeStore) evidence.NodeCheck { return &nodeCheck{store: s} }

type nodeCheck struct {
	store    NodeStore
	levels   [MaxNodeLevel]*levelCursor
	compared uint64
	differ   uint64
	missing  uint64
	extra    uint64
	first    string
	err      error
}

type levelCursor struct {
	cur  NodeCursor
	ok   bool // a current node is held
	idx  uint64
	hash []byte
}

func (c *nodeCheck) cursor(level uint) *levelCursor {
	if c.levels[level] == nil {
		lc := &levelCursor{}
		c.levels[level] = lc
		if c.err != nil {
			return lc
		}
		lc.cur, c.err = c.store.Level(level)
		c.advance(lc)
	}
	return c.levels[level]
}

func (c *nodeCheck) advance(lc *levelCursor) {
	lc.ok = false
	if lc.cur == nil || c.err != nil {
		return
	}
	lc.idx, lc.hash, lc.ok, c.err = lc.cur.Next()
	if c.err != nil {
		lc.ok = false
	}
}

func (c *nodeCheck) note(format string, args ...any) {
	if c.first == "" {
		c.first = fmt.Sprintf(format, args...)
	}
}

func (c *nodeCheck) Visit(id compact.NodeID, h []byte) {
	if id.Level == 0 || id.Level >= MaxNodeLevel {
		return
	}
	lc := c.cursor(id.Level)
	for lc.ok && lc.idx < id.Index {
		c.extra++
		c.note("stored node (%d,%d) is not in the rebuilt tree", id.Level, lc.idx)
		c.advance(lc)
	}
	switch {
	case lc.ok && lc.idx == id.Index:
		c.compared++
		if !bytes.Equal(lc.hash, h) {
			c.differ++
			c.note("stored node (%d,%d) differs from the rebuilt tree", id.Level, id.Index)
		}
		c.advance(lc)
	default:
		c.missing++
		c.note("node (%d,%d) of the rebuilt tree is not stored", id.Level, id.Index)
	}
}

func (c *nodeCheck) Finish(size uint64, hashes [][]byte) ([]string, uint64) {
	for level := uint(1); level < MaxNodeLevel; level++ {
		lc := c.cursor(level)
		for lc.ok {
			c.extra++
			c.note("stored node (%d,%d) is not in the rebuilt tree", level, lc.idx)
			c.advance(lc)
		}
		if lc.cur != nil {
			lc.cur.Close()
		}
	}
	var out []string
	if c.err != nil {
		out = append(out, fmt.Sprintf("the stored tree nodes could not be read: %v", c.err))
	}
	state := ""
	stSize, blob, found, err := c.store.State()
	switch {
	case err != nil:
		out = append(out, fmt.Sprintf("the stored tree state could not be read: %v", err))
	case !found:
		state = "; the stored tree state row is missing"
	case stSize != size || !bytes.Equal(blob, bytes.Join(hashes, nil)):
		state = fmt.Sprintf("; the stored tree state (size %d) differs from the compact range of the %d rebuilt leaves", stSize, size)
	}
	if c.differ+c.missing+c.extra > 0 || state != "" {
		// One finding: the index is one derived structure, and a changed
		// record changes all of it above that record.
		out = append(out, fmt.Sprintf("%d stored tree node(s) differ from the tree rebuilt from the records, %d are missing and %d extra%s%s",
			c.differ, c.missing, c.extra, firstOf(c.first), state))
	}
	return out, c.compared
}

func firstOf(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + s + ")"
}

// HashSize is the size of a tree hash (SHA-256).
const HashSize = 32

// Range is the compact range [0, size) whose hashes are stored
// concatenated in blob, or an error saying why blob is not one.
func Range(size uint64, blob []byte) (*compact.Range, error) {
	if len(blob)%HashSize != 0 {
		return nil, fmt.Errorf("the stored tree state has %d bytes of hashes", len(blob))
	}
	hashes := make([][]byte, 0, len(blob)/HashSize)
	for b := blob; len(b) > 0; b = b[HashSize:] {
		hashes = append(hashes, b[:HashSize:HashSize])
	}
	rng, err := evidence.RangeFactory.NewRange(0, size, hashes)
	if err != nil {
		return nil, fmt.Errorf("the stored tree state is malformed: %w", err)
	}
	return rng, nil
}

// RangeBlob is rng's hashes concatenated, as Range reads them.
func RangeBlob(rng *compact.Range) []byte { return bytes.Join(rng.Hashes(), nil) }
