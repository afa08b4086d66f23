// Package schema reads a store's numbered schema migrations: the one
// loader both stores use, so that a version number means one schema and
// versions run without a gap in every store alike.
package schema

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the NNNN_name.sql files of fsys's migrations folder and
// checks that their versions run 1, 2, 3, ... without a gap.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	ms := make([]Migration, 0, len(names))
	for i, name := range names { // fs.Glob returns names sorted
		base := path.Base(name)
		prefix, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want a name starting %04d_", base, i+1)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(text)})
	}
	return ms, nil
}
