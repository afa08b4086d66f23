-- Keyed lookups of approvals by trace and action digest, so that the
-- gateway finds the approvals of an action without searching the ledger.
-- digest is the action the request is bound to now (an operator's edit
-- rebinds it), requested_digest the one it was asked for; both are copied
-- out of doc.
ALTER TABLE approvals ADD COLUMN trace TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN digest TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN requested_digest TEXT NOT NULL DEFAULT '';
UPDATE approvals SET
	trace = coalesce(json_extract(doc, '$.trace_id'), ''),
	digest = coalesce(json_extract(doc, '$.action_digest'), ''),
	requested_digest = coalesce(json_extract(doc, '$.action_digest'), '');
CREATE INDEX approvals_digest ON approvals (trace, digest);
CREATE INDEX approvals_requested_digest ON approvals (trace, requested_digest);
