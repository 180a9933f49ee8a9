import { addDays, DAY_MS } from '../calendar.js';
import { LINKED, takeChangedKeys, type ChangedKey } from './changes.js';
import { isDataDriven, UNLIMITED, windowDaysSql } from './models.js';
import { KEPT_PATH_COLUMNS, LONGEST_KEPT_WINDOW, pathsSql, pathsToKeepSql } from './paths.js';
import type { Tenant } from '../auth/tenant.js';
import type { Database, Queryable } from '../db/index.js';
import { instantPlus, localDayStart } from '../db/local-days.js';
import { AD_COLUMNS, KEPT_PATHS, KEPT_VISITS, attributionCtes, keptTotalsKey, type AttributionCombination, type AttributionSqlContext } from './attributed-rows.js';
import { LOCAL_DAYS_AS_INSTANTS, type Period, type RowsPlan } from './rows.js';

/*
 * Kept daily totals of attribution (migration 0015, docs/benchmarks.md "How the dashboard gets
 * under 2 s"): the credits and visits of each local day a report asked for, per ad object, kept
 * until a write changes them. They are written by the statement exports run (attributionCtes,
 * over the missing days at the ad level), so no number has a second implementation; a report
 * then reads them summed to its level and buckets (rows.ts, `fromKeptTotals`).
 *
 * Writes lower their client's change instant (src/attribution/changes.ts); before a report reads,
 * the days that instant may have changed are marked stale, then the days missing or stale are
 * computed. The UNLIMITED window is never kept: any write can change any later day under it.
 *
 * The keeper also keeps the paths of the orders of the days whose totals it keeps (migration 0020,
 * keepMissingPaths): the days a report lacks are credited from them where they are kept, which
 * skips finding the paths (most of the work), and from the touchpoints elsewhere. A late
 * touchpoint's key has the kept paths of its customer's orders found again (patchKeptPaths). Accrual days
 * kept from them leave out the orders after them (today's), which a report credits as it reads
 * (migration 0022).
 */

/** What a report asks of the kept totals: its combinations, over the local days of its period. */
export interface KeptTotalsAsked {
  tenant: Tenant;
  timeZone: string;
  combinations: readonly AttributionCombination[];
  period: Extract<Period, { kind: 'days' }>;
}

/** The kept totals a plan's rows can be read from, or undefined: whole local days, DAILY or longer buckets, no UNLIMITED window. */
export function keptTotalsOf(tenant: Tenant, plan: RowsPlan): KeptTotalsAsked | undefined {
  const { period, granularity, attribution = [], timeZone } = plan;
  if (period.kind !== 'days' || granularity === 'HOURLY' || attribution.length === 0) return undefined;
  // Data-driven credits follow weights learnt again as data arrives: they are computed each time.
  if (attribution.some((combination) => combination.window === UNLIMITED || isDataDriven(combination.model))) return undefined;
  return { tenant, timeZone, combinations: attribution, period };
}

/** How far before a change a kept day's numbers reach: accrual credits count at touchpoints up to a window before their orders. */
const lookbackDays = (combination: AttributionCombination) => (combination.accountingMode === 'accrual' ? windowDaysSql(combination.window)! : 0);

const KEPT_TABLES = ['attribution_days', 'attribution_credit_days', 'attribution_visit_days', 'attribution_paths'];

/**
 * Takes the lock under which a client's kept totals change (its attribution_totals_kept row,
 * made on first use), and answers the zone their days are local days of.
 */
async function lockKeptTotals(tx: Queryable, { clientId, environment }: Tenant, timeZone: string): Promise<string> {
  await tx.query(
    `INSERT INTO attribution_totals_kept (client_id, environment, time_zone) VALUES ($1, $2, $3)
     ON CONFLICT (client_id, environment) DO NOTHING`,
    [clientId, environment, timeZone],
  );
  const [row] = await tx.query<{ time_zone: string }>(
    'SELECT time_zone FROM attribution_totals_kept WHERE client_id = $1 AND environment = $2 FOR UPDATE',
    [clientId, environment],
  );
  return row!.time_zone;
}

