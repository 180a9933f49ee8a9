import pg from 'pg';
import { withRetry, type Database, type Queryable } from './database.js';

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
}

export function openPostgres({ connectionString, poolSize }: PostgresOptions): Database {
  const pool = new pg.Pool({ connectionString, max: poolSize, connectionTimeoutMillis: 5_000 });
  // An idle client losing its connection (server restart) must not crash the process; the pool
  // discards it and the next query opens a new one.
  pool.on('error', () => {});

  return {
    kind: 'postgres',
    ...queryable(pool),
    transaction<T>(work: (tx: Queryable) => Promise<T>) {
      return withRetry(async () => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const result = await work(queryable(client));
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      });
    },
    close: () => pool.end(),
  };
}

function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    query: async <R,>(text: string, params?: readonly unknown[]) =>
      (await client.query(text, params as unknown[])).rows as R[],
    async exec(script) {
      await client.query(script);
    },
  };
}
