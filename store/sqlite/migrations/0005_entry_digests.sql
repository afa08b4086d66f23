-- Entries keep their digests as the 32 bytes they are rather than as 64
-- hex digits, and no longer store prev: an entry's prev is the hash of
-- the entry before it (32 zero bytes before the first), which readers
-- take from that row. The chain, the entries' canonical JSON and the
-- export are unchanged: readers give every digest back as lowercase hex.
--
-- A digest that is not 64 lowercase hex digits (changed outside custody)
-- is kept as the text it is, so that verification still reports it. A
-- stored prev that was not the hash before it is not kept: an entry's
-- hash covers the prev it was sealed with, so an entry sealed over
-- another prev fails verification as changed; a prev changed alone,
-- under a hash sealed over the true one, was a bad copy and is dropped.
--
-- The old table's pages are left free in the file, and new entries fill
-- them before it grows; VACUUM, with custody stopped, gives them back.
CREATE TABLE entries_bytes (
	seq         INTEGER PRIMARY KEY,
	at          TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	trace       TEXT    NOT NULL,
	actor       TEXT    NOT NULL,
	refs        TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	body_sha256 BLOB    NOT NULL,
	hash        BLOB    NOT NULL
);
INSERT INTO entries_bytes (seq, at, kind, trace, actor, refs, body, body_sha256, hash)
SELECT seq, at, kind, trace, actor, refs, body,
	CASE WHEN typeof(body_sha256) = 'text' AND length(body_sha256) = 64 AND body_sha256 NOT GLOB '*[^0-9a-f]*'
		THEN unhex(body_sha256) ELSE body_sha256 END,
	CASE WHEN typeof(hash) = 'text' AND length(hash) = 64 AND hash NOT GLOB '*[^0-9a-f]*'
		THEN unhex(hash) ELSE hash END
FROM entries ORDER BY seq;
DROP TABLE entries;
ALTER TABLE entries_bytes RENAME TO entries;

-- The ledger is append-only, as before.
CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries
BEGIN
	SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries
BEGIN
	SELECT RAISE(ABORT, 'ledger entries are append-only');
END;