/**
 * Marks stale the kept days that writes since the last report may have changed (migration 0021),
 * and clears what they noted. A transaction of its own, kept short: writes of the client wait for
 * its locks on the notes. Changes committed after it stay noted for the next report. Each day goes
 * by the bound of its own totals (its lookback). A stale day is missing to reports; the keeper
 * computes the stale cash days among its days again (refreshKeptTotals), whoever took the change.
 * Their rows are replaced when the day is computed again. `settle` runs first in the transaction
 * (a report's lock time limit); `signal` gives it up.
 */
export function markChangedDaysStale(
  db: Database,
  { tenant, timeZone }: Pick<KeptTotalsAsked, 'tenant' | 'timeZone'>,
  { settle = async () => {}, signal }: { settle?: (tx: Queryable) => Promise<void>; signal?: AbortSignal } = {},
): Promise<void> {
  return db.transaction(async (tx) => {
    await settle(tx);
    const tenantParams = [tenant.clientId, tenant.environment];
    const keptZone = await lockKeptTotals(tx, tenant, timeZone);
    // The keys first, then the instants: in the order writes lock them (src/attribution/changes.ts).
    // The keys are resolved before the instants are locked: every write of the client waits for
    // that lock, live traffic too.
    const keyed = await resolveChangedKeys(tx, tenant, keptZone, await takeChangedKeys(tx, tenant));
    // Before the instants are read: an order moved while its paths were found again has noted its
    // instant by then, and its days go stale below.
    await patchKeptPaths(tx, tenant, keptZone, keyed.pathsPatched);
    const slots = await tx.query<{ slot: number; earliest: string }>(
      'SELECT slot, earliest::text AS earliest FROM attribution_changes WHERE client_id = $1 AND environment = $2 FOR UPDATE',
      tenantParams,
    );
    const [change] = await tx.query<{ earliest: string | null }>('SELECT min(e)::text AS earliest FROM unnest($1::timestamptz[]) AS e', [slots.map((slot) => slot.earliest)]);
    if (change!.earliest === null && keyed.creditsFrom === null && keyed.visitDays.length === 0) return;
    // Accrual days kept with the orders before a day (migration 0022) are left to a change of orders from that day on.
    const changedFrom = (instant: string) => `day >= (${instantPlus(`${instant}::timestamptz`, `-lookback_days * interval '${DAY_MS} milliseconds'`)} AT TIME ZONE $4)::date
          AND (orders_before IS NULL OR ${instant}::timestamptz < ${localDayStart('orders_before', '$4')})`;
    await tx.query(
      `UPDATE attribution_days SET stale = true
        WHERE client_id = $1 AND environment = $2 AND NOT stale
          AND ((${changedFrom('$3')})
               OR (totals NOT IN ('${KEPT_VISITS}', '${KEPT_PATHS}') AND ${changedFrom('$5')})
               OR (totals = '${KEPT_PATHS}' AND ${changedFrom('$7')})
               OR (totals = '${KEPT_VISITS}' AND day = ANY ($6::date[])))`,
      [...tenantParams, change!.earliest, keptZone, keyed.creditsFrom, keyed.visitDays, keyed.pathsFrom],
    );
    // The slots read only: a write's note in a slot that had none is not locked by the read, and
    // may have been committed since, its days not marked.
    await tx.query('DELETE FROM attribution_changes WHERE client_id = $1 AND environment = $2 AND slot = ANY ($3::int[])', [
      ...tenantParams,
      slots.map((slot) => slot.slot),
    ]);
  }, { signal });
}

