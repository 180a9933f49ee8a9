-- A touchpoint sent again changes the paths of the orders around its earlier time as well as its
-- new one, and a write notes the earliest of them (src/attribution/changes.ts). The earlier time
-- is the row's as the upsert replaces it: only the upsert itself sees that row version (locked,
-- and the latest, whatever a concurrent request wrote), and PostgreSQL's RETURNING shows the new
-- row alone. So the upsert keeps it in the row, and returns it. NULL for a touchpoint never
-- replaced. Read from the statement's snapshot instead, it could be the time of an older version
-- than the one replaced, and on Citus, which runs the upsert and the rest of the statement apart,
-- it was the new version's.

ALTER TABLE touchpoints ADD COLUMN replaced_occurred_at timestamptz;
