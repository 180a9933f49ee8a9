import { isRetryable } from './errors.js';

export type Row = Record<string, unknown>;

/** Something SQL can be sent to: the database itself, or one open transaction. */
export interface Queryable {
  query<R = Row>(text: string, params?: readonly unknown[]): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

/**
 * The one data-access seam of the service. PostgreSQL and embedded PGlite both implement it
 * and run the same SQL. Values crossing it keep the drivers' shared conventions: `numeric` and
 * `bigint` are cast in SQL where a number is wanted, `json` arrives parsed, `timestamptz` as Date.
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `work` in one transaction, committed when it resolves and rolled back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Reads the rows of `sql` through a cursor, `batchSize` rows at a time, each batch handed to
   * `onBatch` and awaited before the next is fetched: memory holds one batch however many rows
   * there are. Never run again on a lost race, since batches may already have been used.
   */
  eachBatch<R = Row>(sql: string, params: readonly unknown[], batchSize: number, onBatch: (rows: R[]) => Promise<void>): Promise<void>;
  /**
   * Runs `work` with up to `count` read-only transactions, each on a connection of its own, that
   * all see one snapshot of the data: statements split among them run side by side (on as many
   * of the database's cores) and read the same state. PGlite has one connection: one transaction.
   * Committed when `work` resolves, rolled back when it throws; never run again.
   */
  readingTogether<T>(count: number, work: (txs: Queryable[]) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Calls `onNotification` at every `NOTIFY <channel>` committed by any connection to the
   * database (`channel` is a lowercase identifier of the code, never input). On PostgreSQL it
   * listens on a connection of its own, outside the pool, opened again whenever it is lost;
   * `onNotification` is called once more each time it is back, for what was sent meanwhile.
   * Resolves once listening, or once the first attempt failed and the next is scheduled.
   */
  listen(channel: string, onNotification: () => void): Promise<Listening>;
  close(): Promise<void>;
}

export interface TransactionOptions {
  /**
   * Gives the transaction up when it aborts (the request it serves was abandoned, its export
   * attempt stopped): a statement running then is cancelled in the database (PostgreSQL; PGlite
   * cannot stop a statement it has begun, and lets it finish), no statement is sent after it, and
   * the transaction is rolled back with the abort's reason.
   */
  signal?: AbortSignal;
}

/** `q`, whose statements are refused once `signal` has aborted. */
export function stoppingOn(q: Queryable, signal: AbortSignal | undefined): Queryable {
  if (!signal) return q;
  return {
    query: <R,>(text: string, params?: readonly unknown[]) => (signal.aborted ? Promise.reject(signal.reason as Error) : q.query<R>(text, params)),
    exec: (script) => (signal.aborted ? Promise.reject(signal.reason as Error) : q.exec(script)),
  };
}

export interface Listening {
  /** Stops listening (and closes the connection it had). */
  close(): Promise<void>;
}

let cursorsDeclared = 0;

/** A cursor over the rows of a statement, read a FETCH at a time. */
export interface Cursor<R> {
  fetch(count: number): Promise<R[]>;
  close(): Promise<void>;
}

/**
 * Declares a cursor of `q` over the rows of `sql`. `hold` declares it WITH HOLD, so that it
 * outlives the statement declaring it and each FETCH is a statement of its own; such a cursor must
 * be closed. Without it the cursor ends with its transaction.
 */
export async function declareCursor<R>(q: Queryable, { sql, params, hold }: { sql: string; params: readonly unknown[]; hold: boolean }): Promise<Cursor<R>> {
  const name = `rows_${++cursorsDeclared}`;
  await q.query(`DECLARE ${name} NO SCROLL CURSOR ${hold ? 'WITH HOLD ' : ''}FOR ${sql}`, params);
  return {
    fetch: (count) => q.query<R>(`FETCH ${count} FROM ${name}`),
    close: async () => void (await q.query(`CLOSE ${name}`)),
  };
}

/**
 * Reads the rows of `sql` through a cursor of `q`, a batch at a time (`eachBatch`, and reports in
 * their transaction), closing a held cursor whatever happens.
 */
export async function readThroughCursor<R>(
  q: Queryable,
  { sql, params, batchSize, hold }: { sql: string; params: readonly unknown[]; batchSize: number; hold: boolean },
  onBatch: (rows: R[]) => Promise<void>,
): Promise<void> {
  const cursor = await declareCursor<R>(q, { sql, params, hold });
  try {
    for (;;) {
      const rows = await cursor.fetch(batchSize);
      await onBatch(rows);
      if (rows.length < batchSize) break;
    }
  } finally {
    if (hold) await cursor.close().catch(() => {});
  }
}

const MAX_ATTEMPTS = 5;

export async function withRetry<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isRetryable(error) || tries >= MAX_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * tries));
    }
  }
}