/** What the keys taken may have changed: resolveChangedKeys. */
export interface KeyedChange {
  /** The instant from which credits may have changed: null, none. */
  creditsFrom: string | null;
  /** The instant from which kept paths may have changed, beyond those of `pathsPatched`: null, none. */
  pathsFrom: string | null;
  /** The orders whose kept paths touchpoints changed, and their local days: found again rather than dropped (patchKeptPaths). */
  pathsPatched: { orderIds: string[]; days: string[] };
  /** The local days whose visits may have changed. */
  visitDays: string[];
}

/**
 * What the keys taken may have changed (src/attribution/changes.ts), read in a statement after
 * the one that took them, whose snapshot holds every write whose note was taken: the instant from
 * which credits may have changed (null: none), and the local days of `zone` whose visits may have.
 *
 * - Credits: a changed link, from its visitor's first touchpoint; a new link to a customer, from
 *   the first order of that customer placed from then on; touchpoints, from the first order of
 *   their customer (their own, or their visitor's link's) placed from the first of them on,
 *   within the longest kept window after the last. No customer, or no such order: none.
 * - Kept paths: those links', from the same instant; touchpoints change the paths of their
 *   customer's orders alone (those their credits change from, up to the longest kept window after
 *   the last of them), which are found again where their days' paths are kept and not stale (the
 *   others are found again whole) rather than the days of every order dropped.
 * - Visits: the days of every visit of the touchpoints' visitor (or customer, for touchpoints
 *   without a visitor: whose first visit is a new visit) from the first of them on. They hold the
 *   touchpoints' own days, and the day of the visit that was the first before them, if it is no
 *   longer: whichever key of that visitor noted the new first, it is at or after that key's time.
 */
export async function resolveChangedKeys(tx: Queryable, { clientId, environment }: Tenant, zone: string, keys: readonly ChangedKey[]): Promise<KeyedChange> {
  if (keys.length === 0) return { creditsFrom: null, pathsFrom: null, pathsPatched: { orderIds: [], days: [] }, visitDays: [] };
  const tenantOf = (alias: string) => `${alias}.client_id = $1 AND ${alias}.environment = $2`;
  /** The orders of a resolved key's customer its credits may change from: placed from its first time on (within the longest kept window after the last, for touchpoints). */
  const ordersReached = (r: string) => `SELECT o.order_id, o.time_of_purchase FROM orders o
     WHERE ${tenantOf('o')} AND o.customer_id = ${r}.path_customer_id AND o.time_of_purchase >= ${r}.from_at
       AND (${r}.linked = ${LINKED.newToCustomer} OR o.time_of_purchase <= ${r}.latest + interval '${LONGEST_KEPT_WINDOW * DAY_MS} milliseconds')`;
  const visitsFrom = (match: string) =>
    `SELECT t.occurred_at FROM touchpoints t WHERE ${tenantOf('t')} AND ${match} AND t.type = 'visit' AND t.occurred_at >= n.earliest`;
  const [row] = await tx.query<{ credits_from: string | null; paths_from: string | null; patched_orders: string[]; patched_days: string[]; visit_days: string[] }>(
    `WITH noted AS (
       SELECT * FROM json_to_recordset($4::json) AS k(visitor_id text, customer_id text, earliest timestamptz, latest timestamptz, linked int)
     ),
     resolved AS (
       SELECT n.*,
              CASE WHEN n.customer_id <> '' THEN n.customer_id
                   ELSE (SELECT coalesce(i.customer_id, o.customer_id) FROM identities i
                           LEFT JOIN orders o ON ${tenantOf('o')} AND o.order_id = i.order_id
                          WHERE ${tenantOf('i')} AND i.visitor_id = n.visitor_id) END AS path_customer_id,
              least(n.earliest, (SELECT min(t.occurred_at) FROM touchpoints t
                                  WHERE n.linked > ${LINKED.none} AND ${tenantOf('t')} AND t.visitor_id = n.visitor_id)) AS from_at
         FROM noted n
     ),
     changed AS (
       SELECT r.*,
              CASE WHEN r.linked = ${LINKED.changed} THEN r.from_at ELSE (SELECT min(o.time_of_purchase) FROM (${ordersReached('r')}) AS o) END AS changed_from
         FROM resolved r
     ),
     patched AS (
       SELECT DISTINCT o.order_id, (o.time_of_purchase AT TIME ZONE $3)::date AS day
         FROM resolved r CROSS JOIN LATERAL (${ordersReached('r')}) AS o
        WHERE r.linked = ${LINKED.none}
          AND EXISTS (SELECT FROM attribution_days d
                       WHERE ${tenantOf('d')} AND d.totals = '${KEPT_PATHS}' AND d.day = (o.time_of_purchase AT TIME ZONE $3)::date AND NOT d.stale)
     )
     SELECT (SELECT min(changed_from) FROM changed)::text AS credits_from,
            (SELECT min(changed_from) FROM changed WHERE linked > ${LINKED.none})::text AS paths_from,
            ARRAY(SELECT order_id FROM patched) AS patched_orders,
            ARRAY(SELECT DISTINCT day::text FROM patched) AS patched_days,
            ARRAY(SELECT DISTINCT to_char(v.occurred_at AT TIME ZONE $3, 'YYYY-MM-DD')
                    FROM noted n
                   CROSS JOIN LATERAL (${visitsFrom("n.visitor_id <> '' AND t.visitor_id = n.visitor_id")}
                                       UNION ALL
                                       ${visitsFrom("n.visitor_id = '' AND t.visitor_id IS NULL AND t.customer_id = n.customer_id")}) AS v
                   WHERE n.earliest IS NOT NULL) AS visit_days`,
    [clientId, environment, zone, JSON.stringify(keys)],
  );
  return {
    creditsFrom: row!.credits_from,
    pathsFrom: row!.paths_from,
    pathsPatched: { orderIds: row!.patched_orders, days: row!.patched_days },
    visitDays: row!.visit_days,
  };
}

