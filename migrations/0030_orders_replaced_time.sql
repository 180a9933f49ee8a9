-- An order sent again changes the attribution of its earlier time of purchase as well as its new
-- one, and the write notes the earliest of them (src/attribution/changes.ts). As for touchpoints
-- (migration 0019), the earlier time is the row's as the upsert replaces it: only the upsert sees
-- that version (locked, and the latest, whatever a concurrent request wrote), and RETURNING
-- shows the new row alone, so the upsert keeps it in the row, and returns it. NULL for an order
-- never replaced.
--
-- It used to be read by a statement of its own before the upsert, locking each of the batch's
-- orders ahead: a thousand index lookups a batch, most of them for orders that did not exist
-- yet (docs/benchmarks.md, "Order ingestion over HTTP").
--
-- A column without a default: PostgreSQL rewrites no row.

ALTER TABLE orders ADD COLUMN replaced_time_of_purchase timestamptz;
