import { readThroughCursor, type Database } from '../db/index.js';
import type { Tenant } from '../auth/tenant.js';
import { lockWaitAtMost } from '../db/limits.js';
import type { TenantShare } from '../db/tenant-share.js';
import { markChangedDaysStale, keepMissingDays, type KeptTotalsAsked } from '../exports/daily-totals.js';
import { inRowsTransaction } from '../exports/rows.js';

/** Rows a cursor fetch brings: what a report holds as objects at once. */
const BATCH = 1000;

export type ReportRepository = ReturnType<typeof createReportRepository>;

export function createReportRepository(db: Database, { lockWaitMs, share }: { lockWaitMs: number; share: TenantShare }) {
  const waitingAtMost = lockWaitAtMost(lockWaitMs);
  return {
    /**
     * The rows of a report's statement (planRowsSql, which names the tenant), run with the
     * settings an export's run has, a batch at a time; with `keptTotals`, the statement reads
     * kept daily totals, which are brought up to date first, waiting at most `lockWaitMs` for
     * other work that holds them (the keeper computing days, another report: a lock time limit,
     * which the API answers 503). A transaction that fails for a deadlock or a serialization
     * failure is run again from the start: `startReading` is called at the start of each run,
     * and gives the handler of that run's batches. Within the tenant's share of the database;
     * given up, its statement cancelled, when `signal` aborts.
     */
    eachBatch(
      tenant: Tenant,
      { sql, params, keptTotals, signal }: { sql: string; params: readonly unknown[]; keptTotals?: KeptTotalsAsked; signal?: AbortSignal },
      startReading: () => (rows: Record<string, unknown>[]) => Promise<void>,
    ): Promise<void> {
      return share.run(tenant, async () => {
        if (keptTotals) await markChangedDaysStale(db, keptTotals, { settle: waitingAtMost, signal });
        await inRowsTransaction(db, async (tx) => {
          const onBatch = startReading();
          if (keptTotals) {
            await waitingAtMost(tx);
            await keepMissingDays(tx, keptTotals);
          }
          await readThroughCursor(tx, { sql, params, batchSize: BATCH, hold: false }, onBatch);
        }, signal);
      });
    },
  };
}

/** The UAT test credentials keep nothing: their reports have no rows. */
export const standInReports: ReportRepository = {
  eachBatch: async () => {},
};
