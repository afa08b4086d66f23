package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/transparency-dev/merkle/compact"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/tlog"
)

// This file keeps the Merkle tree of package tlog beside the chain: the
// tree's nodes in tlog_nodes, one signed note per checkpoint in
// tlog_checkpoints, witnesses' cosignatures in tlog_cosignatures. The
// writer extends the tree and signs the note in the transaction that
// signs a checkpoint (sealNote); everything else here reads.

// Note is a checkpoint as a signed note, with the witnesses' cosignature
// lines stored for it.
type Note struct {
	Size uint64
	// Signed is the note as the ledger signed it: text, blank line, the
	// ledger's signature line.
	Signed []byte
	// Cosignatures are the witnesses' signature lines, each ending in a
	// newline; Signed followed by them is the cosigned note.
	Cosignatures []byte
}

// Cosigned returns the note with the witnesses' cosignatures appended.
func (n Note) Cosigned() []byte { return append(append([]byte(nil), n.Signed...), n.Cosignatures...) }

// bigExtension is how many entries a checkpoint must add to the tree for
// the store to log that it builds it.
const bigExtension = 1 << 16

// nodeChunk bounds the entries read, and so the nodes inserted, at once
// while the tree catches up.
const nodeChunk = 4096

// minLevel is the lowest level of the tree's nodes that tlog_nodes keeps:
// a node below it is recomputed from the at most 2^minLevel entries under
// it. Keeping one node in 16, not every node, is what keeps the tree's
// cost on the append path small.
const minLevel = 4

// sparseTree reads the tree's nodes through a pool or a transaction.
func sparseTree(q querier) tlog.Sparse {
	return tlog.Sparse{Nodes: treeNodes{q}, Leaves: treeLeaves{q}, MinLevel: minLevel}
}

// sealNote extends the tree to cover cp and stores cp as a signed note, in
// the transaction that stores cp; batch holds the entries this transaction
// appends.
func (w *writer) sealNote(ctx context.Context, tx *sql.Tx, cp custody.Checkpoint, batch []*custody.Entry) error {
	if w.opts.noTree {
		return nil
	}
	size := uint64(cp.Size)
	var have uint64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(size), 0) FROM tlog_checkpoints`).Scan(&have); err != nil {
		return fmt.Errorf("read the tree's size: %w", err)
	}
	if size-min(have, size) > bigExtension {
		// A ledger written before the tree existed: built once, at its
		// first checkpoint, while appends wait.
		w.opts.Logger.Info("building the Merkle tree over the ledger", "from", have, "to", size)
	}
	tree, err := w.trees.extend(ctx, tx, have, size, batch)
	if err != nil {
		return fmt.Errorf("extend the tree to %d: %w", size, err)
	}
	signed, err := tlog.Sign(tlog.Checkpoint{Origin: w.opts.Origin, Size: size, Root: tree.Root(), Head: cp.Head}, w.priv)
	if err != nil {
		return err
	}
	const q = `INSERT OR IGNORE INTO tlog_checkpoints (size, note) VALUES (?, ?)`
	if _, err := tx.ExecContext(ctx, q, cp.Size, signed); err != nil {
		return fmt.Errorf("insert note %d: %w", size, err)
	}
	return nil
}

// treeCache is the writer's memory of the tree between checkpoints: the
// tree as of the latest note, and the hashes of the entries committed
// since, so that sealing a note reads nothing back from the database.
// When it does not match the database (another process appended, a
// transaction failed) the tree is read from the database instead.
type treeCache struct {
	tree    *tlog.Tree // as of the latest note; nil when unknown
	pending []string   // hashes of the entries committed after tree's size
	next    *tlog.Tree // the tree the transaction being committed seals
}

// extend returns the tree of size leaves, the stored tree being of size
// have, and stores the nodes it adds.
func (c *treeCache) extend(ctx context.Context, tx *sql.Tx, have, size uint64, batch []*custody.Entry) (*tlog.Tree, error) {
	c.next = nil
	hashes := c.hashes(have, size, batch)
	if hashes == nil {
		tree, err := extendTree(ctx, tx, have, size)
		c.next = tree
		return tree, err
	}
	tree := c.tree.Clone()
	var nodes []any
	for _, h := range hashes {
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("entry %d: hash %q: %w", tree.Size()+1, h, err)
		}
		if err := tree.Append(tlog.LeafHash(b), keepNodes(&nodes)); err != nil {
			return nil, err
		}
	}
	if err := insertNodes(ctx, tx, nodes); err != nil {
		return nil, err
	}
	c.next = tree
	return tree, nil
}

// hashes returns the hashes of the entries after have up to size from
// memory, or nil when memory does not hold exactly them.
func (c *treeCache) hashes(have, size uint64, batch []*custody.Entry) []string {
	if c.tree == nil || c.tree.Size() != have || size <= have {
		return nil
	}
	hashes := append([]string(nil), c.pending...)
	for _, e := range batch {
		if uint64(e.Seq) != have+uint64(len(hashes))+1 {
			return nil
		}
		hashes = append(hashes, e.Hash)
	}
	if uint64(len(hashes)) < size-have {
		return nil
	}
	return hashes[:size-have]
}

// committed takes in a committed batch: its note's tree, or its entries.
func (c *treeCache) committed(b *batch) {
	if c.next != nil && b.cp != nil {
		c.tree, c.pending, c.next = c.next, nil, nil
		for _, e := range b.entries {
			if uint64(e.Seq) > c.tree.Size() {
				c.pending = append(c.pending, e.Hash)
			}
		}
		return
	}
	c.next = nil
	if c.tree == nil {
		return
	}
	for _, e := range b.entries {
		if uint64(e.Seq) != c.tree.Size()+uint64(len(c.pending))+1 {
			c.tree, c.pending = nil, nil // another process appended: read it back next time
			return
		}
		c.pending = append(c.pending, e.Hash)
	}
}

// keepNodes returns the tlog.Tree.Append callback that collects, as
// INSERT arguments, the nodes tlog_nodes keeps.
func keepNodes(args *[]any) func(compact.NodeID, []byte) {
	return func(id compact.NodeID, hash []byte) {
		if id.Level >= minLevel {
			*args = append(*args, int64(tlog.Pos(id)), hash)
		}
	}
}

// extendTree returns the tree of size leaves, first appending to the
// stored tree, which covers the latest note (of size have), the entries up
// to size that it lacks. Nodes missing from the stored tree (the table
// emptied: it is derived from the entries) make it rebuild from the first
// entry.
func extendTree(ctx context.Context, tx *sql.Tx, have, size uint64) (*tlog.Tree, error) {
	have = min(have, size)
	tree, err := tlog.LoadTree(ctx, sparseTree(tx), have)
	if errors.Is(err, tlog.ErrMissingNode) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tlog_nodes`); err != nil {
			return nil, fmt.Errorf("rebuild the tree: %w", err)
		}
		tree, err = tlog.NewTree(), nil
	}
	if err != nil {
		return nil, err
	}
	for tree.Size() < size {
		if err := appendLeaves(ctx, tx, tree, min(size, tree.Size()+nodeChunk)); err != nil {
			return nil, err
		}
	}
	return tree, nil
}

