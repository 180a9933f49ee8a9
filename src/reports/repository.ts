import { learnWeights, NOTHING_LEARNT, readRows, usesLearntWeights, type LearntWeights, type RowsPlan, type RowsRead } from '../attribution/index.js';
import type { Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import type { TenantShare } from '../db/tenant-share.js';

/** Rows a cursor fetch brings: what a report holds as objects at once. */
const BATCH = 1000;

export type ReportRepository = ReturnType<typeof createReportRepository>;

export function createReportRepository(db: Database, { lockWaitMs, share }: { lockWaitMs: number; share: TenantShare }) {
  return {
    /**
     * The rows of a report's statement, read as the engine reads rows (readRows): kept daily
     * totals brought up to date first, waiting at most `lockWaitMs` for other work that holds them
     * (a lock time limit, which the API answers 503). Within the tenant's share of the database.
     */
    eachBatch(tenant: Tenant, read: Pick<RowsRead, 'sql' | 'params' | 'keptTotals' | 'signal'>, startReading: Parameters<typeof readRows>[2]): Promise<void> {
      return share.run(tenant, () => readRows(db, { ...read, batchSize: BATCH, lockWaitMs }, startReading));
    },

    /** The weights a report's data-driven model credits by (learnWeights), within the tenant's share of the database. */
    learnWeights(tenant: Tenant, plan: LearningPlan, signal?: AbortSignal): Promise<LearntWeights | undefined> {
      return share.run(tenant, () => learnWeights(db, tenant, plan, signal));
    },
  };
}

type LearningPlan = Pick<RowsPlan, 'attribution' | 'period' | 'timeZone'>;

/** The UAT test credentials keep no orders: their reports have no rows. */
export const standInReports: ReportRepository = {
  eachBatch: async () => {},
  learnWeights: async (_tenant: Tenant, plan: LearningPlan) => (usesLearntWeights(plan) ? NOTHING_LEARNT : undefined),
};
