-- An export's attribution reads the touchpoints of its period in time order, each with its ad
-- object and whom it belongs to (src/attribution/paths.ts, the period's paths; the visits of
-- src/exports/attributed-rows.ts), and asks of each visitor whether it visited before the period.
-- Touchpoints are stored in the order they arrive, which is not their time order when a shop
-- sends its history, so reading them through touchpoints_by_time cost a random heap read each
-- (bench/attribution.ts: 3.5 s of the 30-day dashboard query only to read its 410,000 visits).
-- With the columns those reads need carried in the indexes, they are index-only scans once VACUUM
-- has marked the pages all-visible (autovacuum does, after inserts too): 0.3 s. The price is
-- index size and write time: touchpoints_by_time holds about 130 bytes a touchpoint instead of 60.

DROP INDEX touchpoints_by_time;
CREATE INDEX touchpoints_by_time ON touchpoints (client_id, environment, occurred_at, touchpoint_id)
  INCLUDE (type, visitor_id, customer_id, channel, platform_name, platform_account_id, campaign_id, adset_id, ad_id);

DROP INDEX touchpoints_by_visitor;
CREATE INDEX touchpoints_by_visitor ON touchpoints (client_id, environment, visitor_id, occurred_at) INCLUDE (type) WHERE visitor_id IS NOT NULL;
