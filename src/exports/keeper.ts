import type { Logger } from 'pino';
import { MODEL_IDS } from '../attribution/models.js';
import type { Environment, Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { startPeriodic } from '../periodic.js';
import { KEPT_VISITS, combinationOfKeptTotals, type AttributionCombination } from './attributed-rows.js';
import { dropChangedDays, keepMissingDays, type KeptTotalsAsked } from './daily-totals.js';
import { addDays, localToday } from './period.js';
import { inRowsTransaction } from './rows.js';

/*
 * Kept daily totals (daily-totals.ts) are computed when a report first asks for them, and made
 * stale by writes; either way the report's reader waits: 8 s for a month at the attribution
 * benchmark's scale. The keeper does that work in the background instead:
 *
 * - for the clients whose kept totals have a change noted, it computes again the days each
 *   combination had kept, from the first to the last, so that the next report reads them;
 * - once a day of each client's zone, for every client with orders or touchpoints, it keeps
 *   the days of the dashboard's window and accounting mode ahead, for every model, so that the
 *   dashboard opens, and switches models, on kept days.
 *
 * It works under the client's lock, as reports do, a piece of days at a time: a report arriving
 * meanwhile waits for the piece, then reads.
 */

/** The window and accounting mode the dashboard opens on (src/pages/dashboard.html): their days are kept ahead. */
export const KEPT_AHEAD = { window: 30, accountingMode: 'cash' } as const satisfies Omit<AttributionCombination, 'model' | 'modelAsked'>;
/** The most days computed in one transaction, holding the client's lock. */
const PIECE_DAYS = 30;

/** Computes the kept days `asked` lacks, a piece of days at a time, the latest first. */
async function keepInPieces(db: Database, asked: KeptTotalsAsked, signal?: AbortSignal): Promise<void> {
  for (let to = asked.period.to; to > asked.period.from; ) {
    // A stopping process leaves the rest to the next keeper or report.
    if (signal?.aborted) return;
    const from = [asked.period.from, addDays(to, -PIECE_DAYS)].sort().at(-1)!;
    await inRowsTransaction(db, (tx) => keepMissingDays(tx, { ...asked, period: { kind: 'days', from, to } }));
    to = from;
  }
}

/**
 * Drops the kept days of a client that its writes since may have changed, and computes them
 * again: each combination over the local days from the first to the last it had kept, together
 * with the combinations kept over the same days (those kept ahead).
 */
export async function refreshKeptTotals(db: Database, tenant: Tenant, timeZone: string, signal?: AbortSignal): Promise<void> {
  const kept = await db.query<{ from: string; to: string; totals: string[] }>(
    `SELECT "from", "to", array_agg(totals ORDER BY totals) AS totals
       FROM (SELECT totals, to_char(min(day), 'YYYY-MM-DD') AS "from", to_char(max(day) + 1, 'YYYY-MM-DD') AS "to"
               FROM attribution_days WHERE client_id = $1 AND environment = $2 AND totals <> $3 GROUP BY totals) AS ranges
      GROUP BY "from", "to" ORDER BY "to" DESC, "from"`,
    [tenant.clientId, tenant.environment, KEPT_VISITS],
  );
  await dropChangedDays(db, { tenant, timeZone });
  for (const { totals, from, to } of kept) {
    await keepInPieces(db, { tenant, timeZone, combinations: totals.map(combinationOfKeptTotals), period: { kind: 'days', from, to } }, signal);
  }
}

/**
 * Keeps the last `days` local days before `now`'s day (the dashboard's "last N days" end
 * yesterday) of KEPT_AHEAD's window and mode, every model, and notes the day it was done.
 */
export async function keepAhead(db: Database, tenant: Tenant, timeZone: string, { days, now }: { days: number; now: Date }, signal?: AbortSignal): Promise<void> {
  const today = localToday(timeZone, now);
  const combinations = MODEL_IDS.map((model) => ({ model, modelAsked: model, ...KEPT_AHEAD }));
  // The writes that made the client due are noted as changes: what they reach goes first, so that
  // the days computed now are not dropped again by the next report.
  await dropChangedDays(db, { tenant, timeZone });
  await keepInPieces(db, { tenant, timeZone, combinations, period: { kind: 'days', from: addDays(today, -days), to: today } }, signal);
  if (signal?.aborted) return;
  await db.query('UPDATE attribution_totals_kept SET kept_ahead_on = $3 WHERE client_id = $1 AND environment = $2', [tenant.clientId, tenant.environment, today]);
}

/**
 * The clients with kept totals and a change noted since they were brought up to date, in their
 * time zone. Across clients, as the next: the keeper's statements that every shard answers on Citus.
 */
const STALE_KEPT_TOTALS = `
  SELECT k.client_id, k.environment, c.time_zone
    FROM attribution_totals_kept k JOIN clients c USING (client_id)
   WHERE EXISTS (SELECT FROM attribution_changes n WHERE n.client_id = k.client_id AND n.environment = k.environment)`;

/** The clients with production orders or touchpoints whose days were not kept ahead yet on their day of the instant $1. */
export const DUE_AHEAD = `
  SELECT c.client_id, c.time_zone
    FROM clients c
    LEFT JOIN attribution_totals_kept k ON k.client_id = c.client_id AND k.environment = 'production'
   WHERE (k.kept_ahead_on IS NULL OR k.kept_ahead_on < ($1::timestamptz AT TIME ZONE c.time_zone)::date)
     AND (EXISTS (SELECT FROM touchpoints t WHERE t.client_id = c.client_id AND t.environment = 'production')
          OR EXISTS (SELECT FROM orders o WHERE o.client_id = c.client_id AND o.environment = 'production'))`;

/**
 * Every `intervalMs`, refreshes every client's stale kept totals, then keeps `keepAheadDays` ahead
 * for the clients due (none when 0), one client at a time; a client that fails is logged and tried
 * at the next pass. Stopping ends a pass at the next piece of days.
 */
export function startKeptTotalsKeeper({
  db,
  intervalMs,
  keepAheadDays,
  logger,
}: {
  db: Database;
  intervalMs: number;
  keepAheadDays: number;
  logger?: Logger;
}): { stop(): Promise<void> } {
  const failed = (client_id: string) => (error: unknown) => logger?.error({ err: error, client_id }, 'kept totals could not be computed');
  return startPeriodic(
    intervalMs,
    async (signal) => {
      const stale = await db.query<{ client_id: string; environment: Environment; time_zone: string }>(STALE_KEPT_TOTALS);
      for (const { client_id, environment, time_zone } of stale) {
        if (signal.aborted) return;
        await refreshKeptTotals(db, { clientId: client_id, environment, dryRun: false }, time_zone, signal).catch(failed(client_id));
      }
      if (keepAheadDays === 0) return;
      const now = new Date();
      const due = await db.query<{ client_id: string; time_zone: string }>(DUE_AHEAD, [now.toISOString()]);
      for (const { client_id, time_zone } of due) {
        if (signal.aborted) return;
        const tenant: Tenant = { clientId: client_id, environment: 'production', dryRun: false };
        await keepAhead(db, tenant, time_zone, { days: keepAheadDays, now }, signal).catch(failed(client_id));
      }
    },
    (error) => logger?.error({ err: error }, 'the clients with kept totals to compute could not be listed'),
  );
}
