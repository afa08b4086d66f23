-- Keyed lookups of approvals by requester and action digest: an approval
-- belongs to the agent that asked for it and serves any of its traces (a
-- client that restarts starts a new one). requester is copied out of doc.
ALTER TABLE approvals ADD COLUMN requester TEXT NOT NULL DEFAULT '';
UPDATE approvals SET requester = coalesce(json_extract(doc, '$.requester'), '');
CREATE INDEX approvals_requester_digest ON approvals (requester, digest);
CREATE INDEX approvals_requester_requested_digest ON approvals (requester, requested_digest);
