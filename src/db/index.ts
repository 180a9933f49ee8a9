import path from 'node:path';
import type { Config } from '../config.js';
import type { Database } from './database.js';
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
