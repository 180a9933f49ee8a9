import { CREDIT_PART, creditsSql } from '../attribution/credits-sql.js';
import { CREDIT_PARTS, DAY_MS, UNATTRIBUTED, type ModelId, type WindowDays } from '../attribution/models.js';
import { pathsSql } from '../attribution/paths.js';

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

/** A set of attributed rows: a model, its lookback window in days, and when a credit counts (its accounting mode). */
export interface AttributionCombination {
  model: ModelId;
  windowDays: WindowDays;
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

/** A touchpoint's ad object in spend's columns: a touchpoint with no platform is its channel's. */
const AD_OBJECT_OF_TOUCHPOINT = `CASE WHEN platform_name = '' THEN channel ELSE platform_name END AS platform_name,
  ${['platform_account_id', 'campaign_id', 'adset_id', 'ad_id'].map((key) => `CASE WHEN platform_name = '' THEN '' ELSE ${key} END AS ${key}`).join(', ')}`;

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
}

/**
 * Common table expressions `combinations` (one row per combination, with its position), and
 * `credit_totals` and `visit_totals`: sums per combination (visits: the same in every
 * combination, so per bucket and `keys` only), bucket, `keys` and currency.
 *
 * Cash mode counts an order's credits in the bucket of its purchase, for orders placed in the
 * period; accrual mode each credit in the bucket of its touchpoint, for touchpoints in the
 * period, whose orders may be placed up to the largest window after it. An unattributed order
 * is counted in the bucket of its purchase, in the period, in both modes.
 */
export function attributionCtes({ combinations, params, fromInstant, toInstant, bucketOf, keys, kept }: AttributionSqlContext): string[] {
  const models = [...new Set(combinations.map((combination) => combination.model))];
  const windows = [...new Set(combinations.map((combination) => combination.windowDays))];
  const modelsParam = `$${params.push(models)}::text[]`;
  const combinationsParams = [
    `$${params.push(combinations.map((combination) => combination.model))}::text[]`,
    `$${params.push(combinations.map((combination) => combination.windowDays))}::int[]`,
    `$${params.push(combinations.map((combination) => combination.accountingMode))}::text[]`,
  ];
  const inPeriod = (instant: string) => `${instant} >= ${fromInstant} AND ${instant} < ${toInstant}`;
  const accrual = combinations.some((combination) => combination.accountingMode === 'accrual');
  // Accrual credits touchpoints of the period, of orders placed up to the largest window after it.
  const orders = accrual
    ? `o.time_of_purchase >= ${fromInstant} AND o.time_of_purchase <= ${toInstant} + ${Math.max(...windows)} * interval '${DAY_MS} milliseconds'`
    : inPeriod('o.time_of_purchase');
  const CREDIT_COLUMNS = 'path_id, window_days, time_of_purchase, occurred_at, purchase_total, currency, first_order, credit_parts';
  const credited = models.map(
    (model) => `SELECT '${model}'::text AS model, ${CREDIT_COLUMNS}, ${AD_OBJECT_OF_TOUCHPOINT} FROM (${creditsSql('candidates', model)}) AS credited_${model}`,
  );
  const keyList = keys.map((key) => `, ${key}`).join('');
  const where = (conditions: string[]) => (conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '');
  const combinationKeys = COMBINATION_KEYS.map((key) => `c.${key}`).join(', ');
  const creditBucket = bucketOf('counted.at');
  const parts = (sum: string, filter = '') => `sum(${sum})${filter} * ${CREDIT_PART}`;
  const newVisit = (match: string) =>
    `NOT EXISTS (SELECT FROM touchpoints e WHERE e.client_id = $1 AND e.environment = $2 AND e.type = 'visit' AND ${match}
                   AND (e.occurred_at, e.touchpoint_id) < (t.occurred_at, t.touchpoint_id))`;
  return [
    `combinations AS (
      SELECT * FROM unnest(${combinationsParams.join(', ')}) WITH ORDINALITY AS c (${ATTRIBUTION_COLUMNS.join(', ')}, combination))`,
    // Paths are built in a WITH of their own, whose names cannot meet the export's.
    `order_credits AS (
      WITH ${pathsSql({ clientId: '$1', environment: '$2', orders, windows })},
      credited AS (${credited.join('\nUNION ALL ')})
      SELECT model, ${CREDIT_COLUMNS}, platform_name, platform_account_id, campaign_id, adset_id, ad_id FROM credited
      UNION ALL
      SELECT m.model, p.path_id, p.window_days, p.time_of_purchase, NULL, p.purchase_total, p.currency, p.first_order, ${CREDIT_PARTS},
             '${UNATTRIBUTED}', '', '', '', ''
        FROM paths p CROSS JOIN unnest(${modelsParam}) AS m (model)
       WHERE ${inPeriod('p.time_of_purchase')} AND NOT EXISTS (SELECT FROM credited c WHERE c.model = m.model AND c.path_id = p.path_id))`,
    `credit_totals AS (
      SELECT ${combinationKeys}, ${creditBucket} AS bucket${keyList}, currency,
             ${parts('credit_parts * purchase_total')} AS rev, ${parts('credit_parts')} AS txns,
             coalesce(${parts('credit_parts * purchase_total', ' FILTER (WHERE first_order)')}, 0) AS rev_ft,
             coalesce(${parts('credit_parts', ' FILTER (WHERE first_order)')}, 0) AS txns_ft
        FROM order_credits k
        JOIN combinations c ON c.attribution_model = k.model AND c.attribution_window = k.window_days
        CROSS JOIN LATERAL (SELECT CASE WHEN c.accounting_mode = 'accrual' AND k.occurred_at IS NOT NULL THEN k.occurred_at ELSE k.time_of_purchase END AS at) AS counted
       ${where([inPeriod('counted.at'), ...kept])}
       GROUP BY ${combinationKeys}, ${creditBucket}${keyList}, currency)`,
    `visit_totals AS (
      SELECT ${bucketOf('occurred_at')} AS bucket${keyList}, count(*) AS visits, count(*) FILTER (WHERE new_visit) AS new_visits
        FROM (SELECT t.occurred_at, ${AD_OBJECT_OF_TOUCHPOINT},
                     CASE WHEN t.visitor_id IS NOT NULL THEN ${newVisit('e.visitor_id = t.visitor_id')}
                          ELSE ${newVisit('e.visitor_id IS NULL AND e.customer_id = t.customer_id')} END AS new_visit
                FROM touchpoints t
               WHERE t.client_id = $1 AND t.environment = $2 AND t.type = 'visit' AND ${inPeriod('t.occurred_at')}) AS v
       ${where(kept)}
       GROUP BY 1${keyList})`,
  ];
}
