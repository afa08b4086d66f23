package tlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// refRoot is the RFC 6962 definition of the root of leaves, written out
// to check Tree against: MTH(D[n]) = H(0x01 ‖ MTH(D[0:k]) ‖ MTH(D[k:n]))
// for the largest power of two k < n.
func refRoot(leaves [][]byte) []byte {
	switch len(leaves) {
	case 0:
		s := sha256.Sum256(nil)
		return s[:]
	case 1:
		s := sha256.Sum256(append([]byte{0}, leaves[0]...))
		return s[:]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	s := sha256.Sum256(append(append([]byte{1}, refRoot(leaves[:k])...), refRoot(leaves[k:])...))
	return s[:]
}

// entryHashes returns n made-up entry hashes.
func entryHashes(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		s := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
		out[i] = s[:]
	}
	return out
}

// MemNodes is a NodeReader over an in-memory list of every node, in
// position order. Keep is its Tree.Append callback.
type MemNodes [][]byte

// Keep records the node id, which must be the next in position order.
func (m *MemNodes) Keep(id compact.NodeID, hash []byte) {
	if pos := Pos(id); pos != uint64(len(*m)) {
		panic(fmt.Sprintf("tlog: node %d kept after %d nodes", pos, len(*m)))
	}
	*m = append(*m, hash)
}

// ReadNodes returns the nodes ids: the list's own slices, not copies.
func (m MemNodes) ReadNodes(_ context.Context, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		p := Pos(id)
		if p >= uint64(len(m)) {
			return nil, ErrorMissingNode(id)
		}
		out[i] = m[p]
	}
	return out, nil
}

// RootAt returns the root hash of the tree of size leaves held by nr.
func RootAt(ctx context.Context, nr NodeReader, size uint64) ([]byte, error) {
	t, err := LoadTree(ctx, nr, size)
	if err != nil {
		return nil, err
	}
	return t.Root(), nil
}

// build appends every entry hash to a new tree, keeping its nodes.
func build(t testing.TB, data [][]byte) (*Tree, MemNodes) {
	t.Helper()
	tree, nodes := NewTree(), MemNodes{}
	for _, d := range data {
		if err := tree.Append(LeafHash(d), nodes.Keep); err != nil {
			t.Fatal(err)
		}
	}
	return tree, nodes
}

