-- An alias's order is checked by the service, not by a foreign key: aliases are only attached to
-- orders of the same batch, in its transaction, or to orders looked up first, and orders are
-- never deleted. The key's per-row check planned a scan of orders while the table was young
-- and kept that plan (the embedded store never analyses; PostgreSQL only after autovacuum),
-- which cut order ingestion to a third. Aliases still belong to their client.

ALTER TABLE order_aliases DROP CONSTRAINT order_aliases_client_id_environment_order_id_fkey;
ALTER TABLE order_aliases ADD FOREIGN KEY (client_id) REFERENCES clients (client_id) ON DELETE CASCADE;
