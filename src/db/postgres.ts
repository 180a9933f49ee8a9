import pg from 'pg';
import { readThroughCursor, withRetry, type Database, type Queryable } from './database.js';

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  /** Longest wait for one statement's answer, past which the database counts as unreachable (unset: no limit). */
  queryTimeoutMs?: number;
}

export function openPostgres({ connectionString, poolSize, queryTimeoutMs }: PostgresOptions): Database {
  // A network partition loses packets instead of refusing them: without a timeout a statement
  // sent on an open connection would wait as long as TCP does (many minutes), holding its
  // request and its pool slot.
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
  });
  // An idle client losing its connection (server restart) must not crash the process; the pool
  // discards it and the next query opens a new one.
  pool.on('error', () => {});

  const direct = queryable(pool);
  async function inTransaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    // A connection lost mid-transaction makes the pending query fail; without a listener the
    // client's 'error' event would also crash the process.
    const ignore = () => {};
    client.on('error', ignore);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(queryable(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(broken); // a client that could not roll back is discarded, not reused
    }
  }

  return {
    kind: 'postgres',
    // One statement is atomic, so one that lost a race can simply run again.
    query: (text, params) => withRetry(() => direct.query(text, params)),
    exec: direct.exec,
    transaction: (work) => withRetry(() => inTransaction(work)),
    // The cursor lives in a transaction on one connection of the pool; other connections go on.
    eachBatch: (sql, params, batchSize, onBatch) =>
      inTransaction((tx) => readThroughCursor(tx, { sql, params, batchSize, hold: false }, onBatch)),
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
