package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/custody-dev/custody"
)

// Leases. Instances sharing the store run calls at the same time, so the
// ledger alone cannot tell an instance starting whether an intent
// (call.started) without an outcome belongs to a call still running on
// another instance or to a call whose instance died before recording its
// outcome. Each instance that writes holds a lease, one row of
// instance_leases: Open inserts it, a heartbeat renews it every
// Options.Heartbeat to LeaseBeats heartbeats past the instance's clock,
// and Close deletes it once the writer has drained. Every call.started
// the instance commits names it in the ref RefInstance (Commit sets it;
// the body is left as it came).
//
// An intent whose instance holds no lease that is current is an orphan:
// its instance is gone, and its outcome will never be recorded. Closing
// orphans is the gateway's, which pairs intents with outcomes (see
// cmd/custody); the store says who is alive (Live) and who has died
// since (Expired, ForgetExpired). An intent that names no instance was
// recorded before instances held leases: nothing tells whose it is.
//
// Leases are compared with each instance's own clock (Options.Now), so
// the instances' clocks must agree to well within a lease. An instance
// that cannot renew its lease for a whole lease looks dead to the others,
// who close its open calls as interrupted; should it record an outcome
// afterwards, that entry follows the call.interrupted on the ledger, and
// the instance logs that its lease had expired.

// RefInstance is the ref of a call.started entry that names the instance
// that recorded it, the holder of the lease that says whether the call
// may still end.
const RefInstance = "gateway_instance"

// Lease timing.
const (
	// DefaultHeartbeat is how often an instance renews its lease unless
	// Options.Heartbeat says otherwise.
	DefaultHeartbeat = 10 * time.Second
	// LeaseBeats is how many heartbeats a lease lasts: an instance
	// missing fewer than that many renewals in a row is still alive.
	LeaseBeats = 3
)

// newInstanceID returns a new instance id: the host's name, for the
// operator, and a random part, so that a restarted instance is another
// one, whose intents of its former life are orphans.
func newInstanceID() string {
	id := strings.ToLower(rand.Text()[:12])
	if host, err := os.Hostname(); err == nil && host != "" {
		return host + "-" + id
	}
	return id
}

// Instance returns this instance's id, the one its intents name in
// RefInstance.
func (db *DB) Instance() string { return db.instance }

// Heartbeat returns how often this instance renews its lease.
func (db *DB) Heartbeat() time.Duration { return db.opts.Heartbeat }

// Lease returns how long a lease lasts without a renewal.
func (db *DB) Lease() time.Duration { return LeaseBeats * db.opts.Heartbeat }

// stamp returns e naming this instance when e is an intent. The refs are
// copied: the caller may share its map between entries.
func (db *DB) stamp(e custody.Entry) custody.Entry {
	if e.Kind != custody.KindCallStarted {
		return e
	}
	refs := make(map[string]string, len(e.Refs)+1)
	maps.Copy(refs, e.Refs)
	refs[RefInstance] = db.instance
	e.Refs = refs
	return e
}

// takeLease inserts this instance's lease and starts its heartbeat.
func (db *DB) takeLease(ctx context.Context) error {
	if err := db.insertLease(ctx); err != nil {
		return err
	}
	db.beatStop, db.beatDone = make(chan struct{}), make(chan struct{})
	go db.heartbeat(db.beatStop, db.beatDone)
	return nil
}

func (db *DB) insertLease(ctx context.Context) error {
	now := db.opts.Now()
	const insert = `INSERT INTO instance_leases (instance, started_at, expires_at) VALUES ($1, $2, $3)`
	_, err := db.pool.Exec(ctx, insert, db.instance, now, now.Add(db.Lease()))
	return unavailable("take the instance's lease", err)
}

// heartbeat renews the lease every Heartbeat until stop is closed.
func (db *DB) heartbeat(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(db.opts.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), db.opts.Heartbeat)
			if err := db.renewLease(ctx); err != nil {
				db.opts.Logger.Warn("cannot renew the instance's lease", "instance", db.instance, "err", err)
			}
			cancel()
		}
	}
}

// renewLeaseSQL moves the lease's end and returns the end it had.
const renewLeaseSQL = `WITH old AS (SELECT expires_at FROM instance_leases WHERE instance = $1 FOR UPDATE)
	UPDATE instance_leases SET expires_at = $2 FROM old WHERE instance = $1 RETURNING old.expires_at`

// renewLease moves the end of the lease a lease past now. A lease that
// had expired, or that another instance forgot, is taken again, and
// logged: the others may have closed this instance's open calls as
// interrupted.
func (db *DB) renewLease(ctx context.Context) error {
	now := db.opts.Now()
	var was time.Time
	err := db.pool.QueryRow(ctx, renewLeaseSQL, db.instance, now.Add(db.Lease())).Scan(&was)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		db.opts.Logger.Error("this instance's lease had expired and was forgotten: its calls that were running may have been closed as interrupted", "instance", db.instance)
		return db.insertLease(ctx)
	case err != nil:
		return unavailable("renew the instance's lease", err)
	case !was.After(now):
		db.opts.Logger.Error("this instance's lease had expired: its calls that were running may have been closed as interrupted", "instance", db.instance, "expired", was)
	}
	return nil
}

// endLease stops the heartbeat and deletes the lease: the instance's
// intents still open are orphans from now on. A failure is logged only:
// the lease then expires.
func (db *DB) endLease() {
	if db.beatStop == nil {
		return
	}
	close(db.beatStop)
	<-db.beatDone
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if _, err := db.pool.Exec(ctx, `DELETE FROM instance_leases WHERE instance = $1`, db.instance); err != nil {
		db.opts.Logger.Warn("cannot end the instance's lease: it expires on its own", "instance", db.instance, "err", err)
	}
}

// Live returns the instances whose lease has not expired by this
// instance's clock, this one among them whatever its lease says: the
// instances that may still record the outcome of the calls they started.
func (db *DB) Live(ctx context.Context) (map[string]bool, error) {
	ids, err := db.leases(ctx, `SELECT instance FROM instance_leases WHERE expires_at > $1`, db.opts.Now())
	if err != nil {
		return nil, err
	}
	live := map[string]bool{db.instance: true}
	for _, id := range ids {
		live[id] = true
	}
	return live, nil
}

// Expired returns, in order, the instances whose lease has expired by
// this instance's clock but is still kept: instances that died since the
// last ForgetExpired, whose open calls no one has closed yet.
func (db *DB) Expired(ctx context.Context) ([]string, error) {
	const expired = `SELECT instance FROM instance_leases WHERE expires_at <= $1 AND instance <> $2 ORDER BY instance`
	return db.leases(ctx, expired, db.opts.Now(), db.instance)
}

// ForgetExpired deletes the leases of instances that are still expired,
// once their open calls are closed, so that Expired no longer names
// them. A lease renewed since stays.
func (db *DB) ForgetExpired(ctx context.Context, instances []string) error {
	if len(instances) == 0 {
		return nil
	}
	const forget = `DELETE FROM instance_leases WHERE instance = ANY($1) AND expires_at <= $2 AND instance <> $3`
	_, err := db.pool.Exec(ctx, forget, instances, db.opts.Now(), db.instance)
	return unavailable("forget expired leases", err)
}

// leases runs a query of instance ids.
func (db *DB) leases(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, unavailable("read the instances' leases", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable("read the instances' leases", err)
	}
	return ids, nil
}
