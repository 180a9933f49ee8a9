import type { Database } from '../db/index.js';
import { ROWS_TRANSACTION_SETTINGS } from '../exports/rows.js';

export type ReportRepository = ReturnType<typeof createReportRepository>;

export function createReportRepository(db: Database) {
  return {
    /** The rows of a report's statement (planRowsSql, which names the tenant), run with the settings an export's run has. */
    rows({ sql, params }: { sql: string; params: readonly unknown[] }): Promise<Record<string, unknown>[]> {
      return db.transaction(async (tx) => {
        for (const setting of ROWS_TRANSACTION_SETTINGS) await tx.query(setting);
        return tx.query(sql, params);
      });
    },
  };
}

/** The UAT test credentials keep nothing: their reports have no rows. */
export const standInReports: ReportRepository = {
  rows: async () => [],
};