/**
 * Finds again the kept paths of the orders whose paths touchpoints noted by key changed, on their
 * local days of `zone` (resolveChangedKeys): their rows are replaced, numbered after the day's
 * others, so that the credits of their days are computed again from kept paths rather than from
 * the touchpoints (the benchmark's view after a touchpoint of a customer with an order 8 days
 * later: 1.52 s, against 2.36 s with those 8 days credited from the touchpoints).
 */
async function patchKeptPaths(tx: Queryable, { clientId, environment }: Tenant, zone: string, { orderIds, days }: KeyedChange['pathsPatched']): Promise<void> {
  if (orderIds.length === 0) return;
  await tx.query('DELETE FROM attribution_paths WHERE client_id = $1 AND environment = $2 AND day = ANY ($3::date[]) AND order_id = ANY ($4::text[])', [
    clientId,
    environment,
    days,
    orderIds,
  ]);
  const columns = KEPT_PATH_COLUMNS.join(', ');
  await tx.query(
    `WITH ${pathsSql({ clientId: '$1', environment: '$2', orders: { orderIds: '$4::text[]' }, windows: [LONGEST_KEPT_WINDOW] })},
     kept AS (${pathsToKeepSql((instant) => `(${instant} AT TIME ZONE $3)::date`)}),
     numbered_after AS (
       SELECT d.day, coalesce((SELECT max(m.n) FROM attribution_paths m WHERE m.client_id = $1 AND m.environment = $2 AND m.day = d.day), 0) AS n
         FROM (SELECT DISTINCT day FROM kept) AS d
     )
     INSERT INTO attribution_paths (client_id, environment, day, reach_days, n, ${columns})
     SELECT $1, $2, kept.day, kept.reach_days, numbered_after.n + row_number() OVER (PARTITION BY kept.day ORDER BY kept.reach_days), ${columns}
       FROM kept JOIN numbered_after USING (day)`,
    [clientId, environment, zone, orderIds],
  );
}

