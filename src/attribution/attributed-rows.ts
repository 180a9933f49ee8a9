import { DAY_MS } from '../calendar.js';
import { CREDIT_PART, creditsSql } from './credits-sql.js';
import type { LearntWeights } from './learning/index.js';
import { isDataDriven, UNATTRIBUTED, UNLIMITED, windowDaysSql, windowNamed, type AttributionWindow, type ModelId } from './models.js';
import { pathsSql } from './paths.js';
import { localDayStart } from '../db/local-days.js';

/*
 * The parts of an export's statement that attribution adds (rows.ts assembles them): the
 * combinations asked, the credits of orders per ad object, and the visits per ad object.
 *
 * Touchpoints name their ad object with spend's columns (platform_name, platform_account_id,
 * campaign_id, adset_id, ad_id), so that they group and filter by the same keys. A touchpoint
 * with no platform is shown under its channel as the platform, with no account or ad object;
 * an order whose path is empty under the platform `unattributed`.
 */

export type AccountingMode = 'cash' | 'accrual';

/** A set of attributed rows: a model, its lookback window, and when a credit counts (its accounting mode). */
export interface AttributionCombination {
  model: ModelId;
  /** The id the request named the model by, ours or an alias (MODEL_ALIASES): the rows' attribution_model. */
  modelAsked: string;
  window: AttributionWindow;
  accountingMode: AccountingMode;
}

/** The columns that tell a combination's rows apart, after the dimensions of every row. */
export const ATTRIBUTION_COLUMNS = ['attribution_model', 'attribution_window', 'accounting_mode'];
/** Those columns and the combination's position in the plan, which rows are sorted by first. */
export const COMBINATION_KEYS = ['combination', ...ATTRIBUTION_COLUMNS];

/** The sums a row of an attributed export adds, with their types. `rev_ft` and `txns_ft` are those of first orders. */
export const ATTRIBUTION_SUMS: [string, string][] = [
  ['rev', 'numeric'],
  ['txns', 'numeric'],
  ['rev_ft', 'numeric'],
  ['txns_ft', 'numeric'],
  ['visits', 'bigint'],
  ['new_visits', 'bigint'],
];

/**
 * The metrics of attributed rows, computed from ATTRIBUTION_SUMS and the spend. Sums of credits
 * are exact until here, then rounded like ratios.
 */
export function attributionMetrics(ratio: (numerator: string, denominator: string) => string, scale: number): [string, string][] {
  const rounded = (sum: string) => `round(${sum}, ${scale})`;
  const split = (suffix: string, rev: string, txns: string): [string, string][] => [
    [`rev${suffix}`, rounded(rev)],
    [`txns${suffix}`, rounded(txns)],
    [`roas${suffix}`, ratio(rev, 'spend')],
    [`cac${suffix}`, ratio('spend', txns)],
  ];
  return [
    ...split('', 'rev', 'txns'),
    ['aov', ratio('rev', 'txns')],
    ...split('Ft', 'rev_ft', 'txns_ft'),
    ...split('Rtn', '(rev - rev_ft)', '(txns - txns_ft)'),
    ['visits', 'visits'],
    ['newVisits', 'new_visits'],
    ['newVisitsPercentage', ratio('new_visits * 100', 'visits')],
    ['ecr', ratio('txns', 'visits')],
    ['ecpc', ratio('spend', 'visits')],
  ];
}

/** A touchpoint's ad object, in spend's columns. */
export const AD_COLUMNS = ['platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id'];
/** A touchpoint's ad object in spend's columns: a touchpoint with no platform is its channel's. */
const AD_OBJECT_OF_TOUCHPOINT = `CASE WHEN platform_name = '' THEN channel ELSE platform_name END AS platform_name,
  ${AD_COLUMNS.slice(1).map((key) => `CASE WHEN platform_name = '' THEN '' ELSE ${key} END AS ${key}`).join(', ')}`;

/**
 * Touchpoints seldom know the ad account, which spend always names. Under the account breakdown,
 * `relation` (its `columns` and the ad-object columns) with each empty account replaced by the
 * account of the object's spend in the period (`object_accounts`), when that spend has one only;
 * so that an object's credits and visits are on the row of its spend.
 */
