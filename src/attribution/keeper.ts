import type { Logger } from 'pino';
import { RULE_MODEL_IDS } from './models.js';
import type { Environment, Tenant } from '../auth/tenant.js';
import type { Database } from '../db/index.js';
import { analyzeGrownTables } from '../db/statistics.js';
import { startPeriodic } from '../periodic.js';
import { KEPT_PATHS, KEPT_VISITS, combinationOfKeptTotals, type AccountingMode, type AttributionCombination } from './attributed-rows.js';
import { markChangedDaysStale, dropKeptDaysBefore, keepMissingDays, keepMissingPaths, type KeptTotalsAsked } from './daily-totals.js';
import { addDays, localToday } from '../calendar.js';
import { inRowsTransaction } from './rows.js';

/*
 * Kept daily totals (daily-totals.ts) are computed when a report first asks for them, and made
 * stale by writes; either way the report's reader waits: 8 s for a month at the attribution
 * benchmark's scale. The keeper does that work in the background instead, over the last days of
 * each client's zone (KEEP_AHEAD_DAYS, "the keeper's days"):
 *
 * - for the clients whose kept totals have a change noted, or days a report marked stale when it
 *   took the change, it marks stale what the change reaches and computes again the stale cash days
 *   among the keeper's days, so that the next report reads them; older ones, and accrual days,
 *   are left to the report that asks for them;
 * - once a day of each client's zone, for every client with production orders or touchpoints, it
 *   drops the kept days before the keeper's days and keeps those of the dashboard's window ahead,
 *   in both modes, for every model but the data-driven ones, so that the dashboard opens, and switches models and modes,
 *   on kept days.
 *
 * With the days it keeps, it keeps their orders' paths (daily-totals.ts, keepMissingPaths), so
 * that the first report of another window or model credits them without finding them.
 *
 * It works under the client's lock, as reports do, a piece of days at a time: a report arriving
 * meanwhile waits for the piece, then reads.
 */

/** The window and accounting mode the dashboard opens on (src/pages/dashboard.html): their days are kept ahead. */
export const KEPT_AHEAD = { window: 30, accountingMode: 'cash' } as const satisfies Omit<AttributionCombination, 'model' | 'modelAsked'>;
/**
 * The modes of KEPT_AHEAD's window kept ahead: the dashboard's other mode, accrual, reads kept
 * days too. They are kept without today's orders (migration 0022), so live orders leave them.
 */
export const MODES_KEPT_AHEAD: readonly AccountingMode[] = ['cash', 'accrual'];
/** The most days computed in one transaction, holding the client's lock. */
const PIECE_DAYS = 30;
/** How often the clients due to be kept ahead are looked for (they are due once a day). */
const DUE_LOOKED_FOR_EVERY_MS = 5 * 60_000;
/** How long a client whose kept totals could not be computed (a statement past DATABASE_QUERY_TIMEOUT_MS) is left alone. */
const RETRY_AFTER_MS = 15 * 60_000;

/** The keeper's days of a client: the last `days` local days of its zone before `now`'s day. */
export interface KeepersDays {
  days: number;
  now: Date;
}
const keepersPeriod = (timeZone: string, { days, now }: KeepersDays) => {
  const today = localToday(timeZone, now);
  return { from: addDays(today, -days), to: today };
};

/**
 * Computes the kept days `asked` lacks, a piece of days at a time, the latest
 * first: the paths of the piece's orders first, those of days before `today` only, then the
 * combinations' credits from them, each in a transaction of its own, so that a report waits for
 * one of them at most (15 s and 10 s for a piece at the benchmark's scale). Today's paths are not
 * kept: live orders change them at every pass, and finding a day's paths reads the 90 days of
 * touchpoints before it.
 */
async function keepInPieces(db: Database, asked: KeptTotalsAsked, today: string, signal?: AbortSignal): Promise<void> {
  await analyzeGrownTables(db);
  for (let to = asked.period.to; to > asked.period.from; ) {
    // A stopping process leaves the rest to the next keeper or report (and cancels the statement it was running).
    if (signal?.aborted) return;
    const pieceFrom = addDays(to, -PIECE_DAYS);
    const from = pieceFrom > asked.period.from ? pieceFrom : asked.period.from;
    const piece: KeptTotalsAsked = { ...asked, period: { kind: 'days', from, to } };
    if (from < today) await inRowsTransaction(db, (tx) => keepMissingPaths(tx, { ...piece, period: { kind: 'days', from, to: to < today ? to : today } }), signal);
    await inRowsTransaction(db, (tx) => keepMissingDays(tx, piece), signal);
    to = from;
  }
}

