-- Touchpoints (a visit to the shop, or an ad view a platform reported) and identities (which
-- customer an anonymous visitor is), the input of multi-touch attribution.
--
-- A touchpoint is stored with what is derived from it at write time (platform_name, campaign_id,
-- adset_id, ad_id, channel: src/touchpoints/derive.ts) in plain columns, since the attribution
-- engine groups by them; and with the UTMs and click ids it was read with, landing_url's
-- included. Keyed client first, like every table. Indexes: the upsert's key; a visitor's and a
-- customer's touchpoints by time (the list endpoint, and an order's path); every touchpoint of
-- a period (the attribution engine's scan, and the list by time alone).
--
-- An identity links a visitor to a customer, directly (customer_id) or through an order
-- (order_id), never both. An order link is resolved when read, by a join on orders' key, so it
-- holds before its order arrives and follows the order's customer_id when the order changes.
-- The customer of a touchpoint is then, in SQL:
--   coalesce(t.customer_id, i.customer_id, o.customer_id)
--   FROM touchpoints t
--   LEFT JOIN identities i ON (i.client_id, i.environment, i.visitor_id) = (t.client_id, t.environment, t.visitor_id)
--   LEFT JOIN orders o ON (o.client_id, o.environment, o.order_id) = (i.client_id, i.environment, i.order_id)
--
-- A client's source mapping (utm_source -> platform_name, such as {"fb": "meta"}) is kept with
-- the client; it applies to touchpoints written after it is set.

ALTER TABLE clients ADD COLUMN source_platforms jsonb NOT NULL DEFAULT '{}';

CREATE TABLE touchpoints (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  touchpoint_id       text COLLATE "C" NOT NULL,
  occurred_at         timestamptz NOT NULL,
  type                text NOT NULL CHECK (type IN ('visit', 'view')),
  visitor_id          text COLLATE "C",
  customer_id         text,             -- the collation of orders.customer_id, which it is joined with
  landing_url         text,
  referrer            text,
  utm_source          text,
  utm_medium          text,
  utm_campaign        text,
  utm_term            text,
  utm_content         text,
  click_ids           jsonb NOT NULL,   -- {"gclid": "…", …}: those of the fields and of landing_url's query
  -- Derived ("" when nothing names one).
  platform_name       text COLLATE "C" NOT NULL,
  platform_account_id text COLLATE "C" NOT NULL,
  campaign_id         text COLLATE "C" NOT NULL,
  adset_id            text COLLATE "C" NOT NULL,
  ad_id               text COLLATE "C" NOT NULL,
  channel             text NOT NULL CHECK (channel IN ('paid', 'email', 'sms', 'organic_social', 'organic_search', 'referral', 'direct', 'other')),
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, touchpoint_id),
  CHECK (visitor_id IS NOT NULL OR customer_id IS NOT NULL)
);

CREATE INDEX touchpoints_by_time ON touchpoints (client_id, environment, occurred_at, touchpoint_id);
CREATE INDEX touchpoints_by_visitor ON touchpoints (client_id, environment, visitor_id, occurred_at) WHERE visitor_id IS NOT NULL;
CREATE INDEX touchpoints_by_customer ON touchpoints (client_id, environment, customer_id, occurred_at) WHERE customer_id IS NOT NULL;

CREATE TABLE identities (
  client_id   uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('production', 'uat')),
  visitor_id  text COLLATE "C" NOT NULL,
  customer_id text,
  order_id    text COLLATE "C",
  linked_at   timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, visitor_id),
  CHECK ((customer_id IS NULL) <> (order_id IS NULL))
);

-- A customer's visitors: those linked directly, and those linked through one of its orders.
CREATE INDEX identities_by_customer ON identities (client_id, environment, customer_id) WHERE customer_id IS NOT NULL;
CREATE INDEX identities_by_order ON identities (client_id, environment, order_id) WHERE order_id IS NOT NULL;