function withObjectAccounts(relation: string, columns: string[], objectKeys: string[]): string {
  const adColumns = AD_COLUMNS.map((key) =>
    key === 'platform_account_id' ? `coalesce(nullif(r.platform_account_id, ''), a.platform_account_id, '') AS platform_account_id` : `r.${key}`,
  );
  return `(SELECT ${[...columns.map((column) => `r.${column}`), ...adColumns].join(', ')}
             FROM ${relation} r LEFT JOIN object_accounts a ON ${objectKeys.map((key) => `a.${key} = r.${key}`).join(' AND ')})`;
}

/** When a credit counts: cash at its order's purchase; accrual at its touchpoint, an unattributed order's at its purchase. */
const COUNTED_AT: Record<AccountingMode, string> = { cash: 'time_of_purchase', accrual: 'coalesce(occurred_at, time_of_purchase)' };

export interface AttributionSqlContext {
  combinations: readonly AttributionCombination[];
  /** The statement's parameters: $1 client_id, $2 environment; pushed onto. */
  params: unknown[];
  /** The period, as SQL instants: [from, to). */
  fromInstant: string;
  toInstant: string;
  /** The bucket of an instant, in SQL. */
  bucketOf: (instant: string) => string;
  /** The ad-object columns rows are grouped by (spend's names), and the conditions of breakdown values on them. */
  keys: string[];
  kept: string[];
  /**
   * Where the credits and visits come from: computed from the paths of the period's orders and
   * touchpoints, or from the kept paths of the local days [fromDay, toDay), the days of the
   * orders the period counts (cash: its own; accrual: up to a window after it), or read from the
   * kept daily totals of the period's days (daily-totals.ts), which the transaction has brought
   * up to date. Those are written by this function's `paths` CTEs.
   */
  source?: { kind: 'paths' } | { kind: 'kept paths'; fromDay: string; toDay: string } | KeptDaysSource;
  /**
   * Under the account breakdown, whether an object's empty account is taken from the period's
   * spend (`records`): always, but when the daily totals are written, which keep the touchpoints' own.
   */
  accountsFromSpend?: boolean;
  /**
   * Whether the statement reads the sums that cost a probe each: rev_ft and txns_ft (an order's
   * probe for an earlier order of its customer) and new_visits (a visitor's probe for an earlier
   * visit). Those not read are zero. Left out: both are read.
   */
  reads?: OptionalSums;
  /** The weights the data-driven combinations credit by (learning/index.ts); needed when there is one. */
  learnt?: LearntWeights;
}

/** The sums of ATTRIBUTION_SUMS that an attributed statement may leave out (zero), and whether it reads them. */
export interface OptionalSums {
  firstOrders: boolean;
  newVisits: boolean;
}

/** Which optional sums metrics read, given each metric's expression (attributionMetrics). */
export function optionalSumsReadBy(expressions: readonly string[]): OptionalSums {
  const reads = (sum: string) => expressions.some((expression) => new RegExp(`\\b${sum}\\b`).test(expression));
  return { firstOrders: reads('rev_ft') || reads('txns_ft'), newVisits: reads('new_visits') };
}

/** The CTE `learnt_weights` of `learnt`, its rows parameters pushed onto `params`. */
export function learntWeightsCte({ weights }: LearntWeights, params: unknown[]): string {
  const column = <T>(of: (weight: LearntWeights['weights'][number]) => T) => `$${params.push(weights.map(of))}`;
  return `learnt_weights AS (
      SELECT * FROM unnest(${column((w) => w.model)}::text[], ${column((w) => w.windowDays)}::int[], ${column((w) => w.state)}::text[], ${column((w) => w.weight)}::bigint[])
                 AS w (model, window_days, state, weight))`;
}

/** The kept daily totals of the local days [fromDay, toDay) (SQL dates), and the bucket of such a day. */
export interface KeptDaysSource {
  kind: 'kept days';
  fromDay: string;
  toDay: string;
  bucketOfDay: (day: string) => string;
}

/** The key of a combination's kept daily totals (attribution_days.totals): `linear/30/cash`. */
export const keptTotalsKey = (model: ModelId, windowDays: number | string, mode: AccountingMode) => `${model}/${windowDays}/${mode}`;
/** The combination of a kept totals key, named by its model. */
export function combinationOfKeptTotals(key: string): AttributionCombination {
  const [model, windowDays, mode] = key.split('/') as [ModelId, string, AccountingMode];
  return { model, modelAsked: model, window: windowNamed(windowDays), accountingMode: mode };
}
/** The totals key of visits, which no model, window or mode changes. */
export const KEPT_VISITS = 'visits';
/** The totals key of kept paths (migration 0020), which every cash combination of their days is credited from. */
export const KEPT_PATHS = 'paths';