// appendLeaves appends the entries after the tree's size up to seq to,
// storing the nodes they complete that tlog_nodes keeps.
func appendLeaves(ctx context.Context, tx *sql.Tx, tree *tlog.Tree, to uint64) error {
	hashes, err := entryHashes(ctx, tx, tree.Size(), to)
	if err != nil {
		return err
	}
	var nodes []any
	for _, h := range hashes {
		if err := tree.Append(tlog.LeafHash(h), keepNodes(&nodes)); err != nil {
			return err
		}
	}
	return insertNodes(ctx, tx, nodes)
}

// entryHashes returns the chain hashes of the entries after seq from up
// to seq to, which must all be there.
func entryHashes(ctx context.Context, q querier, from, to uint64) ([][]byte, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, hash FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq`, from, to)
	if err != nil {
		return nil, fmt.Errorf("read entry hashes: %w", err)
	}
	defer rows.Close()
	out := make([][]byte, 0, to-from)
	for rows.Next() {
		var seq uint64
		var h digest
		if err := rows.Scan(&seq, &h); err != nil {
			return nil, fmt.Errorf("read entry hashes: %w", err)
		}
		b, err := hex.DecodeString(string(h))
		if seq != from+uint64(len(out))+1 || err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("entry %d: a gap in the ledger or a hash %q that is not hex", seq, h)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read entry hashes: %w", err)
	}
	if uint64(len(out)) != to-from {
		return nil, fmt.Errorf("entries %d-%d: only %d of them are on the ledger", from+1, to, len(out))
	}
	return out, nil
}

// nodeRows is how many nodes one INSERT writes.
const nodeRows = 256

func insertNodes(ctx context.Context, tx *sql.Tx, args []any) error {
	for len(args) > 0 {
		n := min(len(args)/2, nodeRows)
		q := `INSERT OR REPLACE INTO tlog_nodes (pos, hash) VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ")
		if _, err := tx.ExecContext(ctx, q, args[:2*n]...); err != nil {
			return fmt.Errorf("insert tree nodes: %w", err)
		}
		args = args[2*n:]
	}
	return nil
}

// treeLeaves reads the tree's leaves from the entries.
type treeLeaves struct{ q querier }

