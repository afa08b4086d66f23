-- custody's own access tokens for the upstreams that need OAuth, one per
-- upstream, sealed (AES-256-GCM) with a key kept beside the signing key
-- file, never in this database: a copy of it holds no usable token. Not
-- evidence: no ledger entry names them.
CREATE TABLE upstream_tokens (
	upstream   text        PRIMARY KEY,
	sealed     bytea       NOT NULL,
	updated_at timestamptz NOT NULL
);
