package rawsqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/custody-dev/custody"
)

// columns are the entries table's, in the order the store inserts them
// (sqlite/ledger.go); TestRowsAsTheStoreWrites holds the two together.
var columns = []string{"seq", "at", "kind", "trace", "actor", "refs", "body", "body_sha256", "hash"}

// maxRows is the row count of the store's largest multi-row INSERT; a
// batch is cut into statements of maxRows, maxRows/8, ... 1 rows, as the
// store cuts it (sqlite/insert.go).
const maxRows = 64

// digestSize is the size of a stored digest: the store keeps body_sha256
// and hash as their 32 bytes (migration 0005).
const digestSize = 32

// insertStmts are the store's prepared INSERT statements, by row count.
type insertStmts struct {
	stmts  map[int]*sql.Stmt
	args   []any
	digest []byte // the made-up digest every row carries
}

func prepareInsert(ctx context.Context, conn *sql.DB) (*insertStmts, error) {
	s := &insertStmts{stmts: map[int]*sql.Stmt{}, digest: make([]byte, digestSize)}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	for n := maxRows; n >= 1; n /= 8 {
		// OR FAIL, as the store's: no statement journal.
		q := "INSERT OR FAIL INTO entries (" + strings.Join(columns, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("baseline: prepare INSERT: %w", err)
		}
		s.stmts[n] = st
	}
	return s, nil
}

// insert writes entries as the store writes sealed ones.
func (s *insertStmts) insert(ctx context.Context, tx *sql.Tx, entries []*custody.Entry) error {
	args := s.args[:0]
	for _, e := range entries {
		refs, err := refsColumn(e.Refs)
		if err != nil {
			return fmt.Errorf("insert entry %d: %w", e.Seq, err)
		}
		args = append(args, e.Seq, e.At, e.Kind, e.Trace, e.Actor, refs, []byte(e.Body), s.digest, s.digest)
	}
	all := args
	defer func() { clear(all); s.args = all[:0] }()
	width := len(columns)
	for n := maxRows; n >= 1; n /= 8 {
		st := tx.StmtContext(ctx, s.stmts[n])
		for len(args) >= n*width {
			if _, err := st.ExecContext(ctx, args[:n*width]...); err != nil {
				return fmt.Errorf("insert entries: %w", err)
			}
			args = args[n*width:]
		}
	}
	return nil
}

// refsColumn returns the stored form of refs, as the store's does.
func refsColumn(refs map[string]string) (string, error) {
	if len(refs) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(refs)
	return string(b), err
}

func (s *insertStmts) close() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}
