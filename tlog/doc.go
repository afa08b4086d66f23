// Package tlog makes custody's ledger a transparency log: a Merkle tree
// over the entries (RFC 6962 hashing), inclusion and consistency proofs,
// checkpoints in the C2SP tlog-checkpoint signed-note format, cosignatures
// by witnesses speaking the C2SP tlog-witness protocol, and the client that
// asks them to cosign.
//
// The tree's leaves are the ledger's entries in seq order: entry seq is the
// leaf at index seq-1, and its leaf data is the entry's chain hash, the 32
// bytes its hex Hash spells. That hash commits to every field of the entry
// (its canonical JSON, the SHA-256 of its exact body) and to the chain
// before it, so a receipt {seq, hash} is all a caller needs to check that
// its call is in a checkpointed tree:
//
//	leaf hash = SHA-256(0x00 ‖ entry hash bytes)
//	node hash = SHA-256(0x01 ‖ left ‖ right)
//
// A checkpoint names the log (its origin), the tree's size and root hash,
// and, as an extension line, the chain head at that size, so that one
// signature commits to both structures:
//
//	<origin>
//	<size>
//	<base64 root hash>
//	head <64 lowercase hex digits>
//
// It is signed as a note (golang.org/x/mod/sumdb/note) by the ledger's
// ed25519 key under the origin's name.
//
// Stores key the tree's complete nodes by their place in post-order (see
// Pos), so that appending a leaf adds keys only at the end; a store may
// keep only the upper levels and recompute the lower ones from the
// entries (Sparse). Proofs read the nodes they need through the
// NodeReader a store supplies. The package does no other I/O but the
// witness client's HTTP.
package tlog
