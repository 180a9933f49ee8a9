-- Export files are deleted once their links have expired, plus EXPORT_FILE_GRACE_SECONDS
-- (src/exports/retention.ts): files_deleted_at says when, and the result endpoint then says the
-- files expired instead of handing out links to nothing. The sweep leases an export as the
-- export worker does (lease_token, lease_expires_at, free again once the lease runs out), so
-- that several processes share the sweep and one that dies mid-way leaves its exports to the
-- next. Its candidates come from the index below: the successful exports whose files are still
-- there, by when their links expire.

ALTER TABLE exports ADD COLUMN files_deleted_at timestamptz;

CREATE INDEX exports_files_kept ON exports (links_expire_at) WHERE status = 'SUCCESS' AND files_deleted_at IS NULL;
