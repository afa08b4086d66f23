package sqlite

import (
	"context"
	"sync"

	"github.com/custody-dev/custody"
)

// approvalFeed hands the id of every approval a commit of this process
// changed to the console's event streams (/v1/events). One process
// writes a SQLite store, so no change comes from elsewhere; PostgreSQL's
// come by LISTEN/NOTIFY from every instance.
type approvalFeed struct {
	mu   sync.Mutex
	subs map[chan string]struct{}
}

// ApprovalChanges sends the id of each approval created, decided or used
// from now on, until ctx ends, when the channel closes. A receiver that
// falls behind misses ids, not the change: it re-reads the queue.
func (db *DB) ApprovalChanges(ctx context.Context) (<-chan string, error) {
	ch := make(chan string, 256)
	f := &db.feed
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan string]struct{}{}
	}
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
		close(ch)
	})
	return ch, nil
}

// changed tells the subscribers of the approvals committed changes touch.
func (f *approvalFeed) changed(changes []custody.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		return
	}
	for _, c := range changes {
		id := ""
		switch c.Op {
		case custody.OpCreateApproval, custody.OpUpdateApproval:
			id = c.Approval.ID
		case custody.OpConsumeApproval:
			id = c.ID
		}
		if id == "" {
			continue
		}
		for ch := range f.subs {
			select {
			case ch <- id:
			default: // the receiver re-reads the queue
			}
		}
	}
}
