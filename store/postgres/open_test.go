package postgres

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// TestOpenRefusals: a URL that does not parse is EINVALID, a server that
// does not answer EUNAVAILABLE, and a schema whose head row is gone is
// refused rather than appended to.
func TestOpenRefusals(t *testing.T) {
	pgtest.Require(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	ctx := context.Background()
	_, err := Open(ctx, "postgres://127.0.0.1:5432/test?pool_max_conns=many", Options{KeyFile: key})
	wantKind(t, "Open of a malformed URL", err, custody.EINVALID)
	_, err = Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", Options{KeyFile: key})
	wantKind(t, "Open of a server that does not answer", err, custody.EUNAVAILABLE)

	url := pgtest.URL(t)
	open(t, url, Options{KeyFile: key}).Close()
	pgtest.Exec(t, url, `DELETE FROM ledger_head`)
	_, err = Open(ctx, url, Options{KeyFile: key})
	wantKind(t, "Open without the head row", err, custody.EUNAVAILABLE)
}

// TestClosed: after Close every write is EUNAVAILABLE and says the store
// is closed; Close again is harmless.
func TestClosed(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	appendN(t, db, 1, "t1")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	_, err := db.Append(ctx, entry("test.kind", "t1"))
	wantKind(t, "Append after Close", err, custody.EUNAVAILABLE)
	if !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Append after Close: %v, want it to say closed", err)
	}
	_, err = db.Commit(ctx, entry("test.kind", "t1"), custody.PutState("test", "k", json.RawMessage(`1`)))
	wantKind(t, "Commit after Close", err, custody.EUNAVAILABLE)
	_, err = db.Checkpoint(ctx)
	wantKind(t, "Checkpoint after Close", err, custody.EUNAVAILABLE)
}

