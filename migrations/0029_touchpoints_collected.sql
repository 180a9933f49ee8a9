-- Which touchpoints the public collector (POST /v1/collect, no credentials) wrote. Anyone can send
-- it an event, with any event_id: a touchpoint the API or Segment wrote (authenticated) must not
-- be replaced by one, so the collector's upsert replaces only touchpoints it wrote itself, and an
-- authenticated write may replace either (docs/decisions.md, "What a public event can change").
--
-- Touchpoints stored before this migration count as authenticated ones: a beacon sent again for
-- one of them is dropped, where it used to replace it with the same values.
--
-- A column with a constant default: PostgreSQL records the default, and rewrites no row.

ALTER TABLE touchpoints ADD COLUMN collected boolean NOT NULL DEFAULT false;
