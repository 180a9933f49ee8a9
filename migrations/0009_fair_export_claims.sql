-- Export claims are fair across clients (src/exports/jobs.ts, claim): a claim groups the pending
-- jobs by client, counts each client's running ones, takes the oldest free job of one client,
-- and prefers the client whose last export finished longest ago. Pending jobs by client serve
-- the first three; finished ones by client find a client's last finish without reading its
-- whole export history. No claim takes the oldest job across all clients any more.

CREATE INDEX exports_pending_by_client ON exports (client_id, created_at) WHERE status = 'PENDING';
CREATE INDEX exports_finished_by_client ON exports (client_id, finished_at) WHERE finished_at IS NOT NULL;
DROP INDEX exports_pending;
