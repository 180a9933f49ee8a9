-- Exports and reports read one client's spend of a period across all its accounts
-- (src/exports/rows.ts). The spend tables' keys lead with the account, for the list endpoint
-- (migration 0002), so that read scanned all of the client's spend, every period of it, or on a
-- store of one big client the whole table: at the attribution benchmark's scale (878,400 hourly
-- records) 30 days of spend took a parallel scan of 18,700 pages for 72,000 rows, a third of the
-- dashboard's report once attribution comes from kept daily totals (migration 0015). These
-- indexes read the period's records alone. They cost a spend write one more index entry a record.
--
-- Building them locks writes of spend for as long as they take: a store with many millions of
-- spend records should apply this at a quiet hour (`npx tributary migrate`).

CREATE INDEX spend_hourly_by_period ON spend_hourly (client_id, environment, period);
CREATE INDEX spend_daily_by_period ON spend_daily (client_id, environment, period);
