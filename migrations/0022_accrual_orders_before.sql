-- Kept accrual days count the orders before a local day, and a report adds those from it on
-- (src/exports/daily-totals.ts, creditSources; attributed-rows.ts, the kept days' credits). An
-- accrual day's credits count at touchpoints up to a window before their orders, so every order
-- placed now changed the last window's days: under live orders, each accrual report computed a
-- month of them again (3 s from kept paths at the attribution benchmark's scale, 6.3 s from the
-- touchpoints). Kept from the kept paths of the days before the first day whose paths are not
-- kept (today's, never kept), their credits stay true of those orders; the orders of that day on,
-- a few thousand, are found by index and credited when the days are read, and a write reaching
-- only them leaves the days kept.
--
-- orders_before: that first day, for accrual days kept so; NULL where every order is counted.
-- The days are computed again once the keeper has kept that day's paths.

ALTER TABLE attribution_days ADD COLUMN orders_before date;
