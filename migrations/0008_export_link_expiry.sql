-- When the download links of a finished export stop working, fixed once as it finishes
-- (finished_at + EXPORT_LINK_TTL_SECONDS). Links used to be signed at every poll with an expiry
-- counted from that poll, so polling again renewed a leaked link for ever.
--
-- Exports finished before this migration get finished_at + 7 days, the default TTL: the same rule
-- as every later export (links live as long after the export finished), and no export's links
-- outlive it; an export older than that now answers links that have expired, as one finished
-- afterwards would. A deployment with another TTL applies it from now on.
--
-- A successful export always has an expiry: a process older than this migration that finishes one
-- without it fails the attempt, which a process of this version takes up again (restart every
-- process on the new version).

ALTER TABLE exports ADD COLUMN links_expire_at timestamptz;

UPDATE exports SET links_expire_at = finished_at + interval '7 days' WHERE status = 'SUCCESS';

ALTER TABLE exports ADD CONSTRAINT exports_success_links_expire CHECK (status <> 'SUCCESS' OR links_expire_at IS NOT NULL);
