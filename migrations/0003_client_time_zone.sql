-- The zone a client's exports put their days, weeks and months in (an IANA name).
ALTER TABLE clients ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';
