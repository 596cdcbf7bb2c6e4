package evidence

import (
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
)

// RangeFactory builds compact ranges with the RFC 6962 hasher.
var RangeFactory = &compact.RangeFactory{Hash: Hasher.HashChildren}

// RootOf returns the root hash of a compact range that starts at 0: the
// RFC 6962 empty root for an empty range.
func RootOf(r *compact.Range) ([]byte, error) {
	if r.End() == 0 {
		return Hasher.EmptyRoot(), nil
	}
	return r.GetRootHash(nil)
}

// TreeBuilder rebuilds an RFC 6962 tree from a stream of leaf hashes in
// memory bounded by O(log n) plus what was asked for: the roots at chosen
// sizes and the node hashes of chosen inclusion and consistency proofs.
// Declare every Want* before the first Append.
type TreeBuilder struct {
	rng   *compact.Range
	visit compact.VisitFn
	want  map[compact.NodeID]bool
	nodes map[compact.NodeID][]byte
	sizes map[uint64]bool
	roots map[uint64][]byte
}

// NewTreeBuilder returns an empty builder.
func NewTreeBuilder() *TreeBuilder {
	return &TreeBuilder{rng: RangeFactory.NewEmptyRange(0), want: map[compact.NodeID]bool{},
		nodes: map[compact.NodeID][]byte{}, sizes: map[uint64]bool{}, roots: map[uint64][]byte{0: Hasher.EmptyRoot()}}
}

// VisitNodes makes Append call fn with every node it creates (the leaf,
// then each completed interior node), in creation order. Call it before
// the first Append.
func (t *TreeBuilder) VisitNodes(fn compact.VisitFn) { t.visit = fn }

// Hashes returns the hashes of the compact range of the leaves appended
// so far (the roots of its perfect subtrees, left to right).
func (t *TreeBuilder) Hashes() [][]byte { return t.rng.Hashes() }

// WantRoot asks for the root hash at size.
func (t *TreeBuilder) WantRoot(size uint64) { t.sizes[size] = true }

// WantInclusion asks for the inclusion proof of index in the tree of size.
func (t *TreeBuilder) WantInclusion(index, size uint64) error {
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return err
	}
	t.wantNodes(n)
	return nil
}

// WantConsistency asks for the consistency proof from size1 to size2.
func (t *TreeBuilder) WantConsistency(size1, size2 uint64) error {
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return err
	}
	t.wantNodes(n)
	return nil
}

func (t *TreeBuilder) wantNodes(n proof.Nodes) {
	for _, id := range n.IDs {
		t.want[id] = true
	}
}

// Append adds the next leaf hash.
func (t *TreeBuilder) Append(leaf []byte) error {
	visit := t.visit
	if len(t.want) > 0 {
		outer := t.visit
		visit = func(id compact.NodeID, h []byte) {
			if t.want[id] {
				t.nodes[id] = append([]byte(nil), h...)
			}
			if outer != nil {
				outer(id, h)
			}
		}
	}
	if err := t.rng.Append(leaf, visit); err != nil {
		return err
	}
	if t.sizes[t.rng.End()] {
		root, err := t.rng.GetRootHash(nil)
		if err != nil {
			return err
		}
		t.roots[t.rng.End()] = root
	}
	return nil
}

// Size is the number of leaves appended.
func (t *TreeBuilder) Size() uint64 { return t.rng.End() }

// Root is the root hash of the leaves appended so far.
func (t *TreeBuilder) Root() []byte {
	r, _ := RootOf(t.rng)
	return r
}

// RootAt returns the root at a size asked for with WantRoot (or 0), once
// that many leaves were appended.
func (t *TreeBuilder) RootAt(size uint64) ([]byte, bool) {
	r, ok := t.roots[size]
	return r, ok
}

// InclusionProof returns the proof asked for with WantInclusion.
func (t *TreeBuilder) InclusionProof(index, size uint64) ([][]byte, error) {
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, err
	}
	return t.build(n)
}

// ConsistencyProof returns the proof asked for with WantConsistency.
func (t *TreeBuilder) ConsistencyProof(size1, size2 uint64) ([][]byte, error) {
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, err
	}
	return t.build(n)
}

func (t *TreeBuilder) build(n proof.Nodes) ([][]byte, error) {
	hs := make([][]byte, len(n.IDs))
	for i, id := range n.IDs {
		h, ok := t.nodes[id]
		if !ok {
			return nil, fmt.Errorf("evidence: proof node (%d,%d) was not captured", id.Level, id.Index)
		}
		hs[i] = h
	}
	return n.Rehash(hs, Hasher.HashChildren)
}

// ProofFromNodes returns the proof described by n (from proof.Inclusion or
// proof.Consistency) given get, which returns the stored hashes of the
// perfect-subtree nodes n.IDs in order; ephemeral nodes are rehashed from
// them. It reads O(log n) nodes and never a leaf stream.
func ProofFromNodes(n proof.Nodes, get func(ids []compact.NodeID) ([][]byte, error)) ([][]byte, error) {
	hs, err := get(n.IDs)
	if err != nil {
		return nil, err
	}
	if len(hs) != len(n.IDs) {
		return nil, fmt.Errorf("evidence: %d node hashes for %d proof nodes", len(hs), len(n.IDs))
	}
	return n.Rehash(hs, Hasher.HashChildren)
}
