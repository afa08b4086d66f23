-- The evidence ledger. Every row is one sealed entry; body holds the exact
-- bytes as received, refs the entry's refs as a JSON object.
CREATE TABLE entries (
	seq         bigint PRIMARY KEY,
	at          text   NOT NULL,
	kind        text   NOT NULL,
	trace       text   NOT NULL,
	actor       text   NOT NULL,
	refs        text   NOT NULL,
	body        bytea  NOT NULL,
	body_sha256 text   NOT NULL,
	prev        text   NOT NULL,
	hash        text   NOT NULL
);

-- The ledger is append-only. A trigger does not stop someone with the
-- rights to drop it (verification does); it stops mistakes.
CREATE FUNCTION custody_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'ledger entries are append-only';
END;
$$;
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
	FOR EACH ROW EXECUTE FUNCTION custody_append_only();

-- The chain's head: one row, which every instance locks to append, so that
-- appends from every instance are totally ordered and the chain never forks.
-- checkpoint_size is the size the latest checkpoint covers; pending_since
-- when the oldest entry it does not cover was committed.
CREATE TABLE ledger_head (
	id              integer     PRIMARY KEY CHECK (id = 1),
	seq             bigint      NOT NULL,
	hash            text        NOT NULL,
	checkpoint_size bigint      NOT NULL,
	pending_since   timestamptz
);
INSERT INTO ledger_head (id, seq, hash, checkpoint_size) VALUES (1, 0, '', 0);

-- The public half of the key every instance signs checkpoints with: an
-- instance given another key refuses to start.
CREATE TABLE signing_key (
	id         integer PRIMARY KEY CHECK (id = 1),
	public_key text    NOT NULL
);

-- Signed checkpoints: the ledger's size and head hash at a time.
CREATE TABLE checkpoints (
	size bigint PRIMARY KEY,
	head text   NOT NULL,
	at   text   NOT NULL,
	sig  text   NOT NULL
);

-- Approval requests. doc is the approval as JSON as last written whole;
-- status and consumed_seq are kept beside it, so that a use is one
-- conditional update, and override doc's. digest is the action the request
-- is bound to now (an operator's edit rebinds it), requested_digest the one
-- it was asked for.
CREATE TABLE approvals (
	id               text        PRIMARY KEY,
	status           text        NOT NULL,
	consumed_seq     bigint      NOT NULL,
	created_at       timestamptz NOT NULL,
	trace            text        NOT NULL,
	digest           text        NOT NULL,
	requested_digest text        NOT NULL,
	doc              bytea       NOT NULL
);
CREATE INDEX approvals_created ON approvals (created_at, id);
CREATE INDEX approvals_status ON approvals (status, created_at, id);
CREATE INDEX approvals_digest ON approvals (trace, digest);
CREATE INDEX approvals_requested_digest ON approvals (trace, requested_digest);

-- Small JSON documents by namespace and key, as the exact bytes written.
CREATE TABLE state (
	ns  text  NOT NULL,
	key text  NOT NULL,
	doc bytea NOT NULL,
	PRIMARY KEY (ns, key)
);
