-- Daily totals of attribution, kept for reports (src/exports/daily-totals.ts, docs/benchmarks.md
-- "How the dashboard gets under 2 s"). A dashboard asks the same model, window and accounting
-- mode again and again over days that have mostly not changed; recomputing 30 days of paths
-- from the touchpoints takes seconds at a few million touchpoints. So the credits and visits of
-- each local day asked, at the ad level, are kept, written by the statement exports run, and
-- read back summed to the level and buckets asked.
--
-- attribution_changes: per client and environment, the earliest instant that writes to
--   touchpoints, identities and orders changed since the totals last looked (lowered by each write
--   in the write's transaction; a row per slot, the writing connection's backend pid modulo 8, so
--   that concurrent writes of one client do not queue on one row's lock until they commit). No credit or visit before it can have changed, in
--   cash mode; in accrual mode, none before it minus the window (a credit counts at its
--   touchpoint, up to a window before its order). '-infinity' when that instant is unknown (an
--   erasure: src/attribution/changes.ts).
-- attribution_totals_kept: per client and environment, the zone whose local days are kept; its
--   row is locked while the totals are brought up to date, so that two reports of one client do
--   not compute the same days, nor keep days a change they did not see made stale.
-- attribution_days: which days of which totals are kept (`totals` names a model, window and mode,
--   `linear/30/cash`, or is `visits`, which no model changes), and how far before a change their
--   numbers reach (`lookback_days`: the window in accrual mode, else 0). A kept day may have no rows.
-- attribution_credit_days, attribution_visit_days: the sums, per kept day and ad object (the
--   touchpoint's own account: under the account breakdown, an object's account is read from the
--   period's spend when the totals are read, as exports do), numbered within their day (`n`):
--   ad-object ids together can be longer than an index entry, so they are not the key.

CREATE TABLE attribution_changes (
  client_id   uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('production', 'uat')),
  slot        int NOT NULL,
  earliest    timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, slot)
);

CREATE TABLE attribution_totals_kept (
  client_id   uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('production', 'uat')),
  time_zone   text NOT NULL,
  PRIMARY KEY (client_id, environment)
);

CREATE TABLE attribution_days (
  client_id     uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment   text NOT NULL CHECK (environment IN ('production', 'uat')),
  totals        text COLLATE "C" NOT NULL,
  day           date NOT NULL,
  lookback_days int NOT NULL,
  PRIMARY KEY (client_id, environment, totals, day)
);

CREATE TABLE attribution_credit_days (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  totals              text COLLATE "C" NOT NULL,
  day                 date NOT NULL,
  n                   int NOT NULL,
  platform_name       text COLLATE "C" NOT NULL,
  platform_account_id text COLLATE "C" NOT NULL,
  campaign_id         text COLLATE "C" NOT NULL,
  adset_id            text COLLATE "C" NOT NULL,
  ad_id               text COLLATE "C" NOT NULL,
  currency            text NOT NULL,
  rev                 numeric NOT NULL,
  txns                numeric NOT NULL,
  rev_ft              numeric NOT NULL,
  txns_ft             numeric NOT NULL,
  PRIMARY KEY (client_id, environment, totals, day, n)
);

CREATE TABLE attribution_visit_days (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  day                 date NOT NULL,
  n                   int NOT NULL,
  platform_name       text COLLATE "C" NOT NULL,
  platform_account_id text COLLATE "C" NOT NULL,
  campaign_id         text COLLATE "C" NOT NULL,
  adset_id            text COLLATE "C" NOT NULL,
  ad_id               text COLLATE "C" NOT NULL,
  visits              bigint NOT NULL,
  new_visits          bigint NOT NULL,
  PRIMARY KEY (client_id, environment, day, n)
);
