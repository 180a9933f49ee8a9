import path from 'node:path';
import type { Config } from '../config.js';
import type { Database } from './database.js';
import { migrate, type MigrationResult } from './migrate.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

export { declareCursor, readThroughCursor, type Database, type Queryable } from './database.js';

export function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databasePoolSize'> & Partial<Pick<Config, 'databaseQueryTimeoutMs'>>): Promise<Database> {
  if (config.databaseUrl) {
    return Promise.resolve(
      openPostgres({ connectionString: config.databaseUrl, poolSize: config.databasePoolSize, queryTimeoutMs: config.databaseQueryTimeoutMs }),
    );
  }
  return openPglite(path.join(config.dataDir, 'pglite'));
}

/**
 * Opens the store as openDatabase does, migrated first (with what the migration applied). On
 * PostgreSQL the migration runs on a connection of its own without the statement time limit: an
 * upgrade may rewrite a large table for minutes, and a process starting meanwhile waits for it.
 */
export async function openMigratedDatabase(
  config: Parameters<typeof openDatabase>[0],
): Promise<{ db: Database; applied: MigrationResult['applied'] }> {
  if (!config.databaseUrl) {
    const db = await openDatabase(config);
    return { db, ...(await migrate(db)) };
  }
  const unlimited = await openDatabase({ ...config, databasePoolSize: 1, databaseQueryTimeoutMs: undefined });
  let applied: MigrationResult['applied'];
  try {
    ({ applied } = await migrate(unlimited));
  } finally {
    await unlimited.close();
  }
  return { db: await openDatabase(config), applied };
}
