package evidencedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencerow"
	"github.com/webcodex/webcodex/internal/failure"
)

// The tree index (docs/decisions/0022-evidence-tree-nodes.md): tree_nodes
// holds every completed interior node of the RFC 6962 tree (level >= 1;
// level 0 is records.leaf_hash) and tree_state the compact range at the
// journal's size. Both are derived from the records and written in the
// transaction of each append, so they commit or roll back with it. Start-up
// reads the one state row; proofs read the O(log n) nodes they need.
const (
	sqlState    = `SELECT size, hashes FROM tree_state WHERE id = 1`
	sqlPutState = `INSERT INTO tree_state (id, size, hashes) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET size = excluded.size, hashes = excluded.hashes`
	sqlPutNode  = `INSERT OR REPLACE INTO tree_nodes (level, idx, hash) VALUES (?, ?, ?)`
	sqlNode     = `SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?`
	sqlLeaf     = `SELECT leaf_hash FROM records WHERE idx = ?`
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

// nodeRead reads stored nodes through q.
func nodeRead(ctx context.Context, q querier) evidencerow.NodeRead {
	return func(id compact.NodeID) ([]byte, bool, error) {
		h, err := node(ctx, q, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		return h, err == nil, err
	}
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
	rng, err := evidencerow.Range(next, blob)
	if err != nil {
		return nil, err.Error(), nil
	}
	hashes := rng.Hashes()
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
	_, err := tx.StmtContext(ctx, j.stmts.putState).ExecContext(ctx, int64(rng.End()), evidencerow.RangeBlob(rng))
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
	n, err := j.size(ctx)
	if err != nil {
		return nil, err
	}
	return evidencerow.InclusionProof(index, size, n, nodeRead(ctx, j.db.Read))
}

// ConsistencyProof returns the RFC 6962 consistency proof from size1 to
// size2, read from the stored nodes (O(log n) point reads). size2 must not
// exceed the journal's size (failure.InvalidArguments).
func (j *Journal) ConsistencyProof(ctx context.Context, size1, size2 uint64) ([][]byte, error) {
	n, err := j.size(ctx)
	if err != nil {
		return nil, err
	}
	return evidencerow.ConsistencyProof(size1, size2, n, nodeRead(ctx, j.db.Read))
}

// size is the journal's size (the records' next index).
func (j *Journal) size(ctx context.Context) (uint64, error) {
	var next int64
	if err := j.db.QueryRow(ctx, sqlNext).Scan(&next); err != nil {
		return 0, wrapRead(err)
	}
	return uint64(next), nil
}

// sqlCursor streams one level of tree_nodes (evidencerow.NodeCursor).
type sqlCursor struct{ rows *sql.Rows }

func (c sqlCursor) Next() (uint64, []byte, bool, error) {
	if !c.rows.Next() {
		return 0, nil, false, c.rows.Err()
	}
	var i int64
	var h []byte
	if err := c.rows.Scan(&i, &h); err != nil {
		return 0, nil, false, err
	}
	return uint64(i), h, true, nil
}

func (c sqlCursor) Close() { c.rows.Close() }

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
	return evidencerow.NewNodeCheck(evidencerow.NodeStore{
		Level: func(level uint) (evidencerow.NodeCursor, error) {
			rows, err := tx.QueryContext(ctx, `SELECT idx, hash FROM tree_nodes WHERE level = ? ORDER BY idx`, int64(level))
			if err != nil {
				return nil, err
			}
			return sqlCursor{rows}, nil
		},
		State: func() (uint64, []byte, bool, error) {
			var size int64
			var blob []byte
			err := tx.QueryRowContext(ctx, sqlState).Scan(&size, &blob)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, nil, false, nil
			}
			return uint64(size), blob, err == nil, err
		},
	}), nil
}
