import pg from 'pg';
import { readThroughCursor, stoppingOn, withRetry, type Database, type Listening, type Queryable, type TransactionOptions } from './database.js';

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  /** Longest time one statement may run (unset: no limit). */
  queryTimeoutMs?: number;
}

/** How much longer than the statement's limit the driver waits for an answer before it counts the database as unreachable. */
const UNREACHABLE_AFTER_LIMIT_MS = 5_000;

/**
 * How often the database checks, while a statement runs, that the connection it came from is
 * still open (client_connection_check_interval, PostgreSQL 14 and later): a process that stopped
 * without cancelling its statements (killed, or past its shutdown grace) leaves none running
 * longer than this.
 */
const CONNECTION_CHECK_MS = 1_000;

export function openPostgres({ connectionString, poolSize, queryTimeoutMs }: PostgresOptions): Database {
  // The database stops a statement past the limit itself (statement_timeout, set as each
  // connection opens): a statement the service gave up on must not keep running, holding its
  // locks and its connection. The driver's own timeout, a little later, is for a network
  // partition, which loses packets instead of refusing them: without it a statement sent on an
  // open connection would wait as long as TCP does (many minutes), holding its request and its
  // pool slot.
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    statement_timeout: queryTimeoutMs,
    query_timeout: queryTimeoutMs && queryTimeoutMs + UNREACHABLE_AFTER_LIMIT_MS,
    options: `-c client_connection_check_interval=${CONNECTION_CHECK_MS}`,
    keepAlive: true,
  });
  // An idle client losing its connection (server restart) must not crash the process; the pool
  // discards it and the next query opens a new one.
  pool.on('error', () => {});

  const direct = queryable(pool);
  async function inTransaction<T>(work: (tx: Queryable) => Promise<T>, begin = 'BEGIN', { signal }: TransactionOptions = {}): Promise<T> {
    signal?.throwIfAborted();
    const client = await pool.connect();
    // A connection lost mid-transaction makes the pending query fail; without a listener the
    // client's 'error' event would also crash the process.
    const ignore = () => {};
    client.on('error', ignore);
    let broken: Error | undefined;
    // A cancel still on its way would stop the statement after it (the commit or rollback, or the
    // next one of whoever takes the connection): it is awaited before any.
    let cancelling: Promise<void> | undefined;
    const cancel = () => (cancelling = cancelStatementOf(client));
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      await client.query(begin);
      const result = await work(stoppingOn(queryable(client), signal));
      signal?.removeEventListener('abort', cancel);
      await cancelling;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await cancelling;
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw signal?.aborted ? signal.reason : error;
    } finally {
      signal?.removeEventListener('abort', cancel);
      client.off('error', ignore);
      client.release(broken); // a client that could not roll back is discarded, not reused
    }
  }

  /**
   * Asks the database to stop the statement running on `client`'s connection, from a connection
   * of its own (the pool's may all be taken); one already finished is left alone, as PostgreSQL
   * ignores a cancel that reaches an idle connection.
   */
  async function cancelStatementOf(client: pg.PoolClient): Promise<void> {
    const { processID } = client as unknown as { processID: number };
    const canceller = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000 });
    canceller.on('error', () => {});
    try {
      await canceller.connect();
      // Typed: Citus adds pg_cancel_backend(bigint), for its cluster-wide process ids, and an
      // untyped parameter then matches neither.
      await canceller.query('SELECT pg_cancel_backend($1::int)', [processID]);
    } catch {
      // Unreachable: the statement ends at its time limit, or when the database notices the connection is gone.
    } finally {
      await canceller.end().catch(() => {});
    }
  }

  // The first transaction exports its snapshot, and each of the others, on a connection of its
  // own taken while the earlier ones are held, takes it before its first statement.
  function readingTogether<T>(count: number, work: (txs: Queryable[]) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return inTransaction(async (first) => {
      if (count < 2) return work([first]);
      const [{ snapshot } = { snapshot: '' }] = await first.query<{ snapshot: string }>('SELECT pg_export_snapshot() AS snapshot');
      // An identifier the server made (SET cannot take a parameter): checked all the same.
      if (!/^[0-9A-F-]+$/i.test(snapshot)) throw new Error(`Unexpected snapshot identifier ${snapshot}`);
      const joined = (txs: Queryable[]): Promise<T> =>
        txs.length === count
          ? work(txs)
          : inTransaction(async (tx) => {
              await tx.query(`SET TRANSACTION SNAPSHOT '${snapshot}'`);
              return joined([...txs, tx]);
            }, READ_TOGETHER, options);
      return joined([first]);
    }, READ_TOGETHER, options);
  }

  return {
    kind: 'postgres',
    // One statement is atomic, so one that lost a race can simply run again.
    query: (text, params) => withRetry(() => direct.query(text, params)),
    exec: direct.exec,
    transaction: (work, options) => withRetry(() => inTransaction(work, 'BEGIN', options)),
    // The cursor lives in a transaction on one connection of the pool; other connections go on.
    eachBatch: (sql, params, batchSize, onBatch) =>
      inTransaction((tx) => readThroughCursor(tx, { sql, params, batchSize, hold: false }, onBatch)),
    readingTogether,
    listen: (channel, onNotification) => listen(connectionString, channel, onNotification),
    close: () => pool.end(),
  };
}

/** A snapshot can be shared only by transactions of at least REPEATABLE READ. */
const READ_TOGETHER = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

/** Waits between attempts to listen again, doubling from the first to the last. */
const RELISTEN_FIRST_MS = 500;
const RELISTEN_MAX_MS = 30_000;

async function listen(connectionString: string, channel: string, onNotification: () => void): Promise<Listening> {
  let current: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let delayMs = RELISTEN_FIRST_MS;
  let closed = false;

  function retryLater() {
    if (closed) return;
    retry = setTimeout(connect, delayMs).unref();
    delayMs = Math.min(delayMs * 2, RELISTEN_MAX_MS);
  }

  function lost(client: pg.Client) {
    if (client !== current) return;
    current = undefined;
    client.end().catch(() => {});
    retryLater();
  }

  async function connect() {
    // TCP keepalive finds a connection lost without a word (a partition) in minutes; until
    // then the poll of whoever listens is the fallback.
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000, keepAlive: true, keepAliveInitialDelayMillis: 30_000 });
    client.on('error', () => lost(client));
    client.on('end', () => lost(client));
    client.on('notification', (message) => {
      if (message.channel === channel) onNotification();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch {
      client.end().catch(() => {});
      retryLater();
      return;
    }
    if (closed) {
      await client.end().catch(() => {});
      return;
    }
    current = client;
    delayMs = RELISTEN_FIRST_MS;
    onNotification();
  }

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const client = current;
      current = undefined;
      await client?.end().catch(() => {});
    },
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
