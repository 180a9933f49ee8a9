import type { Logger } from 'pino';
import type { Environment, Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { startPeriodic } from '../periodic.js';
import { KEPT_VISITS, combinationOfKeptTotals } from './attributed-rows.js';
import { dropChangedDays, keepMissingDays } from './daily-totals.js';
import { inRowsTransaction } from './rows.js';

/*
 * Kept daily totals (daily-totals.ts) are made stale by writes, and a report computes the stale
 * days again while its reader waits: seconds for a late touchpoint in the middle of a month. The
 * keeper does it in the background instead, for the clients whose kept totals have a change
 * noted, over the days each combination had kept, so that the next report reads them. It works
 * under the client's lock, as reports do: a report arriving meanwhile waits, then reads.
 */

/**
 * Drops the kept days of a client that its writes since may have changed, and computes them
 * again: each combination over the local days from the first to the last it had kept.
 */
export async function refreshKeptTotals(db: Database, tenant: Tenant, timeZone: string, signal?: AbortSignal): Promise<void> {
  const kept = await db.query<{ totals: string; from: string; to: string }>(
    `SELECT totals, to_char(min(day), 'YYYY-MM-DD') AS from, to_char(max(day) + 1, 'YYYY-MM-DD') AS to
       FROM attribution_days WHERE client_id = $1 AND environment = $2 AND totals <> $3 GROUP BY totals ORDER BY totals`,
    [tenant.clientId, tenant.environment, KEPT_VISITS],
  );
  await dropChangedDays(db, { tenant, timeZone });
  for (const { totals, from, to } of kept) {
    // A stopping process leaves the rest to the next keeper or report: what it dropped is computed by either.
    if (signal?.aborted) return;
    const asked = { tenant, timeZone, combinations: [combinationOfKeptTotals(totals)], period: { kind: 'days' as const, from, to } };
    await inRowsTransaction(db, (tx) => keepMissingDays(tx, asked));
  }
}

/**
 * The clients with kept totals and a change noted since they were brought up to date, in their
 * time zone. Across clients: the one statement of the keeper that every shard answers on Citus.
 */
const STALE_KEPT_TOTALS = `
  SELECT k.client_id, k.environment, c.time_zone
    FROM attribution_totals_kept k JOIN clients c USING (client_id)
   WHERE EXISTS (SELECT FROM attribution_changes n WHERE n.client_id = k.client_id AND n.environment = k.environment)`;

/**
 * Refreshes every client's stale kept totals every `intervalMs`, one client at a time; a client
 * that fails is logged and tried at the next. Stopping ends a pass at the next combination.
 */
export function startKeptTotalsKeeper({ db, intervalMs, logger }: { db: Database; intervalMs: number; logger?: Logger }): { stop(): Promise<void> } {
  return startPeriodic(
    intervalMs,
    async (signal) => {
      const stale = await db.query<{ client_id: string; environment: Environment; time_zone: string }>(STALE_KEPT_TOTALS);
      for (const { client_id, environment, time_zone } of stale) {
        if (signal.aborted) return;
        await refreshKeptTotals(db, { clientId: client_id, environment, dryRun: false }, time_zone, signal).catch((error: unknown) =>
          logger?.error({ err: error, client_id }, 'kept totals could not be refreshed'),
        );
      }
    },
    (error) => logger?.error({ err: error }, 'stale kept totals could not be listed'),
  );
}
