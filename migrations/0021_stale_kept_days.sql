-- Kept days a change made stale are marked, no longer deleted (src/exports/daily-totals.ts,
-- dropChangedDays). The keeper computed again only the days it found the change noted for; when
-- a report came first, it took the change and dropped the days of every totals key, but computed
-- only its own: the other models' and windows' days and their kept paths stayed missing until the
-- keeper's next daily pass, and each of their first reports credited them from the touchpoints
-- (5 s for another window after a late write 15 days back, at the attribution benchmark's scale).
-- A stale day counts as missing to reports; the keeper computes again the stale cash days among
-- its days, whoever took the change. Their rows are replaced when the day is computed again, not
-- deleted when it is marked: the report that marks them no longer deletes hundreds of thousands of
-- kept path rows before it can answer.

ALTER TABLE attribution_days ADD COLUMN stale boolean NOT NULL DEFAULT false;

-- The keeper looks for clients with stale days every pass, across clients.
CREATE INDEX attribution_days_stale ON attribution_days (client_id, environment) WHERE stale;
