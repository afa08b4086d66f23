-- The ledger's identity and the writer's word on its head.
--   ledger_id  random, made with the ledger; every checkpoint names it.
--   tail       "<seq> <hash> <mac>": the head the last commit of this
--              data directory's writer left, with an HMAC under a key
--              derived from the signing key. It is updated in the same
--              transaction as the entries, so after any crash it names
--              the durable head; an entry appended by anyone without the
--              key leaves it behind.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- The ledger id each checkpoint names; '' in checkpoints signed before
-- ledgers had ids (their signature covers no id).
ALTER TABLE checkpoints ADD COLUMN ledger TEXT NOT NULL DEFAULT '';
