package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/custody-dev/custody"
)

func approval(id string, created time.Time) custody.Approval {
	return custody.Approval{
		ID: id, Status: custody.ApprovalPending, Tool: "vms.update",
		Arguments: json.RawMessage(`{"sign":"A1","message":"SLOW"}`), Digest: "d-" + id,
		Trace: "t1", Requester: "agent", CreatedAt: created, ExpiresAt: created.Add(time.Hour),
	}
}

func TestApprovalCRUD(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	create := func(a custody.Approval) error {
		_, err := db.Commit(ctx, entry(custody.KindApprovalRequest, a.Trace, nil, 0), custody.CreateApproval(a))
		return err
	}
	for i, id := range []string{"ap-1", "ap-2", "ap-3"} {
		if err := create(approval(id, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if err := create(approval("ap-2", t0)); kindOf(err) != custody.ECONFLICT {
		t.Fatalf("duplicate approval: err = %v, want ECONFLICT", err)
	}
	if err := create(custody.Approval{Status: custody.ApprovalPending}); kindOf(err) != custody.EINVALID {
		t.Fatalf("approval without id: err = %v, want EINVALID", err)
	}
	got, err := db.Approval(ctx, "ap-2")
	if err != nil || got.Tool != "vms.update" || !got.CreatedAt.Equal(t0.Add(time.Minute)) || string(got.Arguments) != `{"sign":"A1","message":"SLOW"}` {
		t.Fatalf("Approval = %+v, %v", got, err)
	}
	if _, err := db.Approval(ctx, "nope"); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("Approval of an unknown id: err = %v, want ENOTFOUND", err)
	}
	decided := t0.Add(time.Hour)
	up, err := db.Approval(ctx, "ap-1")
	if err != nil {
		t.Fatal(err)
	}
	up.Status, up.Operator, up.DecidedAt = custody.ApprovalApproved, "op-1", &decided
	if _, err := db.Commit(ctx, entry(custody.KindApprovalDecided, up.Trace, nil, 0), custody.UpdateApproval(up, custody.ApprovalPending)); err != nil {
		t.Fatalf("decide: %v", err)
	}
	up.ID = "nope"
	if _, err := db.Commit(ctx, entry(custody.KindApprovalDecided, up.Trace, nil, 0), custody.UpdateApproval(up, custody.ApprovalPending)); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("decide an unknown id: err = %v, want ENOTFOUND", err)
	}

	tests := []struct {
		name   string
		status custody.ApprovalStatus
		want   string
	}{
		{"All", "", "[ap-3 ap-2 ap-1]"},
		{"Pending", custody.ApprovalPending, "[ap-3 ap-2]"},
		{"Approved", custody.ApprovalApproved, "[ap-1]"},
		{"Declined", custody.ApprovalDeclined, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as, err := db.Approvals(ctx, tt.status)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, a := range as {
				ids = append(ids, a.ID)
			}
			if fmt.Sprint(ids) != tt.want {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestState(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if _, err := db.State(ctx, "signs", "A1"); kindOf(err) != custody.ENOTFOUND {
		t.Fatalf("State of an unknown key: err = %v, want ENOTFOUND", err)
	}
	if err := db.PutState(ctx, "signs", "A1", json.RawMessage(`{"msg":"SLOW"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "signs", "A1", json.RawMessage(`{"msg":"STOP"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "signs", "B2", json.RawMessage(`[1,2]`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "other", "A1", json.RawMessage(`true`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "signs", "bad", json.RawMessage(`{`)); kindOf(err) != custody.EINVALID {
		t.Fatalf("PutState of invalid JSON: err = %v, want EINVALID", err)
	}
	doc, err := db.State(ctx, "signs", "A1")
	if err != nil || string(doc) != `{"msg":"STOP"}` {
		t.Fatalf("State = %s, %v", doc, err)
	}
	all, err := db.States(ctx, "signs")
	if err != nil || len(all) != 2 || string(all["B2"]) != `[1,2]` {
		t.Fatalf("States = %s, %v", all, err)
	}
	if _, err := db.IncrState(ctx, "signs", "A1", 1); kindOf(err) != custody.EINVALID {
		t.Fatalf("IncrState of a non-counter: err = %v, want EINVALID", err)
	}
}

func TestIncrStateConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if _, err := db.IncrState(ctx, "budget", "trace-1", 2); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	n, err := db.IncrState(ctx, "budget", "trace-1", -1)
	if err != nil || n != 399 {
		t.Fatalf("IncrState = %d, %v; want 399", n, err)
	}
	if doc, _ := db.State(ctx, "budget", "trace-1"); string(doc) != "399" {
		t.Fatalf("State = %s, want 399", doc)
	}
	if err := db.PutState(ctx, "budget", "max", json.RawMessage(`9223372036854775807`)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.IncrState(ctx, "budget", "max", 1); kindOf(err) != custody.EINVALID {
		t.Fatalf("overflow: err = %v, want EINVALID", err)
	}
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	count := func(t *testing.T, dir string) (n, max int) {
		t.Helper()
		raw, err := sql.Open("sqlite", "file:"+dir+"/"+DatabaseFile)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if err := raw.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		return n, max
	}
	files, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Idempotent", func(t *testing.T) {
		dir := t.TempDir()
		for range 3 {
			db, err := Open(context.Background(), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
		if n, max := count(t, dir); n != len(files) || max != len(files) {
			t.Fatalf("schema_migrations holds %d rows up to %d, want %d", n, max, len(files))
		}
	})
	t.Run("AppliesOnlyNew", func(t *testing.T) {
		dir := t.TempDir()
		db := openDir(t, dir, Options{})
		mustAppend(t, db, entry("k", "t", nil, 1))
		db.Close()
		next := fmt.Sprintf("migrations/%04d_extra.sql", len(files)+1)
		fsys := fstest.MapFS{next: {Data: []byte(`CREATE TABLE extra (x INTEGER)`)}}
		for _, m := range files {
			fsys["migrations/"+m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
		ms, err := loadMigrations(fsys)
		if err != nil {
			t.Fatal(err)
		}
		raw := openRaw(t, dir)
		for range 2 {
			if err := migrate(ctx, raw, ms, time.Now()); err != nil {
				t.Fatalf("migrate: %v", err)
			}
		}
		if n, max := count(t, dir); n != len(files)+1 || max != len(files)+1 {
			t.Fatalf("schema_migrations holds %d rows up to %d, want %d", n, max, len(files)+1)
		}
	})
	t.Run("RefusesNewer", func(t *testing.T) {
		dir := t.TempDir()
		openDir(t, dir, Options{}).Close()
		rawExec(t, dir, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future.sql', '')`)
		_, err := Open(context.Background(), dir, Options{})
		if kindOf(err) != custody.EUNAVAILABLE || !contains(custody.ErrorMessage(err), "newer") {
			t.Fatalf("Open of a newer database: err = %v, want a clear refusal", err)
		}
	})
	t.Run("RefusesGap", func(t *testing.T) {
		fsys := fstest.MapFS{
			"migrations/0001_a.sql": {Data: []byte(`SELECT 1`)},
			"migrations/0003_c.sql": {Data: []byte(`SELECT 1`)},
		}
		if _, err := loadMigrations(fsys); err == nil {
			t.Fatal("loadMigrations accepted a gap in the versions")
		}
	})
}

// TestApprovalKeysMigrated checks that the approvals of a database made
// before approvals were keyed by trace and digest are found by them once
// the store opens it.
func TestApprovalKeysMigrated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", dsn(filepath.Join(dir, DatabaseFile), nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, raw, ms[:1], time.Now()); err != nil {
		t.Fatal(err)
	}
	a := approval("ap-old", time.Now())
	doc, _ := json.Marshal(a)
	if _, err := raw.ExecContext(ctx, `INSERT INTO approvals (id, status, created_at, doc) VALUES (?, ?, ?, ?)`,
		a.ID, string(a.Status), custody.FormatTime(a.CreatedAt), doc); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, DatabaseFile), 0o600)
	db := openDir(t, dir, Options{})
	got, err := db.ApprovalsFor(ctx, a.Trace, a.Digest)
	if err != nil || len(got) != 1 || got[0].ID != "ap-old" {
		t.Fatalf("ApprovalsFor after the migration = %+v, %v", got, err)
	}
	// Keyed by its requester too (0006), for its agent's other traces.
	if got, err := db.ApprovalsOf(ctx, a.Requester, a.Digest); err != nil || len(got) != 1 || got[0].ID != "ap-old" || a.Requester == "" {
		t.Fatalf("ApprovalsOf(%q) after the migration = %+v, %v", a.Requester, got, err)
	}
}
