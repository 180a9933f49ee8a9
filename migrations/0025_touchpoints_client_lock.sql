-- A touchpoint's client is checked once per statement, not once per row. The foreign key to
-- clients ran its check for every touchpoint inserted: a SELECT ... FOR KEY SHARE of the same
-- client row a thousand times a batch, 4.5 ms of the 30 ms PostgreSQL spends on a batch of 1,000
-- (docs/benchmarks.md, "Where ingestion's time goes"), on the table written most.
--
-- What the key guaranteed still holds, by the one statement that inserts touchpoints
-- (src/touchpoints/repository.ts): it takes that lock on the client row once, and inserts nothing
-- when the row is gone. Deleting the client row waits for such a statement to commit, and a later
-- one waits for the deletion; the deletion then removes the touchpoints that arrived meanwhile in
-- its own transaction (src/clients/deletion.ts), as the key's cascade did. No touchpoint outlives
-- its client.

ALTER TABLE touchpoints DROP CONSTRAINT touchpoints_client_id_fkey;
