-- Every instance writing to the ledger holds a lease, renewed while it
-- runs and deleted when it closes: an intent (call.started) names its
-- instance, and an instance without a lease that has not expired will
-- never record the outcome of its open intents (see lease.go).
CREATE TABLE instance_leases (
	instance   text        PRIMARY KEY,
	started_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
