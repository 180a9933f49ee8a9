-- Hourly and daily ad spend: two separate collections, never summed together.
-- The key's columns are ordered for the list query (one account, a time range, sorted by
-- period, platform, campaign, adset, ad), so the primary key index serves it directly.

CREATE TABLE spend_hourly (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  platform_account_id text COLLATE "C" NOT NULL,
  period              timestamptz NOT NULL,     -- start of the hour
  platform_name       text COLLATE "C" NOT NULL,
  campaign_id         text COLLATE "C" NOT NULL,
  adset_id            text COLLATE "C" NOT NULL,
  ad_id               text COLLATE "C" NOT NULL,
  campaign_name       text NOT NULL,
  adset_name          text NOT NULL,
  ad_name             text NOT NULL,
  spend               numeric NOT NULL CHECK (spend >= 0),
  spend_currency      text NOT NULL,
  impressions         numeric NOT NULL CHECK (impressions >= 0),
  clicks              numeric NOT NULL CHECK (clicks >= 0),
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, platform_account_id, period, platform_name, campaign_id, adset_id, ad_id)
);

-- The same shape, keyed by day (LIKE copies all but the foreign key).
CREATE TABLE spend_daily (LIKE spend_hourly INCLUDING ALL);
ALTER TABLE spend_daily ALTER COLUMN period TYPE date;
ALTER TABLE spend_daily ADD FOREIGN KEY (client_id) REFERENCES clients (client_id) ON DELETE CASCADE;
