-- The Merkle tree over the entries (package tlog): its complete nodes in
-- post-order, so that the list only grows at its end. Derived from the
-- entries: a missing tail is rebuilt at the next checkpoint.
CREATE TABLE tlog_nodes (
	pos  INTEGER PRIMARY KEY,
	hash BLOB    NOT NULL
);

-- Each signed checkpoint again as a C2SP tlog-checkpoint signed note:
-- origin, size, root hash and the chain head, signed with the ledger's key.
CREATE TABLE tlog_checkpoints (
	size INTEGER PRIMARY KEY,
	note BLOB    NOT NULL
);

-- Witnesses' cosignatures of those notes: one signature line each.
CREATE TABLE tlog_cosignatures (
	size    INTEGER NOT NULL,
	witness TEXT    NOT NULL,
	line    TEXT    NOT NULL,
	PRIMARY KEY (size, witness)
) WITHOUT ROWID;
