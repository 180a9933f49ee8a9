-- Late touchpoints and identity links note whose they are, not only when (src/attribution/changes.ts).
-- A change noted as an instant makes every kept day from it on stale (migration 0021): one visit
-- sent 15 days late had a report compute 15 days of credits and visits from the touchpoints (4.8 s
-- at the attribution benchmark's scale), though the visitor was anonymous and in no order's path.
-- What a touchpoint changes depends on whom its visitor is linked to, which only a reader after
-- both writes committed can tell: each such write notes its visitor (or customer) here, and the
-- report that marks kept days stale resolves the row to the orders and visit days it may change.
--
-- One row per visitor_id and customer_id as the touchpoint carries them ('' for none; a link:
-- its visitor and ''): a touchpoint of a visitor and a link of that visitor write the same row,
-- so that the later of two concurrent writes waits for the earlier and a report sees both or
-- neither. earliest and latest: the noted touchpoints' times (NULL for a link alone); linked: 0
-- none, 1 a new link to a customer, 2 a link changed or made through an order.

CREATE TABLE attribution_change_keys (
  client_id   uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('production', 'uat')),
  visitor_id  text NOT NULL,
  customer_id text NOT NULL,
  earliest    timestamptz,
  latest      timestamptz,
  linked      smallint NOT NULL,
  PRIMARY KEY (client_id, environment, visitor_id, customer_id)
);
