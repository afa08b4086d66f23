package mesh

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/custody-dev/custody"
)

// Faults are injected into a Loopback for tests and simulations.
type Faults struct {
	// Loss is the probability in [0,1] that a published message is dropped.
	Loss float64
	// Delay holds each message that long before delivery (real time).
	Delay time.Duration
	// Reorder holds up to Reorder messages and releases them in a random
	// order when the window is full (or on Flush).
	Reorder int
	// Seed makes loss and reordering repeatable.
	Seed uint64
}

// Loopback is an in-process Transport. Without delay, delivery happens in
// the publisher's goroutine before Publish returns, so a simulation on a
// loopback is deterministic.
type Loopback struct {
	faults Faults
	mu     sync.Mutex
	rng    *rand.Rand
	// subs holds the subscriptions in the order they were made, none once
	// closed. Subscribe and Unsubscribe, under mu, store a new slice and
	// never change one stored, so a delivery ranges over the slice it
	// loads without taking mu.
	subs   atomic.Pointer[[]loopSub]
	nextID int
	held   []Msg
	closed bool
	// queues feed the delivery workers, when there are any (the
	// benchmarks' newLoopbackWorkers starts them).
	queues    []chan queued
	done      chan struct{}
	closeOnce sync.Once
	pending   sync.WaitGroup
	// Dropped counts messages lost to injected loss.
	dropped int
}

var _ Transport = (*Loopback)(nil)

type queued struct {
	ctx context.Context
	m   Msg
}

type loopSub struct {
	id      int
	pattern string
	h       Handler
}

// NewLoopback returns a loopback transport with the given faults.
func NewLoopback(f Faults) *Loopback {
	return &Loopback{faults: f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))}
}

// Publish delivers m to every matching subscription, subject to the
// injected faults.
func (l *Loopback) Publish(ctx context.Context, m Msg) error {
	msg := m
	msg.Data = append([]byte(nil), m.Data...)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return custody.Errorf(custody.EUNAVAILABLE, "mesh transport closed")
	}
	if l.faults.Loss > 0 && l.rng.Float64() < l.faults.Loss {
		l.dropped++
		l.mu.Unlock()
		return nil
	}
	if l.faults.Reorder <= 1 {
		l.mu.Unlock()
		l.deliverLater(ctx, msg)
		return nil
	}
	batch := l.hold(msg)
	l.mu.Unlock()
	for _, m := range batch {
		l.deliverLater(ctx, m)
	}
	return nil
}

// hold applies the reordering window and returns the messages to deliver
// now. Called with l.mu held.
func (l *Loopback) hold(m Msg) []Msg {
	l.held = append(l.held, m)
	if len(l.held) < l.faults.Reorder {
		return nil
	}
	return l.release()
}

// release shuffles and returns the held messages. Called with l.mu held.
func (l *Loopback) release() []Msg {
	out := l.held
	l.held = nil
	l.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Flush delivers any messages held by the reordering window.
func (l *Loopback) Flush(ctx context.Context) {
	l.mu.Lock()
	batch := l.release()
	l.mu.Unlock()
	for _, m := range batch {
		l.deliverLater(ctx, m)
	}
}

// Dropped returns how many messages injected loss has dropped.
func (l *Loopback) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

func (l *Loopback) deliverLater(ctx context.Context, m Msg) {
	if len(l.queues) > 0 {
		l.pending.Add(1)
		select {
		case l.queues[subjectHash(m.Subject)%uint32(len(l.queues))] <- queued{ctx: uncancelable(ctx), m: m}:
		case <-l.done:
			l.pending.Done()
		}
		return
	}
	if l.faults.Delay <= 0 {
		l.deliver(ctx, m)
		return
	}
	ctx = uncancelable(ctx)
	time.AfterFunc(l.faults.Delay, func() { l.deliver(ctx, m) })
}

// uncancelable returns ctx without its cancellation and deadline, for a
// delivery that outlives the publisher: ctx itself when it has neither.
func uncancelable(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); !ok && ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// deliver hands m to every subscription matching its subject, oldest
// subscription first.
func (l *Loopback) deliver(ctx context.Context, m Msg) {
	subs := l.subs.Load()
	if subs == nil {
		return
	}
	for _, s := range *subs {
		if matchSubject(s.pattern, m.Subject) {
			s.h(ctx, m)
		}
	}
}

// Subscribe registers h for subjects matching pattern.
func (l *Loopback) Subscribe(pattern string, h Handler) (Subscription, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, custody.Errorf(custody.EUNAVAILABLE, "mesh transport closed")
	}
	l.nextID++
	id := l.nextID
	subs := append(l.subscriptions(), loopSub{id: id, pattern: pattern, h: h})
	l.subs.Store(&subs)
	return loopUnsub(func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return nil
		}
		subs := slices.DeleteFunc(l.subscriptions(), func(s loopSub) bool { return s.id == id })
		l.subs.Store(&subs)
		return nil
	}), nil
}

// subscriptions returns a copy of the subscriptions, to change and store.
// Called with l.mu held.
func (l *Loopback) subscriptions() []loopSub {
	if subs := l.subs.Load(); subs != nil {
		return slices.Clone(*subs)
	}
	return nil
}

type loopUnsub func() error

func (u loopUnsub) Unsubscribe() error { return u() }

// Close stops all delivery.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.subs.Store(nil)
	if l.done != nil {
		l.closeOnce.Do(func() { close(l.done) })
	}
	return nil
}

// subjectHash is FNV-1a of the subject.
func subjectHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
