package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestCluster keeps a row across a crash of its own cluster, and refuses
// connections while the cluster is down.
func TestCluster(t *testing.T) {
	c := NewCluster(t)
	Exec(t, c.URL, `CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)`)
	c.Stop(Immediate)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, c.URL); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	c.Start()
	if n := QueryInt(t, c.URL, `SELECT n FROM kept`); n != 7 {
		t.Fatalf("after the restart the row holds %d, want 7", n)
	}
	c.Stop(Fast)
	c.Start()
	if n := QueryInt(t, c.URL, `SELECT count(*) FROM kept`); n != 1 {
		t.Fatalf("after a second restart %d rows, want 1", n)
	}
}
