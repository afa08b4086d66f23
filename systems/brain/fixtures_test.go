package brain

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testNow is the clock of every test room: the example room's last day.
var testNow = time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

// SetConfig replaces the room's settings, as an import does.
func (r *Room) SetConfig(ctx context.Context, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	return r.inTx(ctx, func(tx *sql.Tx) error { return putConfig(ctx, tx, c) })
}

// EventsOfType returns every memory event of one type, oldest first.
func (r *Room) EventsOfType(ctx context.Context, eventType string) ([]MemoryEvent, error) {
	return r.queryEvents(ctx, `SELECT id, event_type, coalesce(target_node_id, ''), payload, created_at
		FROM memory_events WHERE event_type = ? ORDER BY seq`, eventType)
}

// TestMain lets the test binary act as a stdio Brain when asked, so that
// the stdio tests spawn a real process.
func TestMain(m *testing.M) {
	if os.Getenv("CUSTODY_BRAIN_TEST_SERVE") == "stdio" {
		os.Exit(serveStdioForTest())
	}
	os.Exit(m.Run())
}

func serveStdioForTest() int {
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{Contract()}})
	if err != nil {
		return 3
	}
	if err := NewServer(ServerOptions{Contracts: reg}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 4
	}
	return 0
}

func registry(t testing.TB) *contract.Registry {
	t.Helper()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{Contract()}})
	if err != nil {
		t.Fatalf("load contracts: %v", err)
	}
	return reg
}

func newLedger(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func emptyRoom(t testing.TB) *Room {
	t.Helper()
	r, err := OpenRoom(context.Background(), filepath.Join(t.TempDir(), "room.db"), RoomOptions{Now: fixedClock})
	if err != nil {
		t.Fatalf("open room: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func importFile(t testing.TB, r *Room, f RoomFile) {
	t.Helper()
	if _, err := r.Import(context.Background(), f); err != nil {
		t.Fatalf("import: %v", err)
	}
}

func exampleRoom(t testing.TB) *Room {
	t.Helper()
	fh, err := os.Open("testdata/example_room.json")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := DecodeRoomFile(fh)
	if err != nil {
		t.Fatalf("decode example room: %v", err)
	}
	r := emptyRoom(t)
	importFile(t, r, f)
	return r
}

func build(t testing.TB, r *Room, o BuildOptions) Packet {
	t.Helper()
	p, err := r.Build(context.Background(), o)
	if err != nil {
		t.Fatalf("build %s/%s: %v", o.Job, o.Focus, err)
	}
	return p
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// at returns testNow shifted by d, as an import time.
func at(d time.Duration) time.Time { return testNow.Add(d) }

func conf(f float64) *float64 { return &f }

func kindOf(err error) string { return custody.ErrorKind(err) }

// nodesOfType counts the room's nodes of one type.
func nodesOfType(t testing.TB, r *Room, typ string) int {
	t.Helper()
	all, err := r.Nodes(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range all {
		if x.Type == typ {
			n++
		}
	}
	return n
}

func entriesOfKind(t testing.TB, l custody.Ledger, kind string) []custody.Entry {
	t.Helper()
	es, err := l.Entries(context.Background(), custody.Query{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return es
}
