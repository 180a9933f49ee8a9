-- touchpoints_by_time is keyed by the time alone, without the touchpoint_id after it. The id made
-- each entry about a third longer, on the index that every touchpoint is inserted into at a
-- random place (a history sent late, or out of order): the upsert took 27.2 µs a touchpoint with
-- it and 24.9 µs without, batches interleaved on one connection (docs/benchmarks.md, "Where
-- ingestion's time goes").
--
-- Nothing reads the id from this index: the period's touchpoints are read from the heap (migration
-- 0012). The list by time alone, ordered by (occurred_at, touchpoint_id), reads the index in time
-- order and sorts the touchpoints of each instant by id as it goes (an incremental sort, which
-- stops at the page asked; both stores plan it so).
--
-- As with 0012, the table is locked while the index builds: a store with many millions of
-- touchpoints should apply this at a quiet hour (`npx tributary migrate`).

DROP INDEX touchpoints_by_time;
CREATE INDEX touchpoints_by_time ON touchpoints (client_id, environment, occurred_at);
