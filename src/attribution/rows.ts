import type { Tenant } from '../auth/tenant.js';
import type { Database, Queryable } from '../db/index.js';
import { localDayStart } from '../db/local-days.js';
import {
  ATTRIBUTION_COLUMNS,
  ATTRIBUTION_SUMS,
  COMBINATION_KEYS,
  attributionCtes,
  attributionMetrics,
  optionalSumsReadBy,
  type AttributionCombination,
} from './attributed-rows.js';
import { PLATFORM_METRICS, platformNamesOf, type BreakdownKey, type PlatformMetric } from './catalog.js';
import type { LearntWeights } from './learning/index.js';

export type { AccountingMode, AttributionCombination } from './attributed-rows.js';
/**
 * The period an export covers, half-open: `from` inclusive, `to` exclusive. Relative periods are
 * whole local days of the client's time zone (`YYYY-MM-DD`, midnight there, whatever its offset
 * that day); a FIXED period is two instants.
 */
export type Period = { kind: 'days'; from: string; to: string } | { kind: 'instants'; from: string; to: string };

/** PERIOD, which reports ask for and exports do not offer, makes the whole period one bucket, dated by its first day. */
export type Granularity = 'HOURLY' | 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'PERIOD';
export type Level = 'platform' | 'campaign' | 'adset' | 'ad';

/** What decides the rows of an export: the part of its plan (plan.ts) that the row builder runs. */
export interface RowsPlan {
  timeZone: string;
  period: Period;
  granularity: Granularity;
  /** The ad objects rows are made of; null sums over all of them per bucket (export_aggregation DATE). */
  level: Level | null;
  /** Labels that split the rows of ad objects; `values`, when not empty, keeps only rows with one of them. */
  breakdowns: { key: BreakdownKey; values: string[] }[];
  includeIds: boolean;
  /** Adds the `kind` column: the level of a row's ad objects, `store` on a store row. */
  includeKind: boolean;
  removeZeroSpend: boolean;
  /** Adds the order metrics, on a row per bucket and currency for the whole store. */
  withOrders: boolean;
  /**
   * One set of rows per combination, each with the attribution metrics: the ad objects of spend
   * and of touchpoints, and the unattributed orders. None (or left out): the rows of spend and the store.
   */
  attribution?: AttributionCombination[];
  /**
   * Reads the credits and visits from the kept daily totals (daily-totals.ts) instead of the
   * paths: for whole local days at DAILY or longer buckets, windows other than UNLIMITED, and
   * only in a transaction that has brought those totals up to date first (reports do).
   */
  fromKeptTotals?: boolean;
  /**
   * The metrics the statement computes (ids, aliases resolved). Left out: every metric of its rows,
   * except the platform metrics (googleClicks), which are computed when named only.
   */
  metricsComputed?: readonly string[];
  /**
   * The part of the period whose buckets the statement computes: from the start of the local day
   * `fromDay`, before the start of `toDay`, each the first day of a bucket (slices.ts). Spend of
   * the whole period still names the objects and their accounts, so that the rows of a slice are
   * those of the whole period's statement. Left out: the whole period.
   */
  slice?: { fromDay?: string; toDay?: string };
  /** The weights of the data-driven combinations (learnWeights), needed when there is one. */
  learnt?: LearntWeights;
}

export interface ExportRowsQuery extends RowsPlan {
  tenant: Tenant;
}

/** A column of ad-object rows: the spend column that tells objects apart, and the one naming them, if any. */
interface Dimension {
  column: string;
  key: string;
  name?: string;
}

const PLATFORM: Dimension = { column: 'platform', key: 'platform_name' };
const ACCOUNT: Dimension = { column: 'account', key: 'platform_account_id' };
const OBJECTS: Dimension[] = [
  { column: 'campaign', key: 'campaign_id', name: 'campaign_name' },
  { column: 'adset', key: 'adset_id', name: 'adset_name' },
  { column: 'ad', key: 'ad_id', name: 'ad_name' },
];
const LEVEL_DEPTH: Record<Level, number> = { platform: 0, campaign: 1, adset: 2, ad: 3 };
const BREAKDOWNS: Record<BreakdownKey, Dimension> = { platform: PLATFORM, account: ACCOUNT };

