-- Every ledger has an id, created with it and named in every checkpoint
-- (its signed message commits to it). Checkpoints signed before ids keep
-- an empty ledger and verify as they were signed.
ALTER TABLE signing_key ADD COLUMN ledger_id text NOT NULL DEFAULT '';
ALTER TABLE checkpoints ADD COLUMN ledger text NOT NULL DEFAULT '';
