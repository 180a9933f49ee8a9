-- Data exports are jobs: created PENDING, claimed by any worker process with a row lock and a
-- lease, and finished as SUCCESS (with files) or ERROR (with the reason in warn). A worker that
-- dies leaves its lease to expire; the job is then claimed again.

CREATE TABLE exports (
  client_id        uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment      text NOT NULL CHECK (environment IN ('production', 'uat')),
  export_id        uuid NOT NULL,
  request          jsonb NOT NULL,
  status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SUCCESS', 'ERROR')),
  files            text[] NOT NULL DEFAULT '{}',
  warn             jsonb NOT NULL DEFAULT '{}',
  attempts         int NOT NULL DEFAULT 0,
  lease_token      uuid,                   -- new at every claim: only its holder may renew or finish
  lease_expires_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz,
  PRIMARY KEY (client_id, environment, export_id)
);

-- Workers look for work across clients, oldest first.
CREATE INDEX exports_pending ON exports (created_at) WHERE status = 'PENDING';

-- Settings the service keeps for itself (the download links' signing key, when not configured).
CREATE TABLE service_settings (
  name  text PRIMARY KEY,
  value text NOT NULL
);

-- The UTC offset of `zone` at instant `ts`, as +HH:MM: how an export labels a local hour.
CREATE FUNCTION utc_offset(ts timestamptz, zone text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$
    SELECT CASE WHEN seconds < 0 THEN '-' ELSE '+' END || to_char(make_interval(secs => abs(seconds)), 'HH24:MI')
      FROM (SELECT extract(epoch FROM (ts AT TIME ZONE zone) - (ts AT TIME ZONE 'UTC')) AS seconds) AS offset_of
  $$;