/** Drops every kept day of a client before the local day `day`, under its lock: a report reading them waits, then computes them. */
export function dropKeptDaysBefore(db: Database, { tenant, timeZone }: Pick<KeptTotalsAsked, 'tenant' | 'timeZone'>, day: string): Promise<void> {
  return db.transaction(async (tx) => {
    await lockKeptTotals(tx, tenant, timeZone);
    for (const table of KEPT_TABLES) {
      await tx.query(`DELETE FROM ${table} WHERE client_id = $1 AND environment = $2 AND day < $3::date`, [tenant.clientId, tenant.environment, day]);
    }
  });
}

/** A run of consecutive local days [from, to). */
interface Run {
  from: string;
  to: string;
}

/** Consecutive days as runs [from, to), from sorted `YYYY-MM-DD` dates. */
function runsOf(days: readonly string[]): Run[] {
  const runs: Run[] = [];
  for (const day of days) {
    const last = runs.at(-1);
    if (last && last.to === day) last.to = addDays(day, 1);
    else runs.push({ from: day, to: addDays(day, 1) });
  }
  return runs;
}

/**
 * The days of `period` that one of `totals` lacks or has stale (`kept`: that all of them have
 * kept), as runs. Accrual days kept with the orders before a day (migration 0022) are stale once
 * that day's paths are kept: they are computed again from them.
 */
async function runsWhere(tx: Queryable, tenant: Tenant, period: Run, totals: readonly string[], kept = false): Promise<Run[]> {
  const rows = await tx.query<{ day: string }>(
    `SELECT to_char(d, 'YYYY-MM-DD') AS day
       FROM generate_series($3::date::timestamp, $4::date::timestamp - interval '1 day', interval '1 day') AS d
      WHERE ${kept ? 'NOT ' : ''}EXISTS (SELECT FROM unnest($5::text[]) AS t (totals)
                     WHERE NOT EXISTS (SELECT FROM attribution_days k
                                        WHERE k.client_id = $1 AND k.environment = $2 AND k.totals = t.totals AND k.day = d::date AND NOT k.stale
                                          AND NOT EXISTS (SELECT FROM attribution_days p
                                                           WHERE p.client_id = $1 AND p.environment = $2 AND p.totals = '${KEPT_PATHS}'
                                                             AND p.day = k.orders_before AND NOT p.stale)))
      ORDER BY d`,
    [tenant.clientId, tenant.environment, period.from, period.to, totals],
  );
  return runsOf(rows.map((row) => row.day));
}

/** Marks the days of `run` kept for each of `totals` (with the orders before the day `ordersBefore`), stale ones among them too. */
async function markKept(tx: Queryable, tenant: Tenant, run: Run, totals: readonly string[], lookbackDays: number, ordersBefore?: string): Promise<void> {
  await tx.query(
    `INSERT INTO attribution_days (client_id, environment, totals, day, lookback_days, orders_before)
     SELECT $1, $2, t.totals, d::date, $6, $7::date
       FROM unnest($5::text[]) AS t (totals)
      CROSS JOIN generate_series($3::date::timestamp, $4::date::timestamp - interval '1 day', interval '1 day') AS d
     ON CONFLICT (client_id, environment, totals, day) DO UPDATE SET stale = false, lookback_days = excluded.lookback_days, orders_before = excluded.orders_before`,
    [tenant.clientId, tenant.environment, run.from, run.to, totals, lookbackDays, ordersBefore ?? null],
  );
}

/**
 * Takes the client's lock (lockKeptTotals); when its kept days are another zone's (the client's
 * changed), drops them all, and notes the zone.
 */
