import fs from 'node:fs/promises';
import { hasCitus, placeTables } from './citus.js';
import type { Database } from './database.js';
import { splitStatements } from './sql-script.js';

const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
/** Arbitrary constant: the advisory lock that serialises processes migrating at the same time. */
const MIGRATION_LOCK = 7_320_411;

export interface MigrationResult {
  applied: string[];
}

/**
 * Applies every file of migrations/ not yet recorded in schema_migrations, in name order, in
 * one transaction. Processes starting together queue on an advisory lock; the first applies
 * the migrations and the others find nothing left to do. On a Citus coordinator, the tables are
 * then placed (distributed, reference or left on the coordinator, src/db/citus.ts), in the same
 * transaction; on plain PostgreSQL and the embedded store nothing more happens.
 */
export async function migrate(db: Database): Promise<MigrationResult> {
  const files = (await fs.readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql')).sort();
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const citus = await hasCitus(tx);
    // Citus refuses a type's DDL (migration 0026's CREATE TYPE) in a transaction that has already
    // run DDL on a distributed table over several connections, as an upgrade applying 0025 and
    // 0026 together would. Migrations so run over one connection per node: slower across many
    // shards, but every upgrade applies.
    if (citus) await tx.query("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = new Set(
      (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((row) => row.version),
    );
    const applied: string[] = [];
    for (const file of files) {
      const version = file.replace(/\.sql$/, '');
      if (done.has(version)) continue;
      // One statement at a time: Citus refuses some DDL of a distributed table sent in a script
      // of several statements ("cannot insert multiple commands into a prepared statement").
      for (const statement of splitStatements(await fs.readFile(new URL(file, MIGRATIONS_DIR), 'utf8'))) await tx.exec(statement);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
      applied.push(version);
    }
    if (citus) await placeTables(tx);
    return { applied };
  });
}
