package tlog

import (
	"context"
	"crypto/sha256"
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

var factory = &compact.RangeFactory{Hash: hashChildren}

// hashChildren is RFC 6962's interior node hash, SHA-256(0x01 ‖ left ‖
// right), for two hashes in one call with no hash.Hash to allocate, which
// rfc6962.Hasher allocates for every node: a verify of the notes hashes
// a node for every entry. TestHashChildren holds it to rfc6962.
func hashChildren(left, right []byte) []byte {
	if len(left) != HashSize || len(right) != HashSize {
		return hasher.HashChildren(left, right)
	}
	var buf [1 + 2*HashSize]byte
	buf[0] = 1
	copy(buf[1:], left)
	copy(buf[1+HashSize:], right)
	h := sha256.Sum256(buf[:])
	return h[:]
}

// LeafHash returns the leaf hash of the entry whose chain hash is
// entryHash: SHA-256(0x00 ‖ entryHash).
func LeafHash(entryHash []byte) []byte { return hasher.HashLeaf(entryHash) }

// EntryLeafHash returns the leaf hash of the entry whose chain hash is
// hexHash, 64 lowercase hex digits as the ledger writes it. It decodes
// into the leaf's own buffer and hashes it with one call, no hash.Hash:
// a verify of the notes calls it for every entry (TestEntryLeafHash holds
// it to LeafHash).
func EntryLeafHash(hexHash string) ([]byte, error) {
	var leaf [1 + HashSize]byte // RFC 6962: 0x00 ‖ the entry's hash
	if len(hexHash) != 2*HashSize {
		return nil, fmt.Errorf("entry hash %q is not 64 lowercase hex digits", hexHash)
	}
	for i := range HashSize {
		hi, lo := nibble(hexHash[2*i]), nibble(hexHash[2*i+1])
		if hi > 15 || lo > 15 {
			return nil, fmt.Errorf("entry hash %q is not 64 lowercase hex digits", hexHash)
		}
		leaf[1+i] = hi<<4 | lo
	}
	h := sha256.Sum256(leaf[:])
	return h[:], nil
}

// nibble returns the value of a lowercase hex digit, or 255.
func nibble(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

// EmptyRoot is the root hash of the tree of no leaves, SHA-256 of nothing.
func EmptyRoot() []byte { return hasher.EmptyRoot() }

// Pos returns the position of the complete node id in the post-order list
// of a tree's complete nodes: a node comes right after its right child, so
// the list only ever grows at its end as leaves are appended.
func Pos(id compact.NodeID) uint64 {
	last := (id.Index+1)<<id.Level - 1 // the last leaf under id
	return nodeCount(last) + uint64(id.Level)
}

// nodeCount returns how many complete nodes a tree of size leaves has:
// 2·size - popcount(size).
func nodeCount(size uint64) uint64 {
	return 2*size - uint64(bits.OnesCount64(size))
}

// NodeReader reads complete nodes of a tree. ReadNodes returns one hash
// for each id, in order, or an error wrapping ErrMissingNode when any is
// not there.
type NodeReader interface {
	ReadNodes(ctx context.Context, ids []compact.NodeID) ([][]byte, error)
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
	hashes, err := nr.ReadNodes(ctx, compact.RangeNodes(0, size, nil))
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
// not nil, with every node that becomes complete, the leaf first, in
// position order (see Pos).
func (t *Tree) Append(leafHash []byte, keep func(id compact.NodeID, hash []byte)) error {
	if err := t.r.Append(leafHash, keep); err != nil {
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
	hashes, err := nr.ReadNodes(ctx, nodes.IDs)
	if err != nil {
		return nil, fmt.Errorf("read proof nodes: %w", err)
	}
	return nodes.Rehash(hashes, hashChildren)
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

// ErrMissingNode is what a NodeReader's error wraps when a node is not
// stored.
var ErrMissingNode = errors.New("node not stored")

// ErrorMissingNode returns the error a NodeReader reports for id.
func ErrorMissingNode(id compact.NodeID) error {
	return fmt.Errorf("node %d at level %d: %w", id.Index, id.Level, ErrMissingNode)
}

// LeafReader reads leaf hashes: those of leaves [begin, end), in order.
type LeafReader interface {
	ReadLeaves(ctx context.Context, begin, end uint64) ([][]byte, error)
}

// Sparse is a NodeReader over a store that keeps only the nodes of level
// MinLevel and up: a node below is recomputed from the at most
// 2^MinLevel leaves under it. Keeping 1 node in 2^MinLevel makes
// appending cheap; a proof reads at most two runs of 2^MinLevel leaves.
type Sparse struct {
	Nodes    NodeReader
	Leaves   LeafReader
	MinLevel uint
}

// Stored reports whether a Sparse store keeps node id.
func (s Sparse) Stored(id compact.NodeID) bool { return id.Level >= s.MinLevel }

// ReadNodes returns the nodes ids, reading the stored ones in one call
// and the leaves under the others once for each block of 2^MinLevel
// leaves they lie in (an inclusion proof's lie in one block).
func (s Sparse) ReadNodes(ctx context.Context, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	var stored []compact.NodeID
	var at []int
	blocks := map[uint64][]int{} // block → indexes into ids of the nodes below MinLevel in it
	for i, id := range ids {
		if s.Stored(id) {
			stored, at = append(stored, id), append(at, i)
			continue
		}
		begin, _ := id.Coverage()
		blocks[begin>>s.MinLevel] = append(blocks[begin>>s.MinLevel], i)
	}
	for block, in := range blocks {
		if err := s.fromLeaves(ctx, block, ids, in, out); err != nil {
			return nil, err
		}
	}
	if len(stored) > 0 {
		hashes, err := s.Nodes.ReadNodes(ctx, stored)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			out[i] = hashes[j]
		}
	}
	return out, nil
}

// fromLeaves computes the nodes ids[in], all below MinLevel in block, from
// one read of the block's leaves, into out.
func (s Sparse) fromLeaves(ctx context.Context, block uint64, ids []compact.NodeID, in []int, out [][]byte) error {
	first, end := block<<s.MinLevel, uint64(0)
	for _, i := range in {
		_, e := ids[i].Coverage()
		end = max(end, e)
	}
	leaves, err := s.Leaves.ReadLeaves(ctx, first, end)
	if err != nil {
		return err
	}
	for _, i := range in {
		b, e := ids[i].Coverage()
		if e-first > uint64(len(leaves)) {
			return ErrorMissingNode(ids[i])
		}
		if out[i], err = subtreeHash(ids[i], leaves[b-first:e-first]); err != nil {
			return err
		}
	}
	return nil
}

// subtreeHash returns the hash of node id from the leaves under it.
func subtreeHash(id compact.NodeID, leaves [][]byte) ([]byte, error) {
	begin, _ := id.Coverage()
	r := factory.NewEmptyRange(begin)
	for _, l := range leaves {
		if err := r.Append(l, nil); err != nil {
			return nil, err
		}
	}
	hashes := r.Hashes()
	if len(hashes) != 1 {
		return nil, fmt.Errorf("node %d at level %d: %d hashes from its leaves", id.Index, id.Level, len(hashes))
	}
	return hashes[0], nil
}
