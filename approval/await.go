package approval

import (
	"context"
	"sync"
	"time"

	"github.com/custody-dev/custody"
)

// DefaultPoll is how often a waiter re-reads the store besides the
// store's change notifications: the bound on how late it learns of a
// decision another process took on a store that cannot tell it (SQLite).
const DefaultPoll = 2 * time.Second

// Await waits until an operator decides the approval id, it expires or
// ctx ends, and returns it as it then stands: no longer pending, or
// pending past its expiry (the sweep has not marked it yet). It wakes on
// the store's change notifications (Config.Changes), re-reading every
// Config.Poll besides, never in a busy loop. The error is ctx's when ctx
// ends first (with the approval as last read), or the store's.
func (s *Service) Await(ctx context.Context, id string) (custody.Approval, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribed before the first read: a decision taken in between
	// still wakes the loop.
	woken := s.Watch(ctx, id)
	for {
		// Read whatever ctx says: an ended wait still reports the
		// approval as it stands.
		a, err := s.Get(context.WithoutCancel(ctx), id)
		if err != nil {
			return a, err
		}
		if a.Status != custody.ApprovalPending || !s.now().Before(a.ExpiresAt) {
			return a, nil
		}
		expiry := time.NewTimer(a.ExpiresAt.Sub(s.now()))
		select {
		case <-ctx.Done():
			expiry.Stop()
			return a, ctx.Err()
		case <-woken:
		case <-expiry.C:
		}
		expiry.Stop()
	}
}

// Watch returns a channel that receives whenever the approval id may have
// changed (any approval when id is ""): on the store's notification of a
// change, and every Config.Poll, so that a change the store cannot
// announce is found too. Receives coalesce: a receiver re-reads what it
// watches. The channel is closed once ctx ends.
func (s *Service) Watch(ctx context.Context, id string) <-chan struct{} {
	w := s.watch.add(id)
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer s.watch.remove(w)
		tick := time.NewTicker(s.watch.poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.ch:
			case <-tick.C:
				s.watch.listen()
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// watchers are the waiters of one service, woken by one subscription to
// the store's changes that runs while any waits: one listening
// connection for every waiting call, not one each.
type watchers struct {
	changes func(ctx context.Context) (<-chan string, error)
	poll    time.Duration

	mu   sync.Mutex
	subs map[*watcher]struct{}
	// stop ends the running subscription; nil when none runs.
	stop context.CancelFunc
}

// watcher is one waiter: the approval it waits on ("" any) and its wake-up.
type watcher struct {
	id string
	ch chan struct{}
}

func newWatchers(changes func(context.Context) (<-chan string, error), poll time.Duration) *watchers {
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &watchers{changes: changes, poll: poll, subs: map[*watcher]struct{}{}}
}

// add registers a waiter for id and makes sure the subscription runs.
func (ws *watchers) add(id string) *watcher {
	w := &watcher{id: id, ch: make(chan struct{}, 1)}
	ws.mu.Lock()
	ws.subs[w] = struct{}{}
	ws.mu.Unlock()
	ws.listen()
	return w
}

// remove forgets w, and ends the subscription when nobody waits.
func (ws *watchers) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.subs, w)
	if len(ws.subs) == 0 && ws.stop != nil {
		ws.stop()
		ws.stop = nil
	}
}

// listen starts the subscription to the store's changes unless it runs
// or nobody waits. One that ends (a lost connection) is started again by
// the next waiter or poll; meanwhile the waiters poll.
func (ws *watchers) listen() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.changes == nil || ws.stop != nil || len(ws.subs) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ids, err := ws.changes(ctx)
	if err != nil {
		cancel()
		return
	}
	ws.stop = cancel
	go func() {
		for id := range ids {
			ws.wake(id)
		}
		ws.mu.Lock()
		if ctx.Err() == nil {
			ws.stop = nil // ended on its own: the next poll starts another
		}
		ws.mu.Unlock()
		cancel()
	}()
}

// wake tells the waiters of approval id, and those of any approval.
func (ws *watchers) wake(id string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.subs {
		if w.id != "" && w.id != id {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}
