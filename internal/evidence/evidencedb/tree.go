package evidencedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// The tree index (docs/decisions/0022-evidence-tree-nodes.md): tree_nodes
// holds every completed interior node of the RFC 6962 tree (level >= 1;
// level 0 is records.leaf_hash) and tree_state the compact range at the
// journal's size. Both are derived from the records and written in the
// transaction of each append, so they commit or roll back with it. Start-up
// reads the one state row; proofs read the O(log n) nodes they need.
const (
	sqlState     = `SELECT size, hashes FROM tree_state WHERE id = 1`
	sqlPutState  = `INSERT INTO tree_state (id, size, hashes) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET size = excluded.size, hashes = excluded.hashes`
	sqlPutNode   = `INSERT OR REPLACE INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)`
	sqlNode      = `SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?`
	sqlLeaf      = `SELECT leaf_hash FROM records WHERE idx = ?`
	hashSize     = 32
	maxNodeLevel = 64
)

// querier is what node reads need: a transaction or the read pool.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// node reads one stored node: a leaf hash at level 0, an interior node
// otherwise. A node that is not stored is sql.ErrNoRows.
func node(ctx context.Context, q querier, id compact.NodeID) ([]byte, error) {
	var h []byte
	var err error
	if id.Level == 0 {
		err = q.QueryRowContext(ctx, sqlLeaf, int64(id.Index)).Scan(&h)
	} else {
		err = q.QueryRowContext(ctx, sqlNode, int64(id.Level), int64(id.Index)).Scan(&h)
	}
	return h, err
}

// nodeReader reads proof nodes through a small cache (the proofs of one
// bundle share most of their upper nodes).
type nodeReader struct {
	ctx   context.Context
	q     querier
	cache map[compact.NodeID][]byte
}

func (r *nodeReader) get(ids []compact.NodeID) ([][]byte, error) {
	hs := make([][]byte, len(ids))
	for i, id := range ids {
		h, ok := r.cache[id]
		if !ok {
			var err error
			if h, err = node(r.ctx, r.q, id); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return nil, failure.New(failure.Internal, "evidence tree node (%d,%d) is not stored; run `webcodex evidence verify`", id.Level, id.Index)
				}
				return nil, wrapRead(err)
			}
			r.cache[id] = h
		}
		hs[i] = append([]byte(nil), h...) // Rehash rewrites its input
	}
	return hs, nil
}

// storedRange returns the compact range of the tree_state row when it
// matches the journal (size equal to next, the table's next index, and
// every range hash equal to the stored node at its position), or nil and
// the reason it cannot be used. Its cost is O(log n) point reads.
func storedRange(ctx context.Context, tx *sql.Tx, next uint64) (*compact.Range, string, error) {
	var size int64
	var blob []byte
	err := tx.QueryRowContext(ctx, sqlState).Scan(&size, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		if next == 0 { // a new journal: the first append writes the row
			return evidence.RangeFactory.NewEmptyRange(0), "", nil
		}
		return nil, "no stored tree state (a journal written before tree nodes were stored)", nil
	}
	if err != nil {
		return nil, "", err
	}
	if uint64(size) != next {
		return nil, fmt.Sprintf("the stored tree state has size %d but the journal %d records", size, next), nil
	}
	if len(blob)%hashSize != 0 {
		return nil, fmt.Sprintf("the stored tree state has %d bytes of hashes", len(blob)), nil
	}
	hashes := make([][]byte, 0, len(blob)/hashSize)
	for b := blob; len(b) > 0; b = b[hashSize:] {
		hashes = append(hashes, b[:hashSize:hashSize])
	}
	rng, err := evidence.RangeFactory.NewRange(0, next, hashes)
	if err != nil {
		return nil, fmt.Sprintf("the stored tree state is malformed: %v", err), nil
	}
	for i, id := range compact.RangeNodes(0, next, nil) {
		h, err := node(ctx, tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Sprintf("tree node (%d,%d) of the stored state is missing", id.Level, id.Index), nil
		}
		if err != nil {
			return nil, "", err
		}
		if !bytes.Equal(h, hashes[i]) {
			return nil, fmt.Sprintf("tree node (%d,%d) differs from the stored state", id.Level, id.Index), nil
		}
	}
	return rng, "", nil
}

// putState stores rng as the tree state inside tx.
func (j *Journal) putState(ctx context.Context, tx *sql.Tx, rng *compact.Range) error {
	_, err := tx.StmtContext(ctx, j.stmts.putState).ExecContext(ctx, int64(rng.End()), bytes.Join(rng.Hashes(), nil))
	return err
}

