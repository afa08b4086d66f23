// Package chaincheck verifies a store's whole chain in the background when
// a gateway starts, and fences the store when the chain fails.
//
// Opening a store checks only what it must to append safely: the ledger's
// identity and the entries since its last checkpoint. An entry edited in
// the middle of the chain (its body, its actor, its hash recomputed), an
// entry deleted, two entries swapped: none of these shows at open. Start
// runs the store's own full verification (the SQLite store's reads on
// several connections at once) beside the first calls rather than before
// them, and when it names a bad seq the store refuses every write from
// then on, as it does when its database goes away: nothing more is
// chained, nor signed, onto a ledger found changed. Both stores meet one
// Store contract; the rule lives here once.
package chaincheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Store is what a check needs of a store.
type Store interface {
	// Verify checks the whole chain and every stored checkpoint as they
	// were when it began. A changed ledger is a *ledger.VerifyError
	// naming the first bad seq; a failure to read it is EUNAVAILABLE.
	Verify(ctx context.Context) (ledger.Report, error)
	// Fence refuses every write from then on with EUNAVAILABLE, reason
	// saying why, until the store is opened again.
	Fence(reason error)
}

// State is where a check stands.
type State string

// States of a check.
const (
	// Verifying: the check runs; the store serves meanwhile.
	Verifying State = "verifying"
	// OK: the whole chain verified, up to Status.Size.
	OK State = "ok"
	// Failed: the chain fails at Status.BadSeq, or could not be read
	// to its end (BadSeq 0); the store is fenced.
	Failed State = "failed"
)

// Status is what the last full verification found.
type Status struct {
	State State
	// Started is when it began; Finished when it ended, zero while it
	// runs.
	Started, Finished time.Time
	// Size is how many entries it verified, once it held.
	Size int64
	// BadSeq is the first seq found changed; 0 when none was.
	BadSeq int64
	// Reason says why it failed, without paths: safe for an
	// unauthenticated health check.
	Reason string
}

// Err returns nil unless the check failed, and then an EUNAVAILABLE
// error naming the first bad seq.
func (s Status) Err() error {
	if s.State != Failed {
		return nil
	}
	return custody.Errorf(custody.EUNAVAILABLE, "%s", s.Reason)
}

// Check is one full verification running in the background.
type Check struct {
	mu   sync.Mutex
	st   Status
	done chan struct{}
}

// Start verifies s's whole chain in a goroutine of its own and returns at
// once. When the chain fails, or cannot be read to its end, s is fenced:
// a gateway does not write onto a ledger it could not verify. ctx ending
// stops the check without a verdict. now gives the times of the Status;
// log receives the verdict.
func Start(ctx context.Context, s Store, now func() time.Time, log *slog.Logger) *Check {
	c := &Check{st: Status{State: Verifying, Started: now()}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		rep, err := s.Verify(ctx)
		if ctx.Err() != nil {
			return
		}
		st := c.Status()
		st.Finished = now()
		if err != nil {
			st.State, st.BadSeq, st.Reason = Failed, badSeq(err), reason(err)
			s.Fence(errors.New(st.Reason))
			log.Error("the ledger fails verification: writes are refused", "seq", st.BadSeq, "reason", st.Reason, "err", err)
		} else {
			st.State, st.Size = OK, rep.Entries
			log.Info("the whole ledger verified", "entries", rep.Entries, "took", st.Finished.Sub(st.Started))
		}
		c.mu.Lock()
		c.st = st
		c.mu.Unlock()
	}()
	return c
}

// Status returns where the check stands.
func (c *Check) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Done is closed once the check has ended, with a verdict or stopped.
func (c *Check) Done() <-chan struct{} { return c.done }

func badSeq(err error) int64 {
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		return ve.Seq
	}
	return 0
}

// reason says why the check failed, in words safe to show anyone: the
// verifier's reason, or the kind of a failure to read.
func reason(err error) string {
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		return fmt.Sprintf("the ledger fails verification at seq %d (%s): writes are refused; restore the ledger from a good copy and restart", ve.Seq, ve.Reason)
	}
	msg := "the store could not be read"
	var ce *custody.Error
	if errors.As(err, &ce) && ce.Message != "" {
		msg = ce.Message
	}
	return fmt.Sprintf("the whole-chain verification could not finish (%s): writes are refused; restart once the store reads", msg)
}