/**
 * Common table expressions `combinations` (one row per combination, with its position, its
 * window's `window_days`, and the model that credits it, which two combinations share when one
 * names it by an alias), and `credit_totals` and `visit_totals`: sums per combination (visits: the same in every
 * combination, so per bucket and `keys` only), bucket, `keys` and currency.
 *
 * Cash mode counts an order's credits in the bucket of its purchase, for orders placed in the
 * period; accrual mode each credit in the bucket of its touchpoint, for touchpoints in the
 * period, whose orders may be placed up to the largest window after it. An unattributed order
 * is counted in the bucket of its purchase, in the period, in both modes.
 *
 * They follow the export's `records` (its spend), which name the accounts of objects under the
 * account breakdown (`object_accounts`).
 */
export function attributionCtes({
  combinations,
  params,
  fromInstant,
  toInstant,
  bucketOf,
  keys,
  kept,
  source = { kind: 'paths' },
  accountsFromSpend = true,
  reads = { firstOrders: true, newVisits: true },
  learnt,
}: AttributionSqlContext): string[] {
  const models = [...new Set(combinations.map((combination) => combination.model))];
  if (models.some(isDataDriven) && !learnt) throw new Error('The data-driven models credit by the weights learnt: learnWeights first');
  const windows = [...new Set(combinations.map((combination) => combination.window))];
  const combinationsParams = [
    `$${params.push(combinations.map((combination) => combination.modelAsked))}::text[]`,
    `$${params.push(combinations.map((combination) => String(combination.window)))}::text[]`,
    `$${params.push(combinations.map((combination) => combination.accountingMode))}::text[]`,
    `$${params.push(combinations.map((combination) => combination.model))}::text[]`,
    `$${params.push(combinations.map((combination) => windowDaysSql(combination.window)))}::int[]`,
  ];
  const inPeriod = (instant: string) => `${instant} >= ${fromInstant} AND ${instant} < ${toInstant}`;
  const accrual = combinations.some((combination) => combination.accountingMode === 'accrual');
  // Accrual credits touchpoints of the period, of orders placed up to the largest window after it
  // (a touchpoint before `to` is in no path of an order placed that long after `to`), or ever after it.
  const orders = {
    purchasedFrom: fromInstant,
    purchasedBefore: !accrual
      ? toInstant
      : windows.includes(UNLIMITED)
        ? `'infinity'::timestamptz`
        : `${toInstant} + ${Math.max(...(windows as number[]))} * interval '${DAY_MS} milliseconds'`,
  };
  const CREDIT_COLUMNS = 'path_id, window_days, time_of_purchase, occurred_at, purchase_total, currency, first_order, credit_parts';
  const objectKeys = keys.filter((key) => key !== 'platform_account_id');
  const mapsAccounts = accountsFromSpend && keys.includes('platform_account_id');
  const accounted = (relation: string, columns: string[]) => (mapsAccounts ? withObjectAccounts(relation, columns, objectKeys) : relation);
  // One row per credit: a touchpoint's, or an unattributed order's (no touchpoint: counted at its
  // purchase in both modes). A touchpoint a model gives nothing has no credit row: its visits and
  // its spend make its rows, not a row of zeros on the day of a purchase it had no part in.
  const orderCredits = `SELECT model, path_id, window_days, time_of_purchase, CASE WHEN NOT unattributed THEN occurred_at END AS occurred_at,
           purchase_total, currency, first_order, credit_parts,
           CASE WHEN unattributed THEN '${UNATTRIBUTED}' WHEN platform_name = '' THEN channel ELSE platform_name END AS platform_name,
           ${AD_COLUMNS.slice(1).map((key) => `CASE WHEN unattributed OR platform_name = '' THEN '' ELSE ${key} END AS ${key}`).join(', ')}
      FROM (${creditsSql('candidates', models, learnt && { relation: 'learnt_weights', grouping: learnt.grouping })}) AS credited
     WHERE credit_parts > 0`;
  const keyList = keys.map((key) => `, ${key}`).join('');
  const where = (conditions: string[]) => (conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '');
  const combinationKeys = COMBINATION_KEYS.map((key) => `c.${key}`).join(', ');
  const parts = (sum: string, filter = '') => `sum(${sum})${filter} * ${CREDIT_PART}`;
  // A visit is new when it is its visitor's first ever (a touchpoint without a visitor is its customer's):
  // the first of the period, when the visitor has no visit before the period. The first of the
  // period is found by hashing (the earliest time of each visitor, then its visits at that time)
  // rather than by sorting the period's visits by visitor: 5 million of them over a year.
  const visitedBefore = (match: string) =>
    `EXISTS (SELECT FROM touchpoints e WHERE e.client_id = $1 AND e.environment = $2 AND e.type = 'visit' AND ${match} AND e.occurred_at < ${fromInstant})`;
  const periodVisits = `
      SELECT t.touchpoint_id, t.occurred_at, t.visitor_id, t.customer_id,
             coalesce(t.visitor_id, '') AS visitor_key, CASE WHEN t.visitor_id IS NULL THEN t.customer_id ELSE '' END AS customer_key,
             ${AD_OBJECT_OF_TOUCHPOINT}
        FROM touchpoints t
       WHERE t.client_id = $1 AND t.environment = $2 AND t.type = 'visit' AND ${inPeriod('t.occurred_at')}`;
  const newVisits = `
      SELECT DISTINCT ON (v.visitor_key, v.customer_key) v.*
        FROM period_visits v
        JOIN (SELECT visitor_key, customer_key, min(occurred_at) AS first_at FROM period_visits GROUP BY visitor_key, customer_key) AS f
          ON f.visitor_key = v.visitor_key AND f.customer_key = v.customer_key AND f.first_at = v.occurred_at
       ORDER BY v.visitor_key, v.customer_key, v.touchpoint_id`;
  const notVisitedBefore = `NOT CASE WHEN n.visitor_id IS NULL THEN ${visitedBefore('e.visitor_id IS NULL AND e.customer_id = n.customer_id')}
                                    ELSE ${visitedBefore('e.visitor_id = n.visitor_id')} END`;
  const modes = [...new Set(combinations.map((combination) => combination.accountingMode))];
  const creditsCountedIn = (mode: AccountingMode, conditions: string[] = []) => {
    const at = COUNTED_AT[mode];
    return `SELECT model, window_days, '${mode}'::text AS mode, ${bucketOf(at)} AS bucket${keyList}, currency,
             ${parts('credit_parts * purchase_total')} AS rev, ${parts('credit_parts')} AS txns,
             coalesce(${parts('credit_parts * purchase_total', ' FILTER (WHERE first_order)')}, 0) AS rev_ft,
             coalesce(${parts('credit_parts', ' FILTER (WHERE first_order)')}, 0) AS txns_ft
        FROM ${accounted('order_credits', ['model', ...CREDIT_COLUMNS.split(', ')])} AS k ${where([inPeriod(at), ...kept, ...conditions])}
       GROUP BY model, window_days, ${bucketOf(at)}${keyList}, currency`;
  };
  const preamble = [
    ...(mapsAccounts
      ? [
          `object_accounts AS (
      SELECT ${objectKeys.join(', ')}, min(platform_account_id) AS platform_account_id FROM records
       GROUP BY ${objectKeys.join(', ')} HAVING count(DISTINCT platform_account_id) = 1)`,
        ]
      : []),
    `combinations AS (
      SELECT * FROM unnest(${combinationsParams.join(', ')}) WITH ORDINALITY AS c (${ATTRIBUTION_COLUMNS.join(', ')}, credited_by, window_days, combination))`,
    ...(learnt ? [learntWeightsCte(learnt, params)] : []),
  ];
  if (source.kind === 'kept days') {
    const { fromDay, toDay, bucketOfDay } = source;
    const keptDays = (table: string, extra = '') =>
      `(SELECT * FROM ${table} WHERE client_id = $1 AND environment = $2${extra} AND day >= ${fromDay} AND day < ${toDay})`;
    const totalsKeys = `$${params.push(combinations.map((combination) => keptTotalsKey(combination.model, windowDaysSql(combination.window)!, combination.accountingMode)))}::text[]`;
    // Accrual days kept with the orders before a day (migration 0022) take the credits of the
    // orders from that day on as they are read: found by index (a day or two of them), credited,
    // and counted on the days kept without them.
    const ordersBefore = `(SELECT min(m.orders_before) FROM attribution_days m
                            WHERE m.client_id = $1 AND m.environment = $2 AND m.totals = ANY (${totalsKeys}) AND m.day >= ${fromDay} AND m.day < ${toDay})`;
    const countedAsRead = `EXISTS (SELECT FROM attribution_days m
                                    WHERE m.client_id = $1 AND m.environment = $2 AND m.totals = k.model || '/' || k.window_days || '/accrual'
                                      AND m.day = (coalesce(k.occurred_at, k.time_of_purchase) AT TIME ZONE $3)::date
                                      AND k.time_of_purchase >= ${localDayStart('m.orders_before', '$3')})`;
    const creditedAsRead = accrual
      ? [
          `order_credits AS (
      WITH ${pathsSql({ clientId: '$1', environment: '$2', orders: { purchasedFrom: localDayStart(ordersBefore, '$3'), purchasedBefore: orders.purchasedBefore, byIndex: true }, windows, firstOrders: reads.firstOrders })}
      ${orderCredits})`,
        ]
      : [];
    return [
      ...preamble,
      ...creditedAsRead,
      `credit_totals AS (
      SELECT ${combinationKeys}, k.bucket${keyList}, k.currency, sum(k.rev) AS rev, sum(k.txns) AS txns, sum(k.rev_ft) AS rev_ft, sum(k.txns_ft) AS txns_ft
        FROM (SELECT totals, ${bucketOfDay('day')} AS bucket${keyList}, currency, rev, txns, rev_ft, txns_ft
                FROM ${accounted(keptDays('attribution_credit_days', ` AND totals = ANY (${totalsKeys})`), ['totals', 'day', 'currency', 'rev', 'txns', 'rev_ft', 'txns_ft'])} AS k
               ${where(kept)}
              ${accrual ? `UNION ALL SELECT model || '/' || window_days || '/' || mode, bucket${keyList}, currency, rev, txns, rev_ft, txns_ft FROM (${creditsCountedIn('accrual', [countedAsRead])}) AS r` : ''}) AS k
        JOIN combinations c ON c.credited_by || '/' || c.window_days || '/' || c.accounting_mode = k.totals
       GROUP BY ${combinationKeys}, k.bucket${keyList}, k.currency)`,
      `visit_totals AS (
      SELECT ${bucketOfDay('day')} AS bucket${keyList}, sum(visits)::bigint AS visits, sum(new_visits)::bigint AS new_visits
        FROM ${accounted(keptDays('attribution_visit_days'), ['day', 'visits', 'new_visits'])} AS v
       ${where(kept)}
       GROUP BY 1${keyList})`,
    ];
  }
  const pathsOf = source.kind === 'kept paths' ? { keptFrom: source.fromDay, keptBefore: source.toDay } : orders;
  return [
    ...preamble,
    // Paths are built in a WITH of their own, whose names cannot meet the export's.
    `order_credits AS (
      WITH ${pathsSql({ clientId: '$1', environment: '$2', orders: pathsOf, windows, firstOrders: reads.firstOrders })}
      ${orderCredits})`,
    // Each mode's sums are made apart, by hashing the credits once per mode, rather than by
    // sorting every credit once per combination (a year of three models took 50 s to sort).
    `credit_totals AS (
      SELECT ${combinationKeys}, k.bucket${keyList}, k.currency, k.rev, k.txns, k.rev_ft, k.txns_ft
        FROM (${modes.map((mode) => creditsCountedIn(mode)).join('\nUNION ALL\n')}) AS k
        JOIN combinations c ON c.credited_by = k.model AND c.window_days IS NOT DISTINCT FROM k.window_days AND c.accounting_mode = k.mode)`,
    `visit_totals AS (
      WITH period_visits AS MATERIALIZED (${periodVisits})${reads.newVisits ? `,
      new_visits AS (SELECT * FROM (${newVisits}) AS n WHERE ${notVisitedBefore})` : ''}
      SELECT ${bucketOf('occurred_at')} AS bucket${keyList}, sum(visit) AS visits, sum(new_visit) AS new_visits
        FROM ${accounted(
          `(SELECT occurred_at, ${AD_COLUMNS.join(', ')}, 1 AS visit, 0 AS new_visit FROM period_visits
            ${reads.newVisits ? `UNION ALL SELECT occurred_at, ${AD_COLUMNS.join(', ')}, 0, 1 FROM new_visits` : ''})`,
          ['occurred_at', 'visit', 'new_visit'],
        )} AS v
       ${where(kept)}
       GROUP BY 1${keyList})`,
  ];
}