// rebuild recomputes the range from every stored leaf hash, rewrites the
// whole node table and the state row from it inside tx, and returns it
// (O(n): only for a journal without a usable state row). A gap in the
// indexes is failure.Unavailable.
func (j *Journal) rebuild(ctx context.Context, tx *sql.Tx) (*compact.Range, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM tree_nodes`); err != nil {
		return nil, err
	}
	put := tx.StmtContext(ctx, j.stmts.putNode)
	var putErr error
	visit := func(id compact.NodeID, h []byte) {
		if id.Level > 0 && putErr == nil {
			_, putErr = put.ExecContext(ctx, int64(id.Level), int64(id.Index), h)
		}
	}
	rng := evidence.RangeFactory.NewEmptyRange(0)
	rows, err := tx.QueryContext(ctx, `SELECT idx, leaf_hash FROM records ORDER BY idx`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var leaf []byte
		if err := rows.Scan(&i, &leaf); err != nil {
			return nil, err
		}
		if uint64(i) != rng.End() {
			return nil, failure.New(failure.Unavailable, "evidence journal index %d is missing; run `webcodex evidence verify`", rng.End())
		}
		if err := rng.Append(leaf, visit); err != nil {
			return nil, err
		}
		if putErr != nil {
			return nil, putErr
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := j.putState(ctx, tx, rng); err != nil {
		return nil, err
	}
	return rng, nil
}

// load sets j.rng from the state row when it matches a table whose next
// index is next, and rebuilds it (saying why in the log) otherwise. j.mu
// held, inside a writer transaction.
func (j *Journal) load(ctx context.Context, tx *sql.Tx, next uint64) error {
	rng, why, err := storedRange(ctx, tx, next)
	if err != nil {
		return err
	}
	if rng == nil {
		j.log.Warn("evidence: rebuilding the tree index from every leaf", "reason", why, "records", next)
		if rng, err = j.rebuild(ctx, tx); err != nil {
			return err
		}
	}
	j.rng = rng
	return nil
}

// InclusionProof returns the RFC 6962 inclusion proof of the leaf at index
// in the tree of size, read from the stored nodes (O(log n) point reads).
// size must not exceed the journal's size (failure.InvalidArguments).
func (j *Journal) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	if err := j.checkSize(ctx, size); err != nil {
		return nil, err
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "inclusion proof")
	}
	r := &nodeReader{ctx: ctx, q: j.db.Read, cache: map[compact.NodeID][]byte{}}
	return evidence.ProofFromNodes(n, r.get)
}

// ConsistencyProof returns the RFC 6962 consistency proof from size1 to
// size2, read from the stored nodes (O(log n) point reads). size2 must not
// exceed the journal's size (failure.InvalidArguments).
func (j *Journal) ConsistencyProof(ctx context.Context, size1, size2 uint64) ([][]byte, error) {
	if err := j.checkSize(ctx, size2); err != nil {
		return nil, err
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, failure.Wrap(failure.InvalidArguments, err, "consistency proof")
	}
	r := &nodeReader{ctx: ctx, q: j.db.Read, cache: map[compact.NodeID][]byte{}}
	return evidence.ProofFromNodes(n, r.get)
}

func (j *Journal) checkSize(ctx context.Context, size uint64) error {
	var next int64
	if err := j.db.QueryRow(ctx, sqlNext).Scan(&next); err != nil {
		return wrapRead(err)
	}
	if size > uint64(next) {
		return failure.New(failure.InvalidArguments, "tree size %d exceeds the journal's %d records", size, next)
	}
	return nil
}

// nodeCheck is evidence.NodeCheck for Verify: it streams tree_nodes one
// cursor per level (primary-key order, no sort) and merges them with the
// nodes the rebuilt tree creates, which appear in index order per level.
type nodeCheck struct {
	ctx      context.Context
	tx       *sql.Tx
	levels   [maxNodeLevel]*levelCursor
	compared uint64
	differ   uint64
	missing  uint64
	extra    uint64
	first    string
	err      error
}

type levelCursor struct {
	rows *sql.Rows
	ok   bool // rows holds a current row
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
		lc.rows, c.err = c.tx.QueryContext(c.ctx, `SELECT idx, hash FROM tree_nodes WHERE level = ? ORDER BY idx`, int64(level))
		c.advance(lc)
	}
	return c.levels[level]
}

func (c *nodeCheck) advance(lc *levelCursor) {
	lc.ok = false
	if lc.rows == nil || c.err != nil || !lc.rows.Next() {
		if lc.rows != nil && c.err == nil {
			c.err = lc.rows.Err()
		}
		return
	}
	var i int64
	if c.err = lc.rows.Scan(&i, &lc.hash); c.err == nil {
		lc.idx, lc.ok = uint64(i), true
	}
}

func (c *nodeCheck) note(format string, args ...any) {
	if c.first == "" {
		c.first = fmt.Sprintf(format, args...)
	}
}

func (c *nodeCheck) Visit(id compact.NodeID, h []byte) {
	if id.Level == 0 || id.Level >= maxNodeLevel {
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
	for level := uint(1); level < maxNodeLevel; level++ {
		lc := c.cursor(level)
		for lc.ok {
			c.extra++
			c.note("stored node (%d,%d) is not in the rebuilt tree", level, lc.idx)
			c.advance(lc)
		}
		if lc.rows != nil {
			lc.rows.Close()
		}
	}
	var out []string
	if c.err != nil {
		out = append(out, fmt.Sprintf("the stored tree nodes could not be read: %v", c.err))
	}
	var stSize int64
	var blob []byte
	state := ""
	err := c.tx.QueryRowContext(c.ctx, sqlState).Scan(&stSize, &blob)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		state = "; the stored tree state row is missing"
	case err != nil:
		out = append(out, fmt.Sprintf("the stored tree state could not be read: %v", err))
	case uint64(stSize) != size || !bytes.Equal(blob, bytes.Join(hashes, nil)):
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

// newNodeCheck returns the node check for a journal whose tree index was
// built (a tree_state row or any node exists), or nil: a journal written
// before the index existed, or not opened by a server since, has nothing
// to compare (Report.TreeNodesChecked is then 0).
func newNodeCheck(ctx context.Context, tx *sql.Tx) (evidence.NodeCheck, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('tree_nodes', 'tree_state')`).Scan(&n); err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, nil
	}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM tree_state) + (SELECT COUNT(*) FROM (SELECT 1 FROM tree_nodes LIMIT 1))`).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return &nodeCheck{ctx: ctx, tx: tx}, nil
}

func firstOf(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + s + ")"
}
