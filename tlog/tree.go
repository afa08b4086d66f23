package tlog

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// HashSize is the size of every hash of the tree.
const HashSize = 32

var hasher = rfc6962.DefaultHasher

var factory = &compact.RangeFactory{Hash: hasher.HashChildren}

// LeafHash returns the leaf hash of the entry whose chain hash is
// entryHash: SHA-256(0x00 ‖ entryHash).
func LeafHash(entryHash []byte) []byte { return hasher.HashLeaf(entryHash) }

// EntryLeafHash returns the leaf hash of the entry whose chain hash is
// hexHash, 64 lowercase hex digits as the ledger writes it.
func EntryLeafHash(hexHash string) ([]byte, error) {
	b, err := hex.DecodeString(hexHash)
	if err != nil || len(b) != HashSize || hex.EncodeToString(b) != hexHash {
		return nil, fmt.Errorf("entry hash %q is not 64 lowercase hex digits", hexHash)
	}
	return LeafHash(b), nil
}

// EmptyRoot is the root hash of the tree of no leaves, SHA-256 of nothing.
func EmptyRoot() []byte { return hasher.EmptyRoot() }

// Pos returns the position of the complete node id in the post-order list
// of a tree's complete nodes: a node comes right after its right child, so
// the list only ever grows at its end as leaves are appended.
func Pos(id compact.NodeID) uint64 {
	last := (id.Index+1)<<id.Level - 1 // the last leaf under id
	return NodeCount(last) + uint64(id.Level)
}

// NodeCount returns how many complete nodes a tree of size leaves has:
// the length of its post-order list, 2·size - popcount(size).
func NodeCount(size uint64) uint64 {
	return 2*size - uint64(bits.OnesCount64(size))
}

// SizeOf returns the tree size whose node list has count nodes, or an
// error when no tree has exactly count nodes (a list cut short).
func SizeOf(count uint64) (uint64, error) {
	lo, hi := count/2, count/2+64 // NodeCount(n) lies in [2n-64, 2n]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if NodeCount(mid) < count {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if NodeCount(lo) != count {
		return 0, fmt.Errorf("%d nodes is no complete tree", count)
	}
	return lo, nil
}

// NodeReader reads complete nodes of a tree by their positions (see Pos).
// ReadNodes returns one hash for each position, in order, or an error when
// any is missing.
type NodeReader interface {
	ReadNodes(ctx context.Context, pos []uint64) ([][]byte, error)
}

// Tree is the right edge of a tree being appended to: the roots of its
// perfect subtrees, enough to append and to compute the root hash. It is
// not safe for concurrent use.
type Tree struct {
	r *compact.Range
}

// NewTree returns an empty tree.
func NewTree() *Tree { return &Tree{r: factory.NewEmptyRange(0)} }

// LoadTree returns the tree of size leaves whose nodes nr holds.
func LoadTree(ctx context.Context, nr NodeReader, size uint64) (*Tree, error) {
	ids := compact.RangeNodes(0, size, nil)
	hashes, err := nr.ReadNodes(ctx, positions(ids))
	if err != nil {
		return nil, fmt.Errorf("load tree of size %d: %w", size, err)
	}
	r, err := factory.NewRange(0, size, hashes)
	if err != nil {
		return nil, fmt.Errorf("load tree of size %d: %w", size, err)
	}
	return &Tree{r: r}, nil
}

// Size returns the number of leaves.
func (t *Tree) Size() uint64 { return t.r.End() }

// Append adds the leaf whose leaf hash is leafHash and calls keep, when
// not nil, with the position and hash of every node that becomes complete,
// the leaf first, in position order.
func (t *Tree) Append(leafHash []byte, keep func(pos uint64, hash []byte)) error {
	var visit compact.VisitFn
	if keep != nil {
		visit = func(id compact.NodeID, hash []byte) { keep(Pos(id), hash) }
	}
	if err := t.r.Append(leafHash, visit); err != nil {
		return fmt.Errorf("append leaf %d: %w", t.r.End(), err)
	}
	return nil
}

// Root returns the root hash.
func (t *Tree) Root() []byte {
	if t.r.End() == 0 {
		return EmptyRoot()
	}
	root, err := t.r.GetRootHash(nil)
	if err != nil {
		// A range that begins at 0, as every Tree's does, always has a root.
		panic(fmt.Sprintf("tlog: root of a tree from 0: %v", err))
	}
	return root
}