// ReadLeaves returns the leaf hashes of entries begin+1 to end.
func (l treeLeaves) ReadLeaves(ctx context.Context, begin, end uint64) ([][]byte, error) {
	hashes, err := entryHashes(ctx, l.q, begin, end)
	if err != nil {
		return nil, err
	}
	for i, h := range hashes {
		hashes[i] = tlog.LeafHash(h)
	}
	return hashes, nil
}

// treeNodes reads the nodes tlog_nodes keeps.
type treeNodes struct{ q querier }

// ReadNodes returns the hashes of the nodes ids.
func (n treeNodes) ReadNodes(ctx context.Context, ids []compact.NodeID) ([][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var list strings.Builder
	list.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(strconv.FormatUint(tlog.Pos(id), 10))
	}
	list.WriteByte(']')
	rows, err := n.q.QueryContext(ctx, `SELECT pos, hash FROM tlog_nodes WHERE pos IN (SELECT value FROM json_each(?))`, list.String())
	if err != nil {
		return nil, fmt.Errorf("read tree nodes: %w", err)
	}
	defer rows.Close()
	found := make(map[uint64][]byte, len(ids))
	for rows.Next() {
		var p uint64
		var h []byte
		if err := rows.Scan(&p, &h); err != nil {
			return nil, fmt.Errorf("read tree nodes: %w", err)
		}
		found[p] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tree nodes: %w", err)
	}
	out := make([][]byte, len(ids))
	for i, id := range ids {
		if out[i] = found[tlog.Pos(id)]; len(out[i]) != tlog.HashSize {
			return nil, tlog.ErrorMissingNode(id)
		}
	}
	return out, nil
}

// Origin returns the origin line of the store's checkpoint notes.
func (db *DB) Origin() string { return db.opts.Origin }

// Notes returns the checkpoints as signed notes with their cosignatures,
// those of sizes past after, in size order.
func (db *DB) Notes(ctx context.Context, after uint64) ([]Note, error) {
	return db.notes(ctx, `c.size > ?`, after)
}

// cosignedNote returns the note of the checkpoint of size with its
// cosignatures, and whether there is one.
func (db *DB) cosignedNote(ctx context.Context, size uint64) (Note, bool, error) {
	ns, err := db.notes(ctx, `c.size = ?`, size)
	if err != nil || len(ns) == 0 {
		return Note{}, false, err
	}
	return ns[0], true, nil
}

// selectCosigned reads checkpoints c as their size, signed note and the
// cosignature lines stored for them, in witness order.
const selectCosigned = `SELECT c.size, c.note, coalesce((SELECT group_concat(line, '') FROM
	(SELECT line FROM tlog_cosignatures s WHERE s.size = c.size ORDER BY witness)), '')
	FROM tlog_checkpoints c `

// notes returns the notes with their cosignatures where cond holds of
// c.size, in size order.
func (db *DB) notes(ctx context.Context, cond string, arg uint64) ([]Note, error) {
	q := selectCosigned + `WHERE ` + cond + ` ORDER BY c.size`
	rows, err := db.rdb.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, unavailable("read checkpoint notes", err)
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		var cosigs string
		if err := rows.Scan(&n.Size, &n.Signed, &cosigs); err != nil {
			return nil, unavailable("read checkpoint notes", err)
		}
		n.Cosignatures = []byte(cosigs)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("read checkpoint notes", err)
	}
	return out, nil
}

// NoteAt returns the signed note of the checkpoint of size, with the
// witnesses' cosignatures stored for it; size 0 means the latest.
// ENOTFOUND when there is none.
func (db *DB) NoteAt(ctx context.Context, size uint64) (Note, error) {
	var n Note
	var cosigs string
	q, args := selectCosigned+`ORDER BY c.size DESC LIMIT 1`, []any{}
	if size > 0 {
		q, args = selectCosigned+`WHERE c.size = ?`, []any{size}
	}
	err := db.rdb.QueryRowContext(ctx, q, args...).Scan(&n.Size, &n.Signed, &cosigs)
	n.Cosignatures = []byte(cosigs)
	if errors.Is(err, sql.ErrNoRows) {
		if size == 0 {
			return n, custody.Errorf(custody.ENOTFOUND, "no checkpoint note yet")
		}
		return n, custody.Errorf(custody.ENOTFOUND, "no checkpoint of size %d", size)
	}
	if err != nil {
		return n, unavailable("read checkpoint note", err)
	}
	return n, nil
}

