-- custody's own access tokens for the upstreams that need OAuth, one per
-- upstream, sealed (AES-256-GCM) with a key kept beside the signing key
-- in the data directory, never in this database: a copy of it holds no
-- usable token. Not evidence: no ledger entry names them.
CREATE TABLE upstream_tokens (
	upstream   TEXT PRIMARY KEY,
	sealed     BLOB NOT NULL,
	updated_at TEXT NOT NULL
) WITHOUT ROWID;
