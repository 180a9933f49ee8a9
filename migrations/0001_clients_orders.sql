-- Every table is keyed by client first, so the schema can be distributed by client_id
-- (Citus) without a rewrite. Orders and aliases are kept per environment: production data
-- and UAT data never mix. Identifiers compare byte by byte (COLLATE "C"): their order does
-- not depend on the server's locale, and comparing them is cheaper.

CREATE FUNCTION utc_iso(ts timestamptz) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

CREATE TABLE clients (
  client_id  uuid PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  client_id  uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  key_id     uuid NOT NULL,
  key_hash   bytea NOT NULL,          -- SHA-256 of the key; the key itself is never stored
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  PRIMARY KEY (client_id, key_id)
);

CREATE TABLE orders (
  client_id        uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment      text NOT NULL CHECK (environment IN ('production', 'uat')),
  order_id         text COLLATE "C" NOT NULL,
  time_of_purchase timestamptz NOT NULL,
  body             jsonb NOT NULL,     -- the order as sent, less alternate_order_ids
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, order_id)
);

CREATE INDEX orders_by_time_of_purchase ON orders (client_id, environment, time_of_purchase, order_id);

CREATE TABLE order_aliases (
  client_id   uuid NOT NULL,
  environment text NOT NULL,
  alias_type  text COLLATE "C" NOT NULL,
  alias_id    text COLLATE "C" NOT NULL,
  order_id    text COLLATE "C" NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (client_id, environment, alias_type, alias_id),
  FOREIGN KEY (client_id, environment, order_id) REFERENCES orders ON DELETE CASCADE
);

CREATE INDEX order_aliases_by_order ON order_aliases (client_id, environment, order_id);