async function lockInZone(tx: Queryable, tenant: Tenant, timeZone: string): Promise<void> {
  if ((await lockKeptTotals(tx, tenant, timeZone)) === timeZone) return;
  const tenantParams = [tenant.clientId, tenant.environment];
  for (const table of KEPT_TABLES) await tx.query(`DELETE FROM ${table} WHERE client_id = $1 AND environment = $2`, tenantParams);
  await tx.query('UPDATE attribution_totals_kept SET time_zone = $3, kept_ahead_on = NULL WHERE client_id = $1 AND environment = $2', [...tenantParams, timeZone]);
}

/** The combinations whose credits one statement computes: those of a window and an accounting mode, which share their paths. */
function sharingPaths(combinations: readonly AttributionCombination[]): AttributionCombination[][] {
  const groups = new Map<string, Map<string, AttributionCombination>>();
  for (const combination of combinations) {
    const group = `${String(combination.window)}/${combination.accountingMode}`;
    groups.set(group, (groups.get(group) ?? new Map()).set(combination.model, combination));
  }
  return [...groups.values()].map((group) => [...group.values()]);
}

/**
 * Keeps the paths of the orders of the days of `period` that lack them (migration 0020): each
 * order's row, and its touchpoints within LONGEST_KEPT_WINDOW, as pathsSql finds them for a
 * period. The keeper's work: a report credits from them where they are kept, and never waits for
 * them to be found.
 */
export async function keepMissingPaths(tx: Queryable, { tenant, timeZone, period }: Omit<KeptTotalsAsked, 'combinations'>): Promise<void> {
  await lockInZone(tx, tenant, timeZone);
  const orders = { purchasedFrom: LOCAL_DAYS_AS_INSTANTS[0], purchasedBefore: LOCAL_DAYS_AS_INSTANTS[1] };
  const columns = KEPT_PATH_COLUMNS.join(', ');
  const insert = `WITH ${pathsSql({ clientId: '$1', environment: '$2', orders, windows: [LONGEST_KEPT_WINDOW] })}
    INSERT INTO attribution_paths (client_id, environment, day, reach_days, n, ${columns})
    SELECT $1, $2, day, reach_days, row_number() OVER (PARTITION BY day ORDER BY reach_days), ${columns}
      FROM (${pathsToKeepSql((instant) => `(${instant} AT TIME ZONE $3)::date`)}) AS kept`;
  for (const run of await runsWhere(tx, tenant, period, [KEPT_PATHS])) {
    const inRun = [tenant.clientId, tenant.environment, run.from, run.to];
    await tx.query('DELETE FROM attribution_paths WHERE client_id = $1 AND environment = $2 AND day >= $3::date AND day < $4::date', inRun);
    await tx.query(insert, [tenant.clientId, tenant.environment, timeZone, run.from, run.to]);
    await markKept(tx, tenant, run, [KEPT_PATHS], 0);
  }
}

/** Where credits are computed from (attributionCtes). */
type CreditSource = NonNullable<AttributionSqlContext['source']>;

/** Runs of days, the source of their credits, and the day before which it counts orders (accrual days from kept paths: migration 0022). */
type CreditSources = { run: Run; source: (params: unknown[]) => CreditSource; ordersBefore?: string }[];

/**
 * The most orders after the kept paths whose credits a report of accrual days kept without them
 * computes as it reads (0.2 ms each at the benchmark's scale, found by index), rather than the
 * days counting every order.
 */
const ORDERS_CREDITED_AS_READ = 5000;

/**
 * Where the credits of the days `missing` of `combination`'s window and mode are computed from,
 * by runs of them: the kept paths of the orders they count, where those are kept, else the
 * touchpoints (attributionCtes' source, given the statement's parameters: $4 and $5 the run's
 * days). Cash days count their own orders: the runs of days with kept paths, and those without.
 * Accrual days count the orders of up to a window after them (and a day: a window is of 24-hour
 * days, and past a 23-hour local day it ends a local day later): from kept paths when those of
 * the run's first days on are kept; when the paths of
 * a later day are not (today's are never kept), from those before it, `ordersBefore` that day,
 * if the orders from it on are few enough for a report to credit as it reads (migration 0022).
 */
