package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// maxRows is the row count of the largest multi-row INSERT statement. A
// batch is cut into statements of maxRows, maxRows/8, ... 1 rows: one
// statement execution costs about as much for 64 rows as for one.
const maxRows = 64

// multiInsert inserts rows into one table with prepared multi-row INSERT
// statements.
type multiInsert struct {
	width int               // columns per row
	stmts map[int]*sql.Stmt // by row count
}

// prepareMultiInsert prepares the statements inserting into table's
// columns on conn. into is what follows INSERT: "OR FAIL INTO entries".
func prepareMultiInsert(ctx context.Context, conn *sql.DB, into string, columns ...string) (*multiInsert, error) {
	m := &multiInsert{width: len(columns), stmts: map[int]*sql.Stmt{}}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	for n := maxRows; n >= 1; n /= 8 {
		q := "INSERT " + into + " (" + strings.Join(columns, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("prepare INSERT %s: %w", into, err)
		}
		m.stmts[n] = st
	}
	return m, nil
}

// exec inserts the rows whose values args holds, width values a row.
func (m *multiInsert) exec(ctx context.Context, tx *sql.Tx, args []any) error {
	for n := maxRows; n >= 1; n /= 8 {
		st := tx.StmtContext(ctx, m.stmts[n])
		for len(args) >= n*m.width {
			if _, err := st.ExecContext(ctx, args[:n*m.width]...); err != nil {
				return err
			}
			args = args[n*m.width:]
		}
	}
	return nil
}

func (m *multiInsert) close() error {
	var errs []error
	for _, st := range m.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}
