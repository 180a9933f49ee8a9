-- Exchange rates a client sends (POST /v1/exchange-rates, `tributary import rates`): one rate a
-- pair a day, 1 `base` = `rate` `quote`, for the local day of the client's zone it holds on, as
-- the records it converts are dated. Per client, as every table: a shop may book at its bank's
-- rates rather than a central bank's, and its rates go with it when it is deleted. Inverse and
-- cross rates are derived when read, never stored: a rate sent again changes what they are.

CREATE TABLE exchange_rates (
  client_id   uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment environment NOT NULL,
  base        text COLLATE "C" NOT NULL,
  quote       text COLLATE "C" NOT NULL,
  day         date NOT NULL,
  rate        numeric NOT NULL CHECK (rate > 0),
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (client_id, environment, base, quote, day),
  CHECK (base <> quote)
);