async function creditSources(
  tx: Queryable,
  { tenant, timeZone }: Pick<KeptTotalsAsked, 'tenant' | 'timeZone'>,
  missing: Run,
  combination: AttributionCombination,
): Promise<CreditSources> {
  const fromTouchpoints = () => ({ kind: 'paths' }) as const;
  /** The kept paths of the run's days, or of its first day to `keptTo`. */
  const fromKeptPaths = (keptTo?: string) => (params: unknown[]) =>
    ({ kind: 'kept paths', fromDay: '$4::date', toDay: keptTo ? `$${params.push(keptTo)}::date` : '$5::date' }) as const;
  if (combination.accountingMode === 'cash') {
    return [
      ...(await runsWhere(tx, tenant, missing, [KEPT_PATHS], true)).map((run) => ({ run, source: fromKeptPaths() })),
      ...(await runsWhere(tx, tenant, missing, [KEPT_PATHS])).map((run) => ({ run, source: fromTouchpoints })),
    ];
  }
  const windowDays = windowDaysSql(combination.window)!;
  const ordersTo = addDays(missing.to, windowDays + 1);
  const [kept] = await runsWhere(tx, tenant, { from: missing.from, to: ordersTo }, [KEPT_PATHS], true);
  if (!kept || kept.from !== missing.from) return [{ run: missing, source: fromTouchpoints }];
  if (kept.to === ordersTo) return [{ run: missing, source: fromKeptPaths(kept.to) }];
  const [{ after }] = (await tx.query<{ after: number }>(
    `SELECT count(*)::int AS after FROM (
       SELECT FROM orders WHERE client_id = $1 AND environment = $2
          AND time_of_purchase >= ${localDayStart('$4::date', '$3')} AND time_of_purchase < ${localDayStart('$5::date', '$3')} + $6::int * interval '${DAY_MS} milliseconds'
        LIMIT ${ORDERS_CREDITED_AS_READ + 1}) AS o`,
    [tenant.clientId, tenant.environment, timeZone, kept.to, missing.to, windowDays],
  )) as [{ after: number }];
  if (after > ORDERS_CREDITED_AS_READ) return [{ run: missing, source: fromTouchpoints }];
  return [{ run: missing, source: fromKeptPaths(kept.to), ordersBefore: kept.to }];
}

/**
 * Computes the kept days a report needs and lacks, in the transaction that then reads them: the
 * client's lock is held until the report has read, so no other report drops or writes its days
 * meanwhile. Days of another zone (the client's changed) are all dropped first. The models of a
 * window and mode are credited in one statement (a pass over their paths: eight models of 30 days
 * cost 2.5 times one), over the days any of them lacks; from the kept paths of the orders they
 * count where those are kept (creditSources: 1.1 s for a month of one model at the benchmark's
 * scale, against 3.3 s from the touchpoints).
 */
