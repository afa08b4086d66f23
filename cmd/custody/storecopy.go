package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/store/postgres"
	"github.com/custody-dev/custody/store/sqlite"
)

// storeUsage is the usage of `custody store`.
const storeUsage = `usage: custody store SUBCOMMAND [flags]

subcommands:
  backup     copy a SQLite data directory while serve runs: --data DIR --to NEWDIR
  copy       move a SQLite store into PostgreSQL: --from DIR --to postgres://...`

// runStore dispatches `custody store SUBCOMMAND`.
func (m *Main) runStore(ctx context.Context, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "copy":
			return m.runStoreCopy(ctx, args[1:])
		case "backup":
			return m.runStoreBackup(ctx, args[1:])
		}
	}
	fmt.Fprintln(m.Stderr, storeUsage)
	return exitUsage
}

// runStoreBackup writes a verified copy of a SQLite data directory:
//
//	custody store backup --data DIR --to NEWDIR
//
// It may run beside a serve on the same directory: the copy is the
// database as of one read transaction, with the directory's ledger id,
// keys and checkpoint record (see sqlite.DB.Backup). Restoring is moving
// NEWDIR into place with custody stopped.
func (m *Main) runStoreBackup(ctx context.Context, args []string) int {
	fs := m.flags("store backup", "--data DIR --to NEWDIR")
	data := m.dataFlag(fs)
	to := fs.String("to", "", "the new `DIR` to write the backup into; it must not exist or be empty")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *to == "" {
		return m.flagError(fs, "--to is required")
	}
	src, code := m.sqliteOnly().openExisting(*data)
	if src == nil {
		return code
	}
	defer src.Close()
	rep, err := src.(*sqlite.DB).Backup(ctx, *to)
	if err != nil {
		return m.fail(err)
	}
	fmt.Fprintf(m.Stdout, "backed up %s to %s: %s\n", *data, *to, rep)
	return exitOK
}

// runStoreCopy moves a SQLite store into an empty PostgreSQL one:
//
//	custody store copy --from DIR --to postgres://...
//
// It verifies the source, copies its entries, checkpoints, approvals and
// state in one transaction, verifies the copy, and checks that both have
// the same size and head. The copy keeps the source's signing key
// (DIR/signing.key, or $CUSTODY_SIGNING_KEY): every instance serving the
// copy is given that key, and the old checkpoints verify against it.
func (m *Main) runStoreCopy(ctx context.Context, args []string) int {
	fs := m.flags("store copy", "--from DIR --to postgres://...")
	from := fs.String("from", "", "the SQLite data `DIR` to copy")
	to := fs.String("to", "", "the PostgreSQL store `URL` to copy into; it must hold no ledger yet")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if *from == "" || *to == "" {
		return m.flagError(fs, "--from and --to are required")
	}
	src, code := m.sqliteOnly().openExisting(*from)
	if src == nil {
		return code
	}
	defer src.Close()
	srcRep, err := src.Verify(ctx)
	if err != nil {
		return m.verified("custody store copy: source "+*from, srcRep, err, verification{allowUnsealed: true})
	}
	dst, err := m.withStore(*to).openStore(*from)
	if err != nil {
		return m.fail(err)
	}
	defer dst.Close()
	pg, ok := dst.(*postgres.DB)
	if !ok {
		return m.fail(custody.Errorf(custody.EINVALID, "store copy: --to must be a postgres:// URL"))
	}
	if err := pg.Load(ctx, func(l *postgres.Loader) error { return copyStore(ctx, src.(*sqlite.DB), l) }); err != nil {
		return m.fail(err)
	}
	dstRep, err := pg.Verify(ctx)
	if err != nil {
		return m.verified("custody store copy: copy at "+redact(*to), dstRep, err, verification{allowUnsealed: true})
	}
	if dstRep.Entries != srcRep.Entries || dstRep.Head != srcRep.Head || dstRep.Checkpoints != srcRep.Checkpoints {
		return m.fail(custody.Errorf(custody.EINTERNAL, "store copy: the copy (%s) differs from the source (%s)", dstRep, srcRep))
	}
	fmt.Fprintf(m.Stdout, "copied %s to %s\nsource: %s\ncopy:   %s\nserve it with --store and the signing key %s\n",
		*from, redact(*to), srcRep, dstRep, m.env("CUSTODY_SIGNING_KEY", filepath.Join(*from, "signing.key")))
	return exitOK
}

// copyStore feeds l the source's entries and checkpoints (from its JSONL
// export), its approvals, each with the digest its approval.requested
// entry names, and its state.
func copyStore(ctx context.Context, src *sqlite.DB, l *postgres.Loader) error {
	requested, err := copyLedger(ctx, src, l)
	if err != nil {
		return err
	}
	as, err := src.Approvals(ctx, "")
	if err != nil {
		return err
	}
	for _, a := range as {
		digest := a.Digest
		if d, ok := requested[a.ID]; ok {
			digest = d
		}
		if err := l.Approval(a, digest); err != nil {
			return err
		}
	}
	nss, err := src.Namespaces(ctx)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		docs, err := src.States(ctx, ns)
		if err != nil {
			return err
		}
		for key, doc := range docs {
			if err := l.State(ns, key, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyLedger streams the source's export into l and returns the digest
// each approval was requested for.
func copyLedger(ctx context.Context, src *sqlite.DB, l *postgres.Loader) (map[string]string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(src.ExportJSONL(ctx, pw)) }()
	defer pr.Close()
	requested := map[string]string{}
	d := ledger.NewDecoder(pr)
	for {
		line, err := d.Next()
		if errors.Is(err, io.EOF) {
			return requested, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the source ledger: %w", err)
		}
		switch {
		case line.Note != nil:
			// Checkpoint notes are the SQLite store's Merkle tree.
			continue
		case line.Checkpoint != nil:
			err = l.Checkpoint(*line.Checkpoint)
		default:
			e := line.Entry
			if e.Kind == custody.KindApprovalRequest && e.Refs[approval.RefApproval] != "" {
				requested[e.Refs[approval.RefApproval]] = e.Refs[approval.RefDigest]
			}
			err = l.Entry(*e)
		}
		if err != nil {
			return nil, err
		}
	}
}