// TestOnlyAnAppenderSignsAtClose: Close signs a final checkpoint only
// for an instance that appended entries.
func TestOnlyAnAppenderSignsAtClose(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	writer := open(t, url, Options{KeyFile: key})
	appendN(t, writer, 2, "t1")
	open(t, url, Options{KeyFile: key}).Close()
	if _, err := writer.LatestCheckpoint(context.Background()); custody.ErrorKind(err) != custody.ENOTFOUND {
		t.Fatalf("an instance that appended nothing signed at Close: %v", err)
	}
	writer.Close()
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM checkpoints WHERE size = 2`); n != 1 {
		t.Fatalf("%d checkpoints of size 2 after the appender's Close, want 1", n)
	}
}

// TestCommitRefusesBeforeQueueing: an entry without a kind or with a body
// that is not JSON, a malformed change, and a context already ended are
// refused without taking a seq.
func TestCommitRefusesBeforeQueueing(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	noKind := entry("", "t1")
	badBody := entry("test.kind", "t1")
	badBody.Body = json.RawMessage(`{"n":`)
	for _, tc := range []struct {
		name    string
		e       custody.Entry
		changes []custody.Change
		kind    string
	}{
		{"ErrNoKind", noKind, nil, custody.EINVALID},
		{"ErrBody", badBody, nil, custody.EINVALID},
		{"ErrStateWithoutKey", entry("test.kind", "t1"), []custody.Change{custody.PutState("test", "", json.RawMessage(`1`))}, custody.EINVALID},
		{"ErrStateNotJSON", entry("test.kind", "t1"), []custody.Change{custody.PutState("test", "k", json.RawMessage(`{`))}, custody.EINVALID},
		{"ErrNegativeLimit", entry("test.kind", "t1"), []custody.Change{custody.IncrState("test", "k", 1, -1)}, custody.EINVALID},
		{"ErrApprovalWithoutID", entry("test.kind", "t1"), []custody.Change{custody.CreateApproval(custody.Approval{Status: custody.ApprovalPending})}, custody.EINVALID},
		{"ErrUpdateWithoutFrom", entry("test.kind", "t1"), []custody.Change{custody.UpdateApproval(custody.Approval{ID: "a", Status: custody.ApprovalApproved}, "")}, custody.EINVALID},
		{"ErrConsumeWithoutID", entry("test.kind", "t1"), []custody.Change{custody.ConsumeApproval("")}, custody.EINVALID},
		{"ErrUnknownOp", entry("test.kind", "t1"), []custody.Change{{Op: 99}}, custody.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Commit(ctx, tc.e, tc.changes...)
			wantKind(t, "Commit", err, tc.kind)
		})
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, err := db.Append(ended, entry("test.kind", "t1"))
	wantKind(t, "Append with an ended context", err, custody.EUNAVAILABLE)
	if h, err := db.Head(ctx); err != nil || h.Seq != 0 {
		t.Fatalf("Head = %+v, %v; want nothing appended", h, err)
	}
	if e := appendN(t, db, 1, "t1"); e[0].Seq != 1 {
		t.Fatalf("the first entry has seq %d, want 1", e[0].Seq)
	}
}

// TestCommitStampsAndCopies: an entry without a time gets the store's
// clock; one with a time keeps it; the caller's change documents are
// copied before Commit returns to queue them.
func TestCommitStampsAndCopies(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := open(t, pgtest.URL(t), Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	e, err := db.Append(ctx, entry("test.kind", "t1"))
	if err != nil || e.At != custody.FormatTime(now) {
		t.Fatalf("Append = at %q, %v; want the store's clock %q", e.At, err, custody.FormatTime(now))
	}
	given := entry("test.kind", "t1")
	given.At = "2025-01-01T00:00:00.000000Z"
	if e, err := db.Append(ctx, given); err != nil || e.At != given.At {
		t.Fatalf("Append with a time = at %q, %v; want it kept", e.At, err)
	}
	doc := []byte(`{"v":1}`)
	if _, err := db.Commit(ctx, entry("test.kind", "t1"), custody.PutState("test", "k", doc)); err != nil {
		t.Fatal(err)
	}
	copy(doc, `{"v":2}`)
	if got, err := db.State(ctx, "test", "k"); err != nil || string(got) != `{"v":1}` {
		t.Fatalf("State = %s, %v; want the document as committed", got, err)
	}
}

// TestSizeFollowsHead: Size is what this instance committed or last read
// with Head, also of what other instances appended.
func TestSizeFollowsHead(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	a, b := open(t, url, Options{KeyFile: key}), open(t, url, Options{KeyFile: key})
	appendN(t, a, 3, "t1")
	if a.Size() != 3 {
		t.Fatalf("Size of the appender = %d, want 3", a.Size())
	}
	if b.Size() != 0 {
		t.Fatalf("Size of the other before Head = %d, want 0", b.Size())
	}
	if h, err := b.Head(context.Background()); err != nil || h.Seq != 3 || b.Size() != 3 {
		t.Fatalf("Head of the other = %+v, %v, Size %d; want 3", h, err, b.Size())
	}
	if a.Commits() < 1 || b.Commits() != 0 {
		t.Fatalf("Commits = %d and %d, want at least 1 and 0", a.Commits(), b.Commits())
	}
}

// TestReadOnlyStore: a read-only store reads what a writer wrote, knows
// its ledger id, exports no key file and refuses every write.
func TestReadOnlyStore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	w := open(t, url, Options{})
	ap := approvalOf("ap-1", "t1")
	if _, err := w.Commit(ctx, entry(custody.KindApprovalRequest, "t1"), custody.CreateApproval(ap), custody.PutState("test", "k", json.RawMessage(`"v"`))); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, url, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.LedgerID() == "" || r.LedgerID() != w.LedgerID() {
		t.Fatalf("read-only LedgerID = %q, the writer's %q", r.LedgerID(), w.LedgerID())
	}
	if r.PublicKeyFile() != "" {
		t.Fatalf("read-only PublicKeyFile = %q, want none", r.PublicKeyFile())
	}
	if es, err := r.Entries(ctx, custody.Query{}); err != nil || len(es) != 1 {
		t.Fatalf("Entries = %d, %v; want 1", len(es), err)
	}
	if a, err := r.Approval(ctx, "ap-1"); err != nil || a.Status != custody.ApprovalPending {
		t.Fatalf("Approval = %+v, %v", a, err)
	}
	if doc, err := r.State(ctx, "test", "k"); err != nil || string(doc) != `"v"` {
		t.Fatalf("State = %s, %v", doc, err)
	}
	_, err = r.Checkpoint(ctx)
	wantKind(t, "read-only Checkpoint", err, custody.EUNAVAILABLE)
	err = r.Load(ctx, func(*Loader) error { return nil })
	wantKind(t, "read-only Load", err, custody.EUNAVAILABLE)
}