/** The columns of a dimension: its own, and its id when ids are included and it has a name apart. */
const columnsOf = ({ column, name }: Dimension, includeIds: boolean) => (name && includeIds ? [column, `${column}_id`] : [column]);

/**
 * The columns whose text the client chose (in its spend records): names and ids of platforms,
 * accounts and ad objects. The other columns are ours: dates, `kind`, a currency from a fixed list.
 */
export const CLIENT_TEXT_COLUMNS = [PLATFORM, ACCOUNT, ...OBJECTS].flatMap((dimension) => columnsOf(dimension, true));

/** Every column an export may have before its metrics. */
export const DIMENSION_COLUMNS = ['date', ...CLIENT_TEXT_COLUMNS, 'kind', 'currency', ...ATTRIBUTION_COLUMNS];

/** A period's $4 and $5, when they are local days of the zone $3, as the instants they start at. */
export const LOCAL_DAYS_AS_INSTANTS = [localDayStart('$4::date', '$3'), localDayStart('$5::date', '$3')] as const;

const SPEND_COLUMNS = 'platform_name, platform_account_id, campaign_id, adset_id, ad_id, campaign_name, adset_name, ad_name, spend, spend_currency, impressions, clicks';
const UNITS: Record<Exclude<Granularity, 'HOURLY' | 'PERIOD'>, string> = { DAILY: 'day', WEEKLY: 'week', MONTHLY: 'month' };
/** Ratios are rounded to this many decimal places. */
const RATIO_SCALE = 6;
const ratio = (numerator: string, denominator: string) => `round(${numerator} / nullif(${denominator}, 0), ${RATIO_SCALE})`;
/** A metric's column in SQL: ids in camel case (revFt) are quoted to keep their case. */
export const columnName = (metric: string) => (/^[a-z_]+$/.test(metric) ? metric : `"${metric}"`);

/** The sums a row is made of, and the metrics computed from them; order sums are null on ad-object rows. */
const SPEND_SUMS = ['spend', 'impressions', 'clicks'];
/**
 * A platform metric (catalog.ts) is a spend sum of its own: its figure summed over the records of
 * its platform only, by the rules of the figure's sum everywhere else (spend_google, clicks_meta).
 */
const platformSumOf = ({ figure, platform }: PlatformMetric) => `${figure}_${platform.prefix}`;
const ORDER_SUMS: [string, string][] = [
  ['revenue', 'numeric'],
  ['transactions', 'bigint'],
  ['refunds', 'numeric'],
  ['new_customers', 'bigint'],
  ['returning_customers', 'bigint'],
];
const SPEND_METRICS: [string, string][] = [
  ['spend', 'spend'],
  ['impressions', 'impressions'],
  ['clicks', 'clicks'],
  ['ctr', ratio('clicks', 'impressions')],
  ['cpc', ratio('spend', 'clicks')],
  ['cpm', ratio('spend * 1000', 'impressions')],
];
const ORDER_METRICS: [string, string][] = [
  ['revenue', 'revenue'],
  ['transactions', 'transactions'],
  ['aov', ratio('revenue', 'transactions')],
  ['refunds', 'refunds'],
  ['net_revenue', 'revenue - refunds'],
  ['new_customers', 'new_customers'],
  ['returning_customers', 'returning_customers'],
  ['mer', ratio('revenue', 'spend')],
  ['blended_cac', ratio('spend', 'new_customers')],
];

/**
 * The rows of an export, as one SQL statement with its parameters, and the names of its columns
 * (dimensions, then every metric it computes). Money is never summed across currencies: the
 * currency is a column of every row.
 *
 * Rows of ad objects (a `level`, breakdowns) hold the spend metrics. A store row per bucket and
 * currency sums the spend of every ad object, whatever the breakdowns keep, and holds the order
 * metrics beside it; it is there when the export asks for order metrics, or has no ad objects.
 *
 * Hourly and daily records are never added together. HOURLY buckets read hourly records only.
 * Longer buckets read daily records, and roll up the hourly records of an ad object's day only
 * when that day has no daily record (a day is a day of the client's time zone). An hour is
 * bucketed by its instant, so the two 01:00s of the night clocks go back are two rows.
 */
