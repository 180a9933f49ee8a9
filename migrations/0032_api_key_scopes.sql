-- What an API key may do (src/auth/authenticate.ts): `write` (the keys made before, and the
-- default) sends and reads data; `read` reads it (reports, exports, explanations, the dashboard)
-- and is refused everything that writes, so that a marketer or a dashboard can be given a key
-- that cannot change the shop's data. Set when the key is made (admin API), never changed: a key
-- of another scope is a new key.

ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write'));
