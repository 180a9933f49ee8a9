import { readThroughCursor, type Database } from '../db/index.js';
import { lockWaitAtMost } from '../db/limits.js';
import { analyzeGrownTables } from '../db/statistics.js';
import { keepMissingDays, markChangedDaysStale, type KeptTotalsAsked } from './daily-totals.js';
import { inRowsTransaction } from './rows.js';

export interface RowsRead {
  /** The rows' statement (exportRowsSql, or one over it), which names the tenant. */
  sql: string;
  params: readonly unknown[];
  /** The kept daily totals the statement reads, brought up to date first. */
  keptTotals?: KeptTotalsAsked;
  /** Rows a fetch brings: what is held as objects at once. */
  batchSize: number;
  /** Longest wait for other work holding the kept totals (the keeper, another report): a lock time limit. */
  lockWaitMs: number;
  /** Gives the read up, its statement cancelled. */
  signal?: AbortSignal;
}

/**
 * Reads the rows of a statement a batch at a time, in one transaction with the settings every
 * read of rows has, once the tables' statistics are up to date; with `keptTotals`, the days it reads are brought up to date first. A
 * transaction that fails for a deadlock or a serialization failure is run again from the start:
 * `startReading` is called at the start of each run, and gives the handler of that run's batches.
 */
export async function readRows(
  db: Database,
  { sql, params, keptTotals, batchSize, lockWaitMs, signal }: RowsRead,
  startReading: () => (rows: Record<string, unknown>[]) => Promise<void>,
): Promise<void> {
  const waitingAtMost = lockWaitAtMost(lockWaitMs);
  await analyzeGrownTables(db);
  if (keptTotals) await markChangedDaysStale(db, keptTotals, { settle: waitingAtMost, signal });
  await inRowsTransaction(
    db,
    async (tx) => {
      const onBatch = startReading();
      if (keptTotals) {
        await waitingAtMost(tx);
        await keepMissingDays(tx, keptTotals);
      }
      await readThroughCursor(tx, { sql, params, batchSize, hold: false }, onBatch);
    },
    signal,
  );
}
