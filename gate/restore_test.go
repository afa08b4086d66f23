package gate_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/store/sqlite"
)

// TestApprovalFoundAfterRestore checks that a backup restored beside the
// files a later ledger left (a lookup index of earlier versions) still
// finds its approvals: what the policy reads lives in the database it
// restores, and no file derived from another ledger answers for it.
func TestApprovalFoundAfterRestore(t *testing.T) {
	dir, backup, restored := privateDir(t), privateDir(t), privateDir(t)
	h := newHarnessIn(t, dir)
	id := h.pending(t, "trace-r", "post_announcement", post)
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, dir, backup, sqlite.DatabaseFile)

	later := newHarnessIn(t, dir)
	for range 200 {
		if _, err := later.call("trace-later", "echo", `{"n":1}`); err != nil {
			t.Fatal(err)
		}
	}
	if err := later.db.Close(); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, backup, restored, sqlite.DatabaseFile)
	copyFiles(t, dir, restored, "signing.key", "signing.pub", "index.db")

	h = newHarnessIn(t, restored)
	h.decide(t, id, approval.Approve, nil)
	if _, err := h.call("trace-r", "post_announcement", post); err != nil {
		t.Fatalf("the approved call after the restore: %v", err)
	}
	// An approval asked for after the restore is found too.
	id = h.pending(t, "trace-new", "post_announcement", post)
	h.decide(t, id, approval.Approve, nil)
	if _, err := h.call("trace-new", "post_announcement", post); err != nil {
		t.Fatalf("the approved call of a request made after the restore: %v", err)
	}
	if as, err := h.svc.List(t.Context(), custody.ApprovalPending); err != nil || len(as) != 0 {
		t.Fatalf("%d pending approvals, %v; want none: the approval was found", len(as), err)
	}
}

// copyFiles copies the named files, with their -wal and -shm files, from
// one data directory to another; a file that does not exist is skipped.
func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, name := range names {
		copyFile(t, from, to, name)
		copyFile(t, from, to, name+"-wal")
		copyFile(t, from, to, name+"-shm")
	}
}

func copyFile(t *testing.T, from, to, name string) {
	t.Helper()
	{
		os.Remove(filepath.Join(to, name))
		src, err := os.Open(filepath.Join(from, name))
		if os.IsNotExist(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.OpenFile(filepath.Join(to, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			_, err = io.Copy(dst, src)
			err = errorsJoin(err, dst.Close())
		}
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// privateDir returns a new temporary directory only its owner may use, as
// a data directory holding a ledger must be.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