/**
 * Marks stale the kept days of a client that its writes since may have changed, and computes again
 * the stale cash days among the keeper's days, whether this or a report marked them: each cash
 * combination from the first to the last day it has kept there, together with the combinations
 * kept over the same days (those kept ahead), and the paths and visits of those days. Accrual days
 * are left to the report that asks for them: where they count every order (a shop of more than
 * 5,000 orders a day: daily-totals.ts, creditSources), an order of now reaches back a window, so
 * under live orders every pass would compute the last window's days again for every accrual
 * combination ever viewed (6 s of one of them, 30 days, at the benchmark's scale, every 30 s), and
 * the next order would make them stale before anybody read them. What it leaves stale it no longer
 * marks, so that the client is not refreshed again for it at every pass: a report computes it when
 * it asks.
 */
export async function refreshKeptTotals(db: Database, tenant: Tenant, timeZone: string, keepers: KeepersDays, signal?: AbortSignal): Promise<void> {
  const { from: since, to: today } = keepersPeriod(timeZone, keepers);
  // After a load, resolving its changes planned on empty tables' statistics took 2 minutes, not 0.3 s, on the embedded store.
  await analyzeGrownTables(db);
  await markChangedDaysStale(db, { tenant, timeZone }, { signal });
  const kept = await db.query<{ from: string; to: string; totals: string[] }>(
    `SELECT "from", "to", array_agg(totals ORDER BY totals) AS totals
       FROM (SELECT totals, to_char(min(day), 'YYYY-MM-DD') AS "from", to_char(max(day) + 1, 'YYYY-MM-DD') AS "to"
               FROM attribution_days WHERE client_id = $1 AND environment = $2 AND totals <> ALL ($3::text[]) AND day >= $4::date GROUP BY totals) AS ranges
      GROUP BY "from", "to" ORDER BY "to" DESC, "from"`,
    [tenant.clientId, tenant.environment, [KEPT_VISITS, KEPT_PATHS], since],
  );
  const refreshed: string[] = [];
  for (const { totals, from, to } of kept) {
    const cash = totals.filter((key) => combinationOfKeptTotals(key).accountingMode === 'cash');
    if (cash.length === 0) continue;
    await keepInPieces(db, { tenant, timeZone, combinations: cash.map(combinationOfKeptTotals), period: { kind: 'days', from, to } }, today, signal);
    refreshed.push(...cash);
  }
  if (signal?.aborted) return;
  // Cash days marked stale meanwhile stay marked, for the next pass.
  await db.query('DELETE FROM attribution_days WHERE client_id = $1 AND environment = $2 AND stale AND (day < $3::date OR totals <> ALL ($4::text[]))', [
    tenant.clientId,
    tenant.environment,
    since,
    refreshed,
  ]);
}

/**
 * Brings the client's kept days up to date (refreshKeptTotals), drops those before the keeper's
 * days, keeps the keeper's days of KEPT_AHEAD's window in both modes for every rule model, and notes the
 * day it was done, unless the client's zone changed meanwhile.
 */
export async function keepAhead(db: Database, tenant: Tenant, timeZone: string, keepers: KeepersDays, signal?: AbortSignal): Promise<void> {
  const period = keepersPeriod(timeZone, keepers);
  const combinations = MODES_KEPT_AHEAD.flatMap((accountingMode) => RULE_MODEL_IDS.map((model) => ({ model, modelAsked: model, window: KEPT_AHEAD.window, accountingMode })));
  await refreshKeptTotals(db, tenant, timeZone, keepers, signal);
  await dropKeptDaysBefore(db, { tenant, timeZone }, period.from);
  await keepInPieces(db, { tenant, timeZone, combinations, period: { kind: 'days', ...period } }, period.to, signal);
  if (signal?.aborted) return;
  await db.query('UPDATE attribution_totals_kept SET kept_ahead_on = $3 WHERE client_id = $1 AND environment = $2 AND time_zone = $4', [
    tenant.clientId,
    tenant.environment,
    period.to,
    timeZone,
  ]);
}

/**
 * The clients with kept totals and a change noted (an instant or keys), or days marked stale, since they were brought
 * up to date, in their time zone. Across clients, as the next: the keeper's statements that every
 * shard answers on Citus.
 */