func TestRootMatchesRFC6962(t *testing.T) {
	data := entryHashes(70)
	tree, nodes := NewTree(), MemNodes{}
	for n := 0; n <= len(data); n++ {
		if got, want := tree.Root(), refRoot(data[:n]); !bytes.Equal(got, want) {
			t.Fatalf("size %d: root %x, want %x", n, got, want)
		}
		if got := uint64(len(nodes)); got != nodeCount(uint64(n)) {
			t.Fatalf("size %d: %d nodes kept, nodeCount says %d", n, got, nodeCount(uint64(n)))
		}
		if n < len(data) {
			if err := tree.Append(LeafHash(data[n]), nodes.Keep); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLoadTreeGoesOn(t *testing.T) {
	ctx := context.Background()
	data := entryHashes(300)
	want, _ := build(t, data)
	for _, cut := range []int{0, 1, 2, 3, 127, 128, 129, 255, 299} {
		_, nodes := build(t, data[:cut])
		tree, err := LoadTree(ctx, nodes, uint64(cut))
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		for _, d := range data[cut:] {
			if err := tree.Append(LeafHash(d), nodes.Keep); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(tree.Root(), want.Root()) {
			t.Fatalf("cut %d: the loaded tree's root differs", cut)
		}
	}
	_, nodes := build(t, data[:10])
	if _, err := LoadTree(ctx, nodes, 11); !errors.Is(err, ErrMissingNode) {
		t.Fatalf("LoadTree past the nodes: %v, want ErrMissingNode", err)
	}
}

// checkpointSizes are the sizes a ledger of n entries was checkpointed
// at: every 256 entries, a few odd ones, and n.
func checkpointSizes(n int) []uint64 {
	sizes := []uint64{1, 2, 3, 7, 100}
	for s := 256; s < n; s += 256 {
		sizes = append(sizes, uint64(s))
	}
	return append(sizes, 1000, 1001, uint64(n))
}

func TestInclusionEveryEntryEveryCheckpoint(t *testing.T) {
	ctx := context.Background()
	const n = 3000
	data := entryHashes(n)
	_, nodes := build(t, data)
	for _, size := range checkpointSizes(n) {
		root := refRoot(data[:size])
		for i := uint64(0); i < size; i++ {
			p, err := InclusionProof(ctx, nodes, i, size)
			if err != nil {
				t.Fatalf("proof of %d in %d: %v", i, size, err)
			}
			if err := VerifyInclusion(i, size, LeafHash(data[i]), p, root); err != nil {
				t.Fatalf("entry %d in checkpoint %d: %v", i+1, size, err)
			}
		}
	}
}

func TestConsistencyEveryPairOfCheckpoints(t *testing.T) {
	ctx := context.Background()
	const n = 3000
	data := entryHashes(n)
	_, nodes := build(t, data)
	sizes := checkpointSizes(n)
	for _, a := range sizes {
		for _, b := range sizes {
			if a > b {
				continue
			}
			p, err := ConsistencyProof(ctx, nodes, a, b)
			if err != nil {
				t.Fatalf("proof %d→%d: %v", a, b, err)
			}
			if err := VerifyConsistency(a, b, p, refRoot(data[:a]), refRoot(data[:b])); err != nil {
				t.Fatalf("checkpoints %d and %d: %v", a, b, err)
			}
		}
	}
}

func TestTamperedEntryFailsInclusion(t *testing.T) {
	ctx := context.Background()
	data := entryHashes(1500)
	_, nodes := build(t, data)
	const size = 1500
	root := refRoot(data)
	for _, i := range []uint64{0, 1, 700, 1023, 1024, 1499} {
		p, err := InclusionProof(ctx, nodes, i, size)
		if err != nil {
			t.Fatal(err)
		}
		tampered := bytes.Clone(data[i])
		tampered[0] ^= 1
		if err := VerifyInclusion(i, size, LeafHash(tampered), p, root); err == nil {
			t.Fatalf("a tampered entry %d verified", i+1)
		}
		if err := VerifyInclusion(i+1, size, LeafHash(data[i]), p, root); err == nil && i+1 < size {
			t.Fatalf("entry %d verified at index %d", i+1, i+1)
		}
		if len(p) > 0 {
			p[len(p)-1] = bytes.Clone(p[len(p)-1]) // the proof shares the tree's nodes
			p[len(p)-1][0] ^= 1
			if err := VerifyInclusion(i, size, LeafHash(data[i]), p, root); err == nil {
				t.Fatalf("a tampered proof of %d verified", i+1)
			}
		}
	}
	// A tree built over a tampered entry has another root: every proof
	// from it fails against the honest checkpoint.
	bad := append([][]byte(nil), data...)
	bad[42] = entryHashes(1)[0]
	_, badNodes := build(t, bad)
	p, err := InclusionProof(ctx, badNodes, 42, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyInclusion(42, size, LeafHash(bad[42]), p, root); err == nil {
		t.Fatal("a proof from a tampered tree verified against the honest root")
	}
	if _, err := InclusionProof(ctx, nodes, size, size); err == nil {
		t.Fatal("a proof of a leaf past the tree was built")
	}
}

func TestHashChildren(t *testing.T) {
	hs := entryHashes(9)
	for i := range hs {
		for j := range hs {
			if got, want := hashChildren(hs[i], hs[j]), rfc6962.DefaultHasher.HashChildren(hs[i], hs[j]); !bytes.Equal(got, want) {
				t.Fatalf("hashChildren(%x, %x) = %x, rfc6962: %x", hs[i], hs[j], got, want)
			}
		}
	}
	for _, odd := range [][2][]byte{{nil, hs[0]}, {hs[0][:31], hs[1]}, {hs[0], append(hs[1], 0)}} {
		if got, want := hashChildren(odd[0], odd[1]), rfc6962.DefaultHasher.HashChildren(odd[0], odd[1]); !bytes.Equal(got, want) {
			t.Fatalf("hashChildren(%x, %x) = %x, rfc6962: %x", odd[0], odd[1], got, want)
		}
	}
}

func TestEntryLeafHash(t *testing.T) {
	for _, d := range entryHashes(64) {
		got, err := EntryLeafHash(hexOf(d))
		if err != nil || !bytes.Equal(got, LeafHash(d)) {
			t.Fatalf("EntryLeafHash(%x): %x, %v; LeafHash: %x", d, got, err, LeafHash(d))
		}
	}
	d := entryHashes(1)[0]
	for _, bad := range []string{"", "zz", hexOf(d)[:62], hexOf(d) + "00", "A" + hexOf(d)[1:], hexOf(d)[:63] + "F", hexOf(d)[:63] + "g", hexOf(d)[:63] + "/"} {
		if _, err := EntryLeafHash(bad); err == nil {
			t.Errorf("EntryLeafHash(%q) accepted", bad)
		}
	}
}

// sparseMem keeps what a Sparse store keeps: the nodes from minLevel up,
// and the leaves.
type sparseMem struct {
	nodes    map[compact.NodeID][]byte
	leaves   [][]byte
	minLevel uint
}

func (s *sparseMem) ReadNodes(_ context.Context, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		if id.Level < s.minLevel {
			return nil, fmt.Errorf("node %+v is below the stored levels", id)
		}
		if out[i] = s.nodes[id]; out[i] == nil {
			return nil, ErrorMissingNode(id)
		}
	}
	return out, nil
}

func (s *sparseMem) ReadLeaves(_ context.Context, begin, end uint64) ([][]byte, error) {
	n := uint64(len(s.leaves))
	return s.leaves[min(begin, n):min(end, n)], nil
}

func TestSparseProofs(t *testing.T) {
	ctx := context.Background()
	const n = 1000
	data := entryHashes(n)
	store := &sparseMem{nodes: map[compact.NodeID][]byte{}, minLevel: 4}
	tree := NewTree()
	for _, d := range data {
		store.leaves = append(store.leaves, LeafHash(d))
		err := tree.Append(LeafHash(d), func(id compact.NodeID, h []byte) {
			if id.Level >= store.minLevel {
				store.nodes[id] = h
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sp := Sparse{Nodes: store, Leaves: store, MinLevel: store.minLevel}
	for _, size := range []uint64{1, 15, 16, 17, 100, 512, 999, 1000} {
		root := refRoot(data[:size])
		if got, err := RootAt(ctx, sp, size); err != nil || !bytes.Equal(got, root) {
			t.Fatalf("root at %d: %x, %v", size, got, err)
		}
		for i := uint64(0); i < size; i += 7 {
			p, err := InclusionProof(ctx, sp, i, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyInclusion(i, size, LeafHash(data[i]), p, root); err != nil {
				t.Fatalf("entry %d in %d: %v", i+1, size, err)
			}
		}
		p, err := ConsistencyProof(ctx, sp, 17, max(size, 17))
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyConsistency(17, max(size, 17), p, refRoot(data[:17]), refRoot(data[:max(size, 17)])); err != nil {
			t.Fatal(err)
		}
	}
	store.leaves = store.leaves[:500] // entries gone: the nodes below cannot be recomputed
	if _, err := InclusionProof(ctx, sp, 600, 1000); !errors.Is(err, ErrMissingNode) {
		t.Fatalf("proof without the leaves: %v, want ErrMissingNode", err)
	}
}
