-- An order's client is checked once per statement, not once per row, as a touchpoint's is
-- (migration 0025). The foreign key to clients ran its check for every order upserted: a SELECT
-- ... FOR KEY SHARE of the same client row a thousand times a batch, about 9 ms of the 50 ms
-- PostgreSQL spent inserting a batch of 1,000 (docs/benchmarks.md, "Order ingestion over HTTP").
--
-- What the key guaranteed still holds, by the one statement that inserts orders
-- (src/orders/repository.ts, upsert): it takes that lock on the client row once, and inserts
-- nothing when the row is gone. Deleting the client row waits for such a statement to commit, and
-- a later one waits for the deletion; the deletion then removes the orders that arrived meanwhile
-- in its own transaction (src/clients/deletion.ts), as the key's cascade did, and their aliases
-- go with them by their own key to orders. No order outlives its client.

ALTER TABLE orders DROP CONSTRAINT orders_client_id_fkey;
