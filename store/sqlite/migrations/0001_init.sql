-- The evidence ledger. Every row is one sealed entry; body holds the exact
-- bytes as received, refs the entry's refs as a JSON object. Lookups by
-- trace, kind and ref go through index.db, which is derived from this
-- table: keeping secondary indexes out of the durable commit keeps every
-- group commit to the few pages the appended rows fill.
CREATE TABLE entries (
	seq         INTEGER PRIMARY KEY,
	at          TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	trace       TEXT    NOT NULL,
	actor       TEXT    NOT NULL,
	refs        TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	body_sha256 TEXT    NOT NULL,
	prev        TEXT    NOT NULL,
	hash        TEXT    NOT NULL
);

-- The ledger is append-only. A trigger does not stop someone with write
-- access to the file (verification does); it stops mistakes.
CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries
BEGIN
	SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries
BEGIN
	SELECT RAISE(ABORT, 'ledger entries are append-only');
END;

-- Signed checkpoints: the ledger's size and head hash at a time.
CREATE TABLE checkpoints (
	size INTEGER PRIMARY KEY,
	head TEXT    NOT NULL,
	at   TEXT    NOT NULL,
	sig  TEXT    NOT NULL
);

-- Approval requests. doc is the approval as JSON; status and created_at are
-- copied out of it for the listings.
CREATE TABLE approvals (
	id         TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	doc        BLOB NOT NULL
);
CREATE INDEX approvals_created ON approvals (created_at, id);
CREATE INDEX approvals_status ON approvals (status, created_at, id);

-- Small JSON documents by namespace and key.
CREATE TABLE state (
	ns  TEXT NOT NULL,
	key TEXT NOT NULL,
	doc BLOB NOT NULL,
	PRIMARY KEY (ns, key)
) WITHOUT ROWID;
