package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres"
)

// sharedStore is a store that instances share, running calls at the same
// time, each under a lease (see store/postgres lease.go): the calls left
// open by an instance may be closed as interrupted only once that
// instance is gone, its lease ended or expired.
type sharedStore interface {
	custody.Store
	// Live returns the instances whose lease is current, the caller's
	// among them.
	Live(ctx context.Context) (map[string]bool, error)
	// Expired returns the instances whose lease has expired and is kept.
	Expired(ctx context.Context) ([]string, error)
	// ForgetExpired deletes the leases of instances still expired.
	ForgetExpired(ctx context.Context, instances []string) error
	// Heartbeat is how often an instance renews its lease.
	Heartbeat() time.Duration
}

var _ sharedStore = (*postgres.DB)(nil)

// orphans returns, in seq order, the intents without an outcome whose
// instance is gone: it holds no current lease, so it will never record
// their outcome. Intents that name no instance were recorded before
// instances held leases and are left alone: nothing tells whose they are.
func orphans(ctx context.Context, db sharedStore) ([]custody.Entry, error) {
	open, err := unfinishedIntents(ctx, db)
	if err != nil {
		return nil, err
	}
	// The leases are read after the head: an instance that recorded an
	// intent up to it had taken its lease before, and is among the live
	// unless it has gone since.
	live, err := db.Live(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the instances' leases: %w", err)
	}
	var out []custody.Entry
	for _, in := range open {
		if id := in.Refs[postgres.RefInstance]; id != "" && !live[id] {
			out = append(out, in)
		}
	}
	return out, nil
}

// closeOrphans appends a call.interrupted entry for every orphan (see
// orphans) and returns the entries it appended, then forgets the leases
// in expired, read before the orphans were: their instances' calls are
// closed. Instances may run it at the same time: each intent is closed
// once (closeIntents).
func closeOrphans(ctx context.Context, db sharedStore, expired []string, now func() string) ([]custody.Entry, error) {
	in, err := orphans(ctx, db)
	if err != nil {
		return nil, err
	}
	out, err := closeIntents(ctx, db, in, now)
	if err != nil {
		return out, err
	}
	return out, db.ForgetExpired(ctx, expired)
}

// watchOrphans closes the orphans when serve starts, then whenever a
// heartbeat finds an instance's lease expired, until ctx ends.
func watchOrphans(ctx context.Context, db sharedStore, now func() string, log *slog.Logger) {
	pass := func(first bool) {
		expired, err := db.Expired(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("cannot read the instances' leases", "err", err)
			}
			return
		}
		if !first && len(expired) == 0 {
			return // no instance died since the last pass
		}
		closed, err := closeOrphans(ctx, db, expired, now)
		logClosed(ctx, log, closed, err, "expired_instances", len(expired))
	}
	pass(true)
	tick := time.NewTicker(db.Heartbeat())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pass(false)
		}
	}
}

// logClosed logs the outcome of a pass that closed interrupted calls.
func logClosed(ctx context.Context, log *slog.Logger, closed []custody.Entry, err error, attrs ...any) {
	if err != nil && ctx.Err() == nil {
		log.Error("cannot close the interrupted calls", append([]any{"closed", len(closed), "err", err}, attrs...)...)
		return
	}
	log.Info("interrupted calls closed", append([]any{"count", len(closed)}, attrs...)...)
}
