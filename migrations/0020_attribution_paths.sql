-- Kept paths (src/exports/daily-totals.ts, docs/benchmarks.md "A window or mode not kept yet").
-- The first report of a window or mode computed its 30 days in 3.1 to 3.5 s at the attribution
-- benchmark's scale, most of it in finding the paths: whether each order is its customer's first,
-- the touchpoints of the period and their customers through identities, and joining them to the
-- orders. None of that depends on the model, the window or the mode. So the keeper keeps, for
-- the days whose cash totals it keeps, each order's path at the longest window there is (90
-- days): crediting another model or window from them is a read, a sort and the models' window
-- functions (1.0 to 1.25 s for the same 30 days).
--
-- attribution_paths: per client, environment, local day of purchase (in the zone of
--   attribution_totals_kept) and order, one row of the order itself (touchpoint_id '': its path
--   may be empty under a shorter window) and one per touchpoint of its customer within 90 days
--   before its purchase, with what crediting reads of the order (time, total, currency, whether
--   it is its customer's first) and of the touchpoint (time, type, channel, ad object). The days
--   kept are attribution_days rows of the totals `paths`, dropped by the same change instants as
--   cash totals: a write reaches the paths of the orders placed from its instant on. Rows are
--   numbered within their day (`n`), as kept credits are (a key of order and touchpoint ids made
--   a larger index: 235 MB against 194 MB for the benchmark's 90 days, 2.2 million rows).

CREATE TABLE attribution_paths (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  day                 date NOT NULL,
  n                   int NOT NULL,
  order_id            text COLLATE "C" NOT NULL,
  touchpoint_id       text COLLATE "C" NOT NULL,
  time_of_purchase    timestamptz NOT NULL,
  purchase_total      numeric,
  currency            text,
  first_order         boolean NOT NULL,
  occurred_at         timestamptz,
  type                text,
  channel             text,
  platform_name       text COLLATE "C",
  platform_account_id text COLLATE "C",
  campaign_id         text COLLATE "C",
  adset_id            text COLLATE "C",
  ad_id               text COLLATE "C",
  PRIMARY KEY (client_id, environment, day, n)
);

-- The keeper keeps the paths of the days it keeps ahead from its next pass on: every client is due.
UPDATE attribution_totals_kept SET kept_ahead_on = NULL;