// Clone returns a copy of t that appends independently.
func (t *Tree) Clone() *Tree {
	hashes := t.r.Hashes()
	r, err := factory.NewRange(0, t.r.End(), append([][]byte(nil), hashes...))
	if err != nil {
		panic(fmt.Sprintf("tlog: clone a tree: %v", err))
	}
	return &Tree{r: r}
}

// RootAt returns the root hash of the tree of size leaves held by nr.
func RootAt(ctx context.Context, nr NodeReader, size uint64) ([]byte, error) {
	t, err := LoadTree(ctx, nr, size)
	if err != nil {
		return nil, err
	}
	return t.Root(), nil
}

// InclusionProof returns the proof that leaf index is in the tree of size
// leaves held by nr.
func InclusionProof(ctx context.Context, nr NodeReader, index, size uint64) ([][]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("inclusion proof: leaf %d is not in a tree of size %d", index, size)
	}
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof: %w", err)
	}
	return rehash(ctx, nr, nodes)
}

// ConsistencyProof returns the proof that the tree of size1 leaves is a
// prefix of the tree of size2 leaves, both held by nr.
func ConsistencyProof(ctx context.Context, nr NodeReader, size1, size2 uint64) ([][]byte, error) {
	if size1 > size2 {
		return nil, fmt.Errorf("consistency proof: size %d is past size %d", size1, size2)
	}
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("consistency proof: %w", err)
	}
	return rehash(ctx, nr, nodes)
}

func rehash(ctx context.Context, nr NodeReader, nodes proof.Nodes) ([][]byte, error) {
	hashes, err := nr.ReadNodes(ctx, positions(nodes.IDs))
	if err != nil {
		return nil, fmt.Errorf("read proof nodes: %w", err)
	}
	return nodes.Rehash(hashes, hasher.HashChildren)
}

func positions(ids []compact.NodeID) []uint64 {
	pos := make([]uint64, len(ids))
	for i, id := range ids {
		pos[i] = Pos(id)
	}
	return pos
}

// VerifyInclusion checks that leafHash is leaf index of the tree of size
// leaves whose root is root.
func VerifyInclusion(index, size uint64, leafHash []byte, p [][]byte, root []byte) error {
	if err := proof.VerifyInclusion(hasher, index, size, leafHash, p, root); err != nil {
		return fmt.Errorf("inclusion of leaf %d in tree of size %d: %w", index, size, err)
	}
	return nil
}

// VerifyConsistency checks that the tree of size1 leaves with root1 is a
// prefix of the tree of size2 leaves with root2.
func VerifyConsistency(size1, size2 uint64, p [][]byte, root1, root2 []byte) error {
	if err := proof.VerifyConsistency(hasher, size1, size2, p, root1, root2); err != nil {
		return fmt.Errorf("consistency of size %d with size %d: %w", size1, size2, err)
	}
	return nil
}

// MemNodes is a NodeReader over an in-memory node list, for building
// proofs from an exported ledger. Keep is its Tree.Append callback.
type MemNodes [][]byte

// Keep records the node at pos, which must be the next position.
func (m *MemNodes) Keep(pos uint64, hash []byte) {
	if pos != uint64(len(*m)) {
		panic(fmt.Sprintf("tlog: node %d kept after %d nodes", pos, len(*m)))
	}
	*m = append(*m, hash)
}

// ReadNodes returns the nodes at pos: the list's own slices, not copies.
func (m MemNodes) ReadNodes(_ context.Context, pos []uint64) ([][]byte, error) {
	out := make([][]byte, len(pos))
	for i, p := range pos {
		if p >= uint64(len(m)) {
			return nil, errMissingNode(p)
		}
		out[i] = m[p]
	}
	return out, nil
}

// ErrMissingNode is what a NodeReader's error wraps when a position is
// past its list.
var ErrMissingNode = errors.New("node not stored")

func errMissingNode(pos uint64) error { return fmt.Errorf("node %d: %w", pos, ErrMissingNode) }

// ErrorMissingNode returns the error a NodeReader reports for pos, which
// wraps ErrMissingNode.
func ErrorMissingNode(pos uint64) error { return errMissingNode(pos) }