export async function keepMissingDays(tx: Queryable, { tenant, timeZone, combinations, period }: KeptTotalsAsked): Promise<void> {
  await lockInZone(tx, tenant, timeZone);
  // The credits of the paths' touchpoints are summed per day and ad object by hashing, not by
  // sorting them: PostgreSQL, estimating a few thousand of them where there are hundreds of
  // thousands, sorted them, which took 1.2 s of the 4 s of 30 days of a 60-day window at the
  // benchmark's scale (0.3 s of a 14-day window's 1.5 s). What has no other way still sorts: the
  // paths' window functions. Set back after (a failure rolls the setting back with the rest).
  await tx.query('SET LOCAL enable_sort = off');
  /**
   * Computes the days that one of `totals` lacks with the CTEs of `group` (attributionCtes at the
   * ad level, over each run of such days), after dropping what the others kept of them; writes
   * them with `insert` (the statement after the CTEs, given the parameters to push its own onto),
   * and marks the days kept. `credits`: from the kept paths where they are kept (creditSources).
   */
  const keep = async (totals: string[], lookback: number, group: readonly AttributionCombination[], insert: (params: unknown[]) => string, credits = false) => {
    for (const missing of await runsWhere(tx, tenant, period, totals)) {
      const sources: CreditSources = credits ? await creditSources(tx, { tenant, timeZone }, missing, group[0]!) : [{ run: missing, source: () => ({ kind: 'paths' }) }];
      for (const { run, source, ordersBefore } of sources) {
        const runParams = [tenant.clientId, tenant.environment, run.from, run.to, totals];
        const inRun = 'client_id = $1 AND environment = $2 AND day >= $3::date AND day < $4::date';
        await tx.query(`DELETE FROM attribution_days WHERE ${inRun} AND totals = ANY ($5::text[])`, runParams);
        if (totals.includes(KEPT_VISITS)) await tx.query(`DELETE FROM attribution_visit_days WHERE ${inRun}`, runParams.slice(0, 4));
        else await tx.query(`DELETE FROM attribution_credit_days WHERE ${inRun} AND totals = ANY ($5::text[])`, runParams);
        const params: unknown[] = [tenant.clientId, tenant.environment, timeZone, run.from, run.to];
        const from = source(params);
        const ctes = attributionCtes({
          combinations: group.map((combination) => ({ ...combination, modelAsked: combination.model })),
          params,
          fromInstant: LOCAL_DAYS_AS_INSTANTS[0],
          toInstant: LOCAL_DAYS_AS_INSTANTS[1],
          bucketOf: (instant) => `(${instant} AT TIME ZONE $3)::date`,
          keys: AD_COLUMNS,
          kept: [],
          source: from,
          accountsFromSpend: false,
        });
        // Kept paths within a window are read by their key (migration 0023): PostgreSQL, which
        // judges that a month's tenth of a client's paths lie all over the table, read it whole
        // (0.37 to 0.46 s of 1.3 s at the benchmark's scale, against 0.1 s by the key).
        if (from.kind === 'kept paths') await tx.query('SET LOCAL enable_seqscan = off');
        await tx.query(`WITH ${ctes.join(',\n')}\n${insert(params)}`, params);
        if (from.kind === 'kept paths') await tx.query('SET LOCAL enable_seqscan TO DEFAULT');
        await markKept(tx, tenant, run, totals, lookback, ordersBefore);
      }
    }
  };
  for (const group of sharingPaths(combinations)) {
    const totals = group.map((combination) => keptTotalsKey(combination.model, windowDaysSql(combination.window)!, combination.accountingMode));
    await keep(
      totals,
      lookbackDays(group[0]!),
      group,
      (params) => {
        const columns = [...AD_COLUMNS, 'currency', 'rev', 'txns', 'rev_ft', 'txns_ft'].join(', ');
        // credit_totals numbers its rows' combinations from 1, in the order of `group`.
        return `INSERT INTO attribution_credit_days (client_id, environment, totals, day, n, ${columns})
                SELECT $1, $2, ($${params.push(totals)}::text[])[combination], bucket, row_number() OVER (PARTITION BY combination, bucket), ${columns}
                  FROM credit_totals`;
      },
      true,
    );
  }
  // Visits are the same under every combination: any computes them.
  await keep([KEPT_VISITS], 0, combinations.slice(0, 1), () => {
    const columns = [...AD_COLUMNS, 'visits', 'new_visits'].join(', ');
    return `INSERT INTO attribution_visit_days (client_id, environment, day, n, ${columns})
            SELECT $1, $2, bucket, row_number() OVER (PARTITION BY bucket), ${columns} FROM visit_totals`;
  });
  await tx.query('SET LOCAL enable_sort TO DEFAULT');
}
