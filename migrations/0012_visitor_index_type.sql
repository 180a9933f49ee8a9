-- An export's visits ask of each visitor whether it visited before the period (src/exports/
-- attributed-rows.ts): one probe of touchpoints_by_visitor per visitor, which read the heap for
-- each touchpoint's type. With the type carried in the index the probe reads the index alone,
-- once VACUUM has marked the pages all-visible (autovacuum does, after inserts too).
--
-- Carrying a touchpoint's ad object, visitor and customer in touchpoints_by_time as well would
-- make the period's scan index-only, but an index entry holds at most 2,704 bytes and those
-- columns together can hold far more (seven ids of up to 255 characters, a customer id of up to
-- 4,096): valid touchpoints would be refused. The period's touchpoints are read from the heap,
-- which holds them in the order they arrive: for touchpoints sent as they happen, time order.
--
-- Migrations run in one transaction, and dropping an index locks its table: reads and writes of
-- touchpoints wait for as long as the new index takes to build. A store with many millions of
-- touchpoints should apply it at a quiet hour (`npx tributary migrate`).

DROP INDEX touchpoints_by_visitor;
CREATE INDEX touchpoints_by_visitor ON touchpoints (client_id, environment, visitor_id, occurred_at) INCLUDE (type) WHERE visitor_id IS NOT NULL;
