-- Kept paths by reach (src/attribution/paths.ts, keptPaths). A report of a window not kept yet
-- credits its month from the kept paths, which hold each order's touchpoints of up to 90 days
-- before it (migration 0020): a 14-day window reads a quarter of the month's rows, yet read them
-- all, and on a table of one client PostgreSQL read the whole table to find them (458 ms of the
-- statement's 1.38 s at the attribution benchmark's scale).
--
-- reach_days: how many days before its order's purchase a touchpoint came, rounded up (a
--   touchpoint within a window of n days has at most n); 0 on the order's own row. In the key
--   after the day, and the keeper writes a day's rows in its order, so that the touchpoints
--   within a window are found in the key and lie together on disk (the 14-day window's read:
--   100 ms).
--
-- Kept paths are a cache of the touchpoints and orders: they are dropped rather than rewritten
-- (truncated: a large client's 2.2 million rows deleted one by one would leave as many dead), and
-- the keeper keeps them again at its next pass. Until then days are credited from the
-- touchpoints, as before the keeper first kept them.

TRUNCATE attribution_paths;
DELETE FROM attribution_days WHERE totals = 'paths';
ALTER TABLE attribution_paths ADD COLUMN reach_days int NOT NULL;
ALTER TABLE attribution_paths DROP CONSTRAINT attribution_paths_pkey;
ALTER TABLE attribution_paths ADD PRIMARY KEY (client_id, environment, day, reach_days, n);
UPDATE attribution_totals_kept SET kept_ahead_on = NULL;