// Receipt returns the proof that entry seq is in the checkpoint of size
// (the latest when size is 0), the checkpoint's note carrying every
// cosignature stored for it. ENOTFOUND when there is no such checkpoint
// or it does not cover seq; EINVALID for a seq below 1.
func (db *DB) Receipt(ctx context.Context, seq, size uint64) (tlog.Receipt, error) {
	if seq < 1 {
		return tlog.Receipt{}, custody.Errorf(custody.EINVALID, "proof: seq must be at least 1")
	}
	n, err := db.NoteAt(ctx, size)
	if err != nil {
		return tlog.Receipt{}, err
	}
	if seq > n.Size {
		return tlog.Receipt{}, custody.Errorf(custody.ENOTFOUND, "no checkpoint covers entry %d yet: the latest is of size %d", seq, n.Size)
	}
	var hash digest
	if err := db.rdb.QueryRowContext(ctx, `SELECT hash FROM entries WHERE seq = ?`, seq).Scan(&hash); err != nil {
		return tlog.Receipt{}, unavailable("read entry", err)
	}
	p, err := tlog.InclusionProof(ctx, sparseTree(db.rdb), seq-1, n.Size)
	if err != nil {
		return tlog.Receipt{}, unavailable("build inclusion proof", err)
	}
	return tlog.Receipt{Seq: seq, Hash: string(hash), Size: n.Size, Proof: p, Checkpoint: string(n.Cosigned())}, nil
}

// ConsistencyProof returns the proof that the ledger at size from is a
// prefix of the ledger at size to. EINVALID when from > to; ENOTFOUND when
// to is past the latest checkpoint.
func (db *DB) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	if from > to {
		return nil, custody.Errorf(custody.EINVALID, "consistency: from %d is past to %d", from, to)
	}
	latest, err := db.NoteAt(ctx, 0)
	if err != nil {
		return nil, err
	}
	if to > latest.Size {
		return nil, custody.Errorf(custody.ENOTFOUND, "consistency: no checkpoint covers size %d yet: the latest is of size %d", to, latest.Size)
	}
	p, err := tlog.ConsistencyProof(ctx, sparseTree(db.rdb), from, to)
	if err != nil {
		return nil, unavailable("build consistency proof", err)
	}
	return p, nil
}

// Consistency returns the consistency proof between the checkpoints of
// sizes from and to, with their signed notes and every cosignature stored
// for them. ENOTFOUND when either size has no checkpoint.
func (db *DB) Consistency(ctx context.Context, from, to uint64) (tlog.Consistency, error) {
	p, err := db.ConsistencyProof(ctx, from, to)
	if err != nil {
		return tlog.Consistency{}, err
	}
	a, err := db.NoteAt(ctx, max(from, 1))
	if err == nil && from == 0 {
		err = custody.Errorf(custody.ENOTFOUND, "consistency: from must be a checkpoint's size, at least 1")
	}
	if err != nil {
		return tlog.Consistency{}, err
	}
	b, err := db.NoteAt(ctx, to)
	if err != nil {
		return tlog.Consistency{}, err
	}
	return tlog.Consistency{From: from, To: to, Proof: p, FromCheckpoint: string(a.Cosigned()), ToCheckpoint: string(b.Cosigned())}, nil
}

// AddCosignature stores a witness's cosignature line for the checkpoint of
// size, replacing one it stored before.
func (db *DB) AddCosignature(ctx context.Context, size uint64, witness, line string) error {
	_, err := db.do(ctx, &request{what: "store cosignature", op: func(ctx context.Context, tx *sql.Tx) error {
		const q = `INSERT OR REPLACE INTO tlog_cosignatures (size, witness, line) VALUES (?, ?, ?)`
		_, err := tx.ExecContext(ctx, q, size, witness, line)
		return err
	}})
	return err
}

// LastCosigned returns the size of the latest checkpoint witness cosigned,
// 0 when none.
func (db *DB) LastCosigned(ctx context.Context, witness string) (uint64, error) {
	var size uint64
	err := db.rdb.QueryRowContext(ctx, `SELECT coalesce(max(size), 0) FROM tlog_cosignatures WHERE witness = ?`, witness).Scan(&size)
	if err != nil {
		return 0, unavailable("read cosignatures", err)
	}
	return size, nil
}

var _ tlog.Log = (*DB)(nil)

// LatestNote returns the latest checkpoint as a signed note with every
// cosignature stored for it. ENOTFOUND when there is none yet.
func (db *DB) LatestNote(ctx context.Context) ([]byte, error) {
	n, err := db.NoteAt(ctx, 0)
	if err != nil {
		return nil, err
	}
	return n.Cosigned(), nil
}

// NotesAfter returns the signed notes of the checkpoints past size after,
// without cosignatures, for a tlog.Submitter.
func (db *DB) NotesAfter(ctx context.Context, after uint64) ([]tlog.LogNote, error) {
	ns, err := db.Notes(ctx, after)
	if err != nil {
		return nil, err
	}
	out := make([]tlog.LogNote, len(ns))
	for i, n := range ns {
		out[i] = tlog.LogNote{Size: n.Size, Signed: n.Signed}
	}
	return out, nil
}
