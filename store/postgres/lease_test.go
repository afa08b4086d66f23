package postgres

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/lockedbuf"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// testClock is an instance's clock, set by the test. Leases in these
// tests last three hours, so that no heartbeat ticks while they run:
// every renewal is the test's.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// leaseEpoch is when the tests' instances start.
var leaseEpoch = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

// openLeased opens an instance on url with the signing key in key, its
// clock set to at and hour-long heartbeats.
func openLeased(t *testing.T, url, key string, at time.Time, log *slog.Logger) (*DB, *testClock) {
	t.Helper()
	c := &testClock{t: at}
	return open(t, url, Options{KeyFile: key, Now: c.Now, Heartbeat: time.Hour, Logger: log}), c
}

// TestInterruptLeaseNamesIntents: a call.started is committed naming its
// instance in its refs, beside the refs it came with and with its body
// as it came; other entries are left as they are, and the chain verifies.
func TestInterruptLeaseNamesIntents(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	refs := map[string]string{"upstream": "notes"}
	body := json.RawMessage(`{"tool":"write_note", "arguments":{"b":1,"a":2}}`)
	started, err := db.Commit(ctx, custody.Entry{Kind: custody.KindCallStarted, Trace: "t1", Actor: "a", Refs: refs, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.Append(ctx, custody.Entry{Kind: custody.KindCallSucceeded, Trace: "t1", Actor: "a", Refs: refs, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("Commit changed the caller's refs: %v", refs)
	}
	es, err := db.Entries(ctx, custody.Query{})
	if err != nil || len(es) != 2 {
		t.Fatalf("Entries = %v, %v", es, err)
	}
	want := map[string]string{"upstream": "notes", RefInstance: db.Instance()}
	if !maps.Equal(started.Refs, want) || !maps.Equal(es[0].Refs, want) || string(es[0].Body) != string(body) {
		t.Fatalf("intent committed as %v %s, stored as %v %s; want refs %v and the body as it came", started.Refs, started.Body, es[0].Refs, es[0].Body, want)
	}
	if !maps.Equal(other.Refs, refs) || !maps.Equal(es[1].Refs, refs) {
		t.Fatalf("call.succeeded refs %v, stored %v; want %v", other.Refs, es[1].Refs, refs)
	}
	if rep, err := db.Verify(ctx); err != nil || rep.Entries != 2 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestInterruptLeaseLifetime follows an instance's lease as another instance's
// clock sees it: alive until a lease past its last renewal, alive again
// once renewed, kept by ForgetExpired when renewed since it expired, and
// gone once its instance closes.
func TestInterruptLeaseLifetime(t *testing.T) {
	url, key := pgtest.URL(t), filepath.Join(t.TempDir(), "signing.key")
	ctx := context.Background()
	a, aClock := openLeased(t, url, key, leaseEpoch, nil)
	b, bClock := openLeased(t, url, key, leaseEpoch, nil)
	lease := a.Lease()
	if lease != 3*time.Hour || a.Instance() == b.Instance() {
		t.Fatalf("lease %v, instances %q and %q: want 3h and two ids", lease, a.Instance(), b.Instance())
	}
	// check wants a alive, or dead with its lease kept (expired) or not.
	check := func(what string, alive, expiredKept bool) {
		t.Helper()
		live, err := b.Live(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expired, err := b.Expired(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if live[a.Instance()] != alive || !live[b.Instance()] || slices.Contains(expired, a.Instance()) != expiredKept {
			t.Fatalf("%s: live %v, expired %v; want %s alive %v, among the expired %v", what, live, expired, a.Instance(), alive, expiredKept)
		}
	}
	check("at the start", true, false)
	bClock.Set(leaseEpoch.Add(lease - time.Second))
	check("within the lease", true, false)
	bClock.Set(leaseEpoch.Add(lease))
	check("a lease after the start", false, true)

	aClock.Set(leaseEpoch.Add(time.Hour))
	if err := a.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a renewal", true, false)

	bClock.Set(leaseEpoch.Add(time.Hour + lease))
	check("a lease after the renewal", false, true)
	aClock.Set(leaseEpoch.Add(2 * time.Hour))
	if err := a.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.ForgetExpired(ctx, []string{a.Instance()}); err != nil {
		t.Fatal(err)
	}
	check("forgotten after it was renewed", true, false)

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM instance_leases WHERE instance = $1`, a.Instance()); n != 0 {
		t.Fatalf("%d leases of the closed instance, want none", n)
	}
	check("closed", false, false)
}

// TestInterruptLeaseForgottenIsTakenAgain: an instance whose expired lease another
// forgot takes it again at its next renewal, and says in its log that its
// running calls may have been closed as interrupted; so does one that
// renews a lease already expired.
func TestInterruptLeaseForgottenIsTakenAgain(t *testing.T) {
	url, key := pgtest.URL(t), filepath.Join(t.TempDir(), "signing.key")
	ctx := context.Background()
	log := &lockedbuf.Buffer{}
	a, aClock := openLeased(t, url, key, leaseEpoch, slog.New(slog.NewTextHandler(log, nil)))
	aClock.Set(leaseEpoch.Add(4 * time.Hour))
	if err := a.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "lease had expired") {
		t.Fatalf("renewing an expired lease logged:\n%s", log)
	}

	b, _ := openLeased(t, url, key, leaseEpoch.Add(8*time.Hour), nil)
	if err := b.ForgetExpired(ctx, []string{a.Instance()}); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM instance_leases WHERE instance = $1`, a.Instance()); n != 0 {
		t.Fatalf("%d leases of the forgotten instance, want none", n)
	}
	aClock.Set(leaseEpoch.Add(8 * time.Hour))
	if err := a.renewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "was forgotten") {
		t.Fatalf("renewing a forgotten lease logged:\n%s", log)
	}
	if live, err := b.Live(ctx); err != nil || !live[a.Instance()] {
		t.Fatalf("Live = %v, %v: the forgotten lease was not taken again", live, err)
	}
}

// TestInterruptLeaseNotReadOnly: an instance that only reads writes nothing,
// not even a lease.
func TestInterruptLeaseNotReadOnly(t *testing.T) {
	url := pgtest.URL(t)
	w := open(t, url, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := open(t, url, Options{ReadOnly: true})
	if n := pgtest.QueryInt(t, url, `SELECT count(*) FROM instance_leases`); n != 0 {
		t.Fatalf("%d leases with a read-only instance open, want none", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