export function exportRowsSql(query: ExportRowsQuery): { sql: string; params: unknown[]; columns: string[] } {
  const {
    tenant,
    timeZone,
    period,
    granularity,
    level,
    breakdowns,
    includeIds,
    includeKind,
    removeZeroSpend,
    withOrders,
    attribution = [],
    fromKeptTotals = false,
    metricsComputed,
    slice = {},
    learnt,
  } = query;
  const attributed = attribution.length > 0;
  const params: unknown[] = [tenant.clientId, tenant.environment, timeZone, period.from, period.to];
  // The spend sums of every row: the figures, and the platform metrics' figures asked for. A sum of
  // records is the same expression on the rows of ad objects and of the store, so that a platform's
  // figures on its own rows add up to its part of the store's.
  const platformMetrics = PLATFORM_METRICS.filter((metric) => metricsComputed?.includes(metric.id));
  const platformNames = new Map<string, string>();
  const recordSums = new Map(SPEND_SUMS.map((sum) => [sum, `sum(${sum})`]));
  for (const metric of platformMetrics) {
    const { figure, platform } = metric;
    if (!platformNames.has(platform.prefix)) platformNames.set(platform.prefix, `$${params.push(platformNamesOf(platform))}::text[]`);
    recordSums.set(platformSumOf(metric), `coalesce(sum(${figure}) FILTER (WHERE lower(platform_name) = ANY(${platformNames.get(platform.prefix)})), 0)`);
  }
  const spendSums = [...recordSums.keys()];
  const sumOfRecords = (sum: string) => `${recordSums.get(sum)} AS ${sum}`;
  if ((slice.fromDay || slice.toDay) && (granularity === 'HOURLY' || granularity === 'PERIOD' || fromKeptTotals)) {
    throw new Error('A slice is made of whole local days, and of the buckets of DAILY, WEEKLY or MONTHLY rows computed from the paths');
  }
  // The slice's first and last days: spend's buckets are local times, orders and touchpoints are
  // taken from the instants the days start at.
  const [sliceFrom, sliceTo] = [slice.fromDay, slice.toDay].map((day) => (day ? `$${params.push(day)}::date` : undefined));
  const bucketsInSlice = [...(sliceFrom ? [`bucket >= ${sliceFrom}::timestamp`] : []), ...(sliceTo ? [`bucket < ${sliceTo}::timestamp`] : [])];
  const whereInSlice = bucketsInSlice.length > 0 ? `WHERE ${bucketsInSlice.join(' AND ')}` : '';
  // $4 and $5 as instants, and as local days of the client's zone.
  const [fromInstant, toInstant] = period.kind === 'days' ? LOCAL_DAYS_AS_INSTANTS : ['$4::timestamptz', '$5::timestamptz'];
  const [fromDay, toDay] =
    period.kind === 'days'
      ? ['$4::date', '$5::date']
      : ['($4::timestamptz AT TIME ZONE $3)::date', "(($5::timestamptz - interval '1 microsecond') AT TIME ZONE $3)::date + 1"];
  const periodStart = `(${fromInstant} AT TIME ZONE $3)`;
  /**
   * The bucket of an instant: its hour, or the local day, week (from Monday) or month it falls in,
   * or the period's; an instant before the period (a customer's first order) is before its bucket.
   */
  const bucketOf = (instant: string) =>
    granularity === 'HOURLY'
      ? `date_trunc('hour', ${instant} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
      : granularity === 'PERIOD'
        ? `(CASE WHEN ${instant} < ${fromInstant} THEN '-infinity'::timestamp ELSE ${periodStart} END)`
        : `date_trunc('${UNITS[granularity]}', ${instant} AT TIME ZONE $3)`;
  /** The bucket of a local day of the period (a kept daily total's). */
  const bucketOfDay = (day: string) => {
    if (granularity === 'HOURLY' || period.kind !== 'days') throw new Error('Kept daily totals make buckets of whole days only');
    return granularity === 'PERIOD' ? periodStart : `date_trunc('${UNITS[granularity]}', ${day}::timestamp)`;
  };
  const source = fromKeptTotals ? { kind: 'kept days' as const, fromDay, toDay, bucketOfDay } : undefined;
  const label =
    granularity === 'HOURLY'
      ? `to_char(bucket AT TIME ZONE $3, 'YYYY-MM-DD"T"HH24:MI:SS') || utc_offset(bucket, $3)`
      : "to_char(bucket, 'YYYY-MM-DD')";

  const hourly = `SELECT period AT TIME ZONE $3 AS local_time, period AS instant, ${SPEND_COLUMNS} FROM spend_hourly
    WHERE client_id = $1 AND environment = $2 AND period >= ${fromInstant} AND period < ${toInstant}`;
  const daily = `SELECT period::timestamp AS local_time, NULL::timestamptz AS instant, ${SPEND_COLUMNS} FROM spend_daily
    WHERE client_id = $1 AND environment = $2 AND period >= ${fromDay} AND period < ${toDay}`;
  const records =
    granularity === 'HOURLY'
      ? `SELECT *, instant AS bucket FROM (${hourly}) AS h`
      : `SELECT *, ${granularity === 'PERIOD' ? periodStart : `date_trunc('${UNITS[granularity]}', local_time)`} AS bucket FROM (
          ${daily} UNION ALL SELECT h.* FROM (${hourly}) AS h
          WHERE NOT EXISTS (SELECT 1 FROM spend_daily d
                             WHERE d.client_id = $1 AND d.environment = $2 AND d.period = h.local_time::date
                               AND (d.platform_name, d.platform_account_id, d.campaign_id, d.adset_id, d.ad_id)
                                 = (h.platform_name, h.platform_account_id, h.campaign_id, h.adset_id, h.ad_id))) AS r`;

  // Every ad-object row names its platform: an account id is an account of one platform.
  const accountBreakdown = breakdowns.some((breakdown) => breakdown.key === 'account');
  const dimensions = [
    ...(level !== null || breakdowns.length > 0 ? [PLATFORM] : []),
    ...(accountBreakdown ? [ACCOUNT] : []),
    ...(level !== null ? OBJECTS.slice(0, LEVEL_DEPTH[level]) : []),
  ];
  const kindColumn = includeKind && level !== null;
  const objectRows = dimensions.length > 0;
  const storeRows = !objectRows || withOrders;

  // The output columns of every row, and the hidden ones rows are sorted by.
  const columns = ['date', ...dimensions.flatMap((dimension) => columnsOf(dimension, includeIds))];
  const sortKeys = dimensions.map((_, index) => `key_${index}`);
  if (kindColumn) columns.push('kind');
  columns.push('currency');
  if (attributed) columns.push(...ATTRIBUTION_COLUMNS);
  const sums = [...spendSums, ...(withOrders ? ORDER_SUMS.map(([sum]) => sum) : [])];
  // An attributed export's aov is that of its rows' attributed orders.
  const metrics = [
    ...SPEND_METRICS,
    ...platformMetrics.map((metric): [string, string] => [metric.id, platformSumOf(metric)]),
    ...(withOrders ? ORDER_METRICS.filter(([metric]) => !(attributed && metric === 'aov')) : []),
    ...(attributed ? attributionMetrics(ratio, RATIO_SCALE) : []),
  ].filter(([metric]) => !metricsComputed || metricsComputed.includes(metric));
  // Sums that cost a probe an order or a visitor are worked out only for the metrics that read them.
  const reads = optionalSumsReadBy(metrics.map(([, expression]) => expression));
  // An hour of spend is in the period when it starts in it; orders, refunds and touchpoints are
  // taken by the same rule, so no hour is cut short (a local midnight is not always an hour's start).
  const ceilHour = (instant: string) => `(date_trunc('hour', ${instant} AT TIME ZONE 'UTC' - interval '1 microsecond') AT TIME ZONE 'UTC' + interval '1 hour')`;
  const [ordersFrom, ordersTo] = granularity === 'HOURLY' ? [ceilHour(fromInstant), ceilHour(toInstant)] : [sliceFrom ? localDayStart(sliceFrom, '$3') : fromInstant, sliceTo ? localDayStart(sliceTo, '$3') : toInstant];

  const parts: string[] = [];
  const ctes = [`records AS (${records})`];
  if (objectRows) {
    // An object renamed within the period is one object, shown under the name of its latest
    // record (on the night clocks go back, the later of two equal local times). Objects are told
    // apart as the rows are: by platform, account when it is a breakdown, and ids.
    const partition: string[] = [];
    const latestNames: string[] = [];
    const shown: string[] = [];
    for (const { column, key, name } of dimensions) {
      partition.push(key);
      if (!name) {
        shown.push(`${key} AS ${column}`);
        continue;
      }
      latestNames.push(`first_value(${name}) OVER (PARTITION BY ${partition.join(', ')}
        ORDER BY local_time DESC, instant DESC NULLS LAST) AS latest_${name}`);
      shown.push(`max(latest_${name}) AS ${column}`);
      if (includeIds) shown.push(`${key} AS ${column}_id`);
    }
    const selected = ['bucket', ...dimensions.map(({ key }, index) => `${key} AS key_${index}`), ...shown];
    if (kindColumn) selected.push(`'${level}' AS kind`);
    selected.push('spend_currency AS currency', ...spendSums.map(sumOfRecords));
    if (withOrders) selected.push(...ORDER_SUMS.map(([sum, type]) => `NULL::${type} AS ${sum}`));
    const kept = breakdowns
      .filter((breakdown) => breakdown.values.length > 0)
      .map((breakdown) => `${BREAKDOWNS[breakdown.key].key} = ANY($${params.push(breakdown.values)}::text[])`);
    ctes.push(`named_records AS (SELECT *${latestNames.map((expression) => `, ${expression}`).join('')} FROM records
             ${kept.length > 0 ? `WHERE ${kept.join(' AND ')}` : ''})`);
    const objectSpend = `SELECT ${selected.join(', ')} FROM named_records ${whereInSlice}
      GROUP BY bucket, ${partition.join(', ')}, spend_currency`;
    if (!attributed) parts.push(objectSpend);
    else {
      // Objects with credits or visits and no spend in the period are named by their ids.
      ctes.push(
        `object_spend AS (${objectSpend})`,
        ...attributionCtes({ combinations: attribution, params, fromInstant: ordersFrom, toInstant: ordersTo, bucketOf, keys: partition, kept, source, reads, learnt }),
      );
      const keyColumns = partition.map((key, index) => `${key} AS key_${index}`);
      // Spend and credits of an object in a bucket and currency are added up, not joined: a full
      // join sorted both sides, 40 s of the year's export.
      const creditSums = ['rev', 'txns', 'rev_ft', 'txns_ft'];
      const noneOf = (sums: string[]) => sums.map((sum) => `NULL::numeric AS ${sum}`).join(', ');
      const money = `SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${sortKeys.join(', ')}, currency, ${spendSums.join(', ')}, ${noneOf(creditSums)}
        FROM object_spend CROSS JOIN combinations`;
      const credits = `SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${keyColumns.join(', ')}, currency, ${noneOf(spendSums)}, ${creditSums.join(', ')}
        FROM credit_totals`;
      const amounts = `SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${sortKeys.join(', ')}, currency,
             ${[...spendSums, ...creditSums].map((sum) => `sum(${sum}) AS ${sum}`).join(', ')}
        FROM (${money} UNION ALL ${credits}) AS amounts
       GROUP BY ${COMBINATION_KEYS.join(', ')}, bucket, ${sortKeys.join(', ')}, currency`;
      const visits = `SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${keyColumns.join(', ')}, visits, new_visits FROM visit_totals CROSS JOIN combinations`;
      // Names of the whole period's spend: an object of a slice may have its spend in another.
      const names = `SELECT ${[...keyColumns, ...dimensions.filter((dimension) => dimension.name).map(({ column, name }) => `max(latest_${name}) AS ${column}`)].join(', ')}
        FROM named_records GROUP BY ${partition.join(', ')}`;
      const objectColumns = dimensions.flatMap(({ column, name }, index) =>
        !name ? [`key_${index} AS ${column}`] : [`coalesce(${column}, key_${index}) AS ${column}`, ...(includeIds ? [`key_${index} AS ${column}_id`] : [])],
      );
      parts.push(`SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${sortKeys.join(', ')}, ${objectColumns.join(', ')}${kindColumn ? `, '${level}' AS kind` : ''}, currency,
             ${spendSums.map((sum) => `coalesce(${sum}, 0) AS ${sum}`).join(', ')},
             ${withOrders ? ORDER_SUMS.map(([sum, type]) => `NULL::${type} AS ${sum}, `).join('') : ''}
             ${ATTRIBUTION_SUMS.map(([sum]) => `coalesce(${sum}, 0) AS ${sum}`).join(', ')}
        FROM (${amounts}) AS amounts
        FULL JOIN (${visits}) AS visits USING (${COMBINATION_KEYS.join(', ')}, bucket, ${sortKeys.join(', ')})
        LEFT JOIN (${names}) AS names USING (${sortKeys.join(', ')})`);
    }
  }
  if (storeRows) {
    ctes.push(`store_spend AS (
      SELECT bucket, spend_currency AS currency, ${spendSums.map(sumOfRecords).join(', ')}
        FROM records ${whereInSlice} GROUP BY bucket, spend_currency)`);
    const blank = (column: string) => `NULL::text AS ${column}`;
    const selected = [
      'bucket',
      ...sortKeys.map(blank),
      ...columns.slice(1, columns.indexOf('currency')).map((column) => (column === 'kind' ? "'store' AS kind" : blank(column))),
      'currency',
    ];
    let storeSql: string;
    if (withOrders) {
      ctes.push(...orderTotals(ordersFrom, ordersTo, bucketOf));
      selected.push(...sums.map((sum) => `coalesce(${sum}, 0) AS ${sum}`));
      storeSql = `SELECT ${selected.join(', ')}
        FROM store_spend FULL JOIN order_totals USING (bucket, currency) FULL JOIN refund_totals USING (bucket, currency)`;
    } else {
      selected.push(...spendSums);
      storeSql = `SELECT ${selected.join(', ')} FROM store_spend`;
    }
    if (!attributed) parts.push(storeSql);
    else if (objectRows) {
      // Beside ad-object rows, the store row of each combination leaves the credits to them.
      parts.push(`SELECT ${COMBINATION_KEYS.join(', ')}, store.*, ${ATTRIBUTION_SUMS.map(([sum, type]) => `NULL::${type} AS ${sum}`).join(', ')}
        FROM (${storeSql}) AS store CROSS JOIN combinations`);
    } else {
      // Summed over the ad objects: the store row of each combination holds all its credits, unattributed ones included.
      ctes.push(...attributionCtes({ combinations: attribution, params, fromInstant: ordersFrom, toInstant: ordersTo, bucketOf, keys: [], kept: [], source, reads, learnt }));
      const storeColumns = columns.slice(1, columns.indexOf('currency'));
      parts.push(`SELECT ${COMBINATION_KEYS.join(', ')}, bucket, ${[...sortKeys, ...storeColumns].map((column) => `${column}, `).join('')}currency,
             ${[...sums, ...ATTRIBUTION_SUMS.map(([sum]) => sum)].map((sum) => `coalesce(${sum}, 0) AS ${sum}`).join(', ')}
        FROM (${storeSql}) AS store CROSS JOIN combinations
        FULL JOIN credit_totals USING (${COMBINATION_KEYS.join(', ')}, bucket, currency)
        FULL JOIN (SELECT * FROM visit_totals CROSS JOIN combinations) AS visits USING (${COMBINATION_KEYS.join(', ')}, bucket)`);
    }
  }

  const sql = `WITH ${ctes.join(',\n')}
    SELECT ${label} AS date, ${attributed ? 'combination, ' : ''}${columns.slice(1).join(', ')}, ${metrics.map(([metric, expression]) => `${expression} AS ${columnName(metric)}`).join(', ')}
      FROM (${parts.join(' UNION ALL ')}) AS export_rows
     ${removeZeroSpend ? 'WHERE spend <> 0' : ''}
     ORDER BY ${attributed ? 'combination, ' : ''}bucket, ${sortKeys.map((key) => `${key} NULLS FIRST`).concat('currency').join(', ')}`;
  return { sql, params, columns: [...columns, ...metrics.map(([metric]) => metric)] };
}

/**
 * Order totals per bucket and currency, as common table expressions `order_totals` and
 * `refund_totals`. An order counts in the bucket of its time_of_purchase, a refund in the bucket
 * of its refund_made_at, both in the order's currency; the orders with refunds in the period are
 * those whose latest refund is not before it (migration 0017 indexes them). A customer is new in the bucket of their
 * first order ever, and returning in a later bucket they order in.
 */
function orderTotals(fromInstant: string, toInstant: string, bucketOf: (instant: string) => string): string[] {
  return [
    `purchases AS (
      SELECT time_of_purchase AS at, customer_id, currency, purchase_total
        FROM orders
       WHERE client_id = $1 AND environment = $2 AND time_of_purchase >= ${fromInstant} AND time_of_purchase < ${toInstant})`,
    // Each customer's first order is the first entry of orders_by_customer: one probe a customer,
    // where grouping read every order of every customer (1.3 s of 30 days at 1,000,000 orders).
    `first_purchases AS (
      SELECT c.customer_id, f.first_at
        FROM (SELECT DISTINCT customer_id FROM purchases) AS c
       CROSS JOIN LATERAL (SELECT min(o.time_of_purchase) AS first_at FROM orders o
                            WHERE o.client_id = $1 AND o.environment = $2 AND o.customer_id = c.customer_id
                              AND o.time_of_purchase < ${toInstant}) AS f)`,
    `order_totals AS (
      SELECT ${bucketOf('p.at')} AS bucket, p.currency, sum(p.purchase_total) AS revenue, count(*) AS transactions,
             count(DISTINCT p.customer_id) FILTER (WHERE p.at = f.first_at) AS new_customers,
             count(DISTINCT p.customer_id) FILTER (WHERE ${bucketOf('f.first_at')} < ${bucketOf('p.at')}) AS returning_customers
        FROM purchases p JOIN first_purchases f USING (customer_id)
       GROUP BY 1, 2)`,
    `refund_totals AS (
      SELECT ${bucketOf('x.at')} AS bucket, o.currency, sum(x.amount) AS refunds
        FROM orders o
       CROSS JOIN LATERAL jsonb_array_elements(o.refunds) AS r
       CROSS JOIN LATERAL (SELECT (r->>'refund_made_at')::timestamptz AS at, (r->>'refund_amount')::numeric AS amount) AS x
       WHERE o.client_id = $1 AND o.environment = $2 AND o.refunds IS NOT NULL AND latest_refund_at(o.refunds) >= ${fromInstant}
         AND x.at >= ${fromInstant} AND x.at < ${toInstant}
       GROUP BY 1, 2)`,
  ];
}

/**
 * What the transaction that runs a plan's statement sets first. An attributed export sorts and
 * hashes hundreds of thousands of path rows in a dozen steps: with PostgreSQL's default 4 MB a step
 * they spilled to disk, and one hash split into 32,768 batches (the 30-day dashboard query of
 * bench/attribution.ts took 22 s, against 14 s with 64 MB). JIT compilation of a statement this
 * large cost 2.5 s more of it, for no gain at this size. Exports read the statement through a
 * cursor, for which PostgreSQL plans to fetch a tenth of the rows quickly by default: every row is
 * read, so it plans for all of them. Merge joins are not planned: PostgreSQL cannot estimate how
 * many of a period's touchpoints join an order (the key is the customer their visitor resolves to),
 * guessed 41 million for 229,000, and sorted 900,000 touchpoints to disk for a merge join where
 * hashing the 82,000 orders does it in a pass (the 30-day dashboard statement 7.0 s, 5.9 s without;
 * exports of spend alone unchanged). On Citus the statement runs on the worker that holds the
 * client's shard, which a SET LOCAL reaches only when Citus is told to pass it on
 * (`citus.propagate_set_commands`, first); elsewhere that setting is an unused placeholder.
 */
export const ROWS_TRANSACTION_SETTINGS = [
  "SET LOCAL citus.propagate_set_commands = 'local'",
  "SET LOCAL work_mem = '64MB'",
  'SET LOCAL jit = off',
  'SET LOCAL cursor_tuple_fraction = 1',
  'SET LOCAL enable_mergejoin = off',
];

/**
 * Runs `work` in a transaction with ROWS_TRANSACTION_SETTINGS: where a plan's rows are read
 * (exports, reports), given up when `signal` aborts.
 */
export function inRowsTransaction<T>(db: Database, work: (tx: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T> {
  return db.transaction(
    async (tx) => {
      for (const setting of ROWS_TRANSACTION_SETTINGS) await tx.query(setting);
      return work(tx);
    },
    { signal },
  );
}
