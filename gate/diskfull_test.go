package gate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/internal/smallfs"
)

// On a real full disk a WRITE call fails closed: it is unavailable, its
// result is never returned, and the ledger holds either nothing of it
// (the handler never ran) or its intent alone (the handler ran, its
// outcome could not be recorded). Once space is freed calls go on, on a
// chain that verifies.
//
// Nothing here depends on timing: the store's clock stands still (no
// checkpoint is signed on the interval while the disk fills, and every
// run writes the same bytes), and no run is cut short by a deadline a
// loaded machine could miss, so the only refusal is the full disk's.
func TestWriteCallOnFullDisk(t *testing.T) {
	dir := smallfs.Mount(t, 3<<20)
	reserve := smallfs.Fill(t, dir, 1<<20)
	h := newHarnessWith(t, harnessOptions{dir: dir, deadline: time.Hour, stoppedStore: true})
	args := `{"message":"` + strings.Repeat("A", 2000) + `"}`
	var refused error
	var trace string
	var answered int64
	for i := range 2000 {
		trace = fmt.Sprintf("trace-full-%d", i)
		res, err := h.call(trace, "put", args)
		if err != nil {
			if res.Output != nil {
				t.Fatalf("a failed call returned its output %s", res.Output)
			}
			refused = err
			break
		}
		answered++
	}
	if refused == nil {
		t.Fatal("2000 WRITE calls of 2 KB each fit on a 3 MB filesystem")
	}
	wantKind(t, refused, custody.EUNAVAILABLE)
	if !strings.Contains(refused.Error(), "disk is full") {
		t.Fatalf("refused with %v, want the ledger's full disk", refused)
	}

	reserve()
	switch es := h.entries(t, custody.Query{Trace: trace}); {
	case len(es) == 0:
		t.Logf("call %d refused before its intent was recorded", answered+1)
		if got := h.ran("put"); got != answered {
			t.Errorf("handler ran %d times for %d calls answered; the refused call's ran with no intent recorded", got, answered)
		}
	case len(es) == 1 && es[0].Kind == custody.KindCallStarted:
		t.Logf("call %d refused after its handler ran: its outcome was not recorded", answered+1)
		if got := h.ran("put"); got != answered+1 {
			t.Errorf("handler ran %d times for %d calls answered and one whose outcome was lost", got, answered)
		}
	default:
		t.Fatalf("the refused call left %d entries, the first %s", len(es), es[0].Kind)
	}
	if _, err := h.call("trace-after", "put", args); err != nil {
		t.Fatalf("a call after space was freed: %v", err)
	}
	if _, err := h.db.Verify(context.Background()); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