const STALE_KEPT_TOTALS = `
  SELECT k.client_id, k.environment, c.time_zone
    FROM attribution_totals_kept k JOIN clients c USING (client_id)
   WHERE EXISTS (SELECT FROM attribution_changes n WHERE n.client_id = k.client_id AND n.environment = k.environment)
      OR EXISTS (SELECT FROM attribution_change_keys n WHERE n.client_id = k.client_id AND n.environment = k.environment)
      OR EXISTS (SELECT FROM attribution_days d WHERE d.client_id = k.client_id AND d.environment = k.environment AND d.stale)`;

/** The clients with production orders or touchpoints whose days were not kept ahead yet on their day of the instant $1. */
export const DUE_AHEAD = `
  SELECT c.client_id, c.time_zone
    FROM clients c
    LEFT JOIN attribution_totals_kept k ON k.client_id = c.client_id AND k.environment = 'production'
   WHERE (k.kept_ahead_on IS NULL OR k.kept_ahead_on < ($1::timestamptz AT TIME ZONE c.time_zone)::date)
     AND (EXISTS (SELECT FROM touchpoints t WHERE t.client_id = c.client_id AND t.environment = 'production')
          OR EXISTS (SELECT FROM orders o WHERE o.client_id = c.client_id AND o.environment = 'production'))`;

/**
 * Every `intervalMs`, refreshes every client's stale kept totals; every few minutes, keeps the
 * days of the clients due ahead, one client at a time, refreshing stale ones between them (a
 * client's first days ahead take tens of seconds at the benchmark's scale). A client that fails
 * is logged, and left alone for RETRY_AFTER_MS. Stopping ends a pass at the next piece of days.
 * `clock` is the time the keeper's days end at (tests set it).
 */
export function startKeptTotalsKeeper({
  db,
  intervalMs,
  keepersDays: days,
  clock = () => new Date(),
  logger,
}: {
  db: Database;
  intervalMs: number;
  keepersDays: number;
  clock?: () => Date;
  logger?: Logger;
}): { stop(): Promise<void> } {
  let dueLookedForAt = -Infinity;
  /** Work that failed (its kind, client and environment), and when it may be tried again. */
  const failedUntil = new Map<string, number>();
  /**
   * Runs `work` unless the same work failed lately; a failure is logged, and that work left alone
   * for a while (a client's refreshes after writes go on when its heavier keeping ahead fails).
   */
  const attempt = async (kind: 'refresh' | 'ahead', tenant: Tenant, work: () => Promise<void>, signal: AbortSignal) => {
    const key = `${kind}:${tenant.clientId}:${tenant.environment}`;
    if ((failedUntil.get(key) ?? 0) > Date.now()) return;
    failedUntil.delete(key);
    await work().catch((error: unknown) => {
      if (signal.aborted) return; // stopped, with its statement: the next keeper goes on
      failedUntil.set(key, Date.now() + RETRY_AFTER_MS);
      logger?.error({ err: error, client_id: tenant.clientId, environment: tenant.environment, work: kind }, 'kept totals could not be computed');
    });
  };
  return startPeriodic(
    intervalMs,
    async (signal) => {
      const refreshStale = async () => {
        const stale = await db.query<{ client_id: string; environment: Environment; time_zone: string }>(STALE_KEPT_TOTALS);
        for (const { client_id, environment, time_zone } of stale) {
          if (signal.aborted) return;
          const tenant: Tenant = { clientId: client_id, environment, dryRun: false };
          await attempt('refresh', tenant, () => refreshKeptTotals(db, tenant, time_zone, { days, now: clock() }, signal), signal);
        }
      };
      await refreshStale();
      if (Date.now() - dueLookedForAt < DUE_LOOKED_FOR_EVERY_MS) return;
      dueLookedForAt = Date.now();
      const due = await db.query<{ client_id: string; time_zone: string }>(DUE_AHEAD, [clock().toISOString()]);
      for (const { client_id, time_zone } of due) {
        if (signal.aborted) return;
        const tenant: Tenant = { clientId: client_id, environment: 'production', dryRun: false };
        await attempt('ahead', tenant, () => keepAhead(db, tenant, time_zone, { days, now: clock() }, signal), signal);
        await refreshStale();
      }
    },
    (error) => logger?.error({ err: error }, 'the clients with kept totals to compute could not be listed'),
  );
}
