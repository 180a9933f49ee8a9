import type { Tenant } from '../auth/tenant.js';
import type { Store } from '../db/store.js';
import { dayRangeProblems } from '../http/day-range.js';
import type { ErrorItem } from '../http/errors.js';
import { columnName, DIMENSION_COLUMNS, isAttributionMetric, isOrderMetric, keptTotalsOf, METRIC_ALIASES, METRIC_IDS, platformMetricOf, type Granularity } from '../attribution/index.js';
import { planExport, planRowsSql, type ExportPlan, type OutputColumn } from '../exports/plan.js';
import { joinedBytes } from '../exports/text-bytes.js';
import type { ExportRequest } from '../exports/schema.js';

/** The longest period a report covers, in days: the dashboard offers 90; longer periods are exports' work. */
export const MAX_REPORT_DAYS = 92;
/** Ratios of totals are rounded as the rows' ratios are (rows.ts). */
const RATIO_SCALE = 6;

/** What GET /v1/reports/performance is asked, its query string once validated. */
export interface ReportQuery {
  start_date: string;
  end_date: string;
  granularity: Granularity;
  /** `total` sums over the ad objects per bucket: an export's export_aggregation DATE. */
  level: 'platform' | 'campaign' | 'adset' | 'ad' | 'total';
  breakdown?: 'platform' | 'account';
  metrics: string;
  model: string;
  window: string;
  mode: 'cash' | 'accrual';
  /** `paid` keeps the rows of the platforms with spend in the period: what a dashboard calls paid channels. */
  channels?: 'all' | 'paid';
}

/**
 * Metrics whose total is the sum of the rows' values. returning_customers is not: a customer
 * returns in every bucket they order in, and is one customer over the period.
 */
const SUMMED = new Set(['spend', 'impressions', 'clicks', 'revenue', 'transactions', 'refunds', 'net_revenue', 'new_customers',
  'rev', 'txns', 'revFt', 'txnsFt', 'revRtn', 'txnsRtn', 'visits', 'newVisits']);
/** Whether a metric's total is the sum of the rows' values: those above, and the platform metrics (googleClicks), which are sums of spend. */
const isSummed = (metric: string) => SUMMED.has(metric) || platformMetricOf(metric) !== undefined;

/**
 * The ratios of catalog.ts as numerator, denominator and factor of summed parts: the total of a
 * ratio is the ratio of the totals, never a sum or an average of the rows' ratios.
 */
const ratiosOf = (attributed: boolean): Record<string, [string, string, number]> => ({
  ctr: ['clicks', 'impressions', 1],
  cpc: ['spend', 'clicks', 1],
  cpm: ['spend', 'impressions', 1000],
  aov: attributed ? ['rev', 'txns', 1] : ['revenue', 'transactions', 1],
  mer: ['revenue', 'spend', 1],
  blended_cac: ['spend', 'new_customers', 1],
  roas: ['rev', 'spend', 1],
  cac: ['spend', 'txns', 1],
  roasFt: ['revFt', 'spend', 1],
  cacFt: ['spend', 'txnsFt', 1],
  roasRtn: ['revRtn', 'spend', 1],
  cacRtn: ['spend', 'txnsRtn', 1],
  newVisitsPercentage: ['newVisits', 'visits', 100],
  ecr: ['txns', 'visits', 1],
  ecpc: ['spend', 'visits', 1],
});

/**
 * What a report runs: an export request, and its granularity, which may be PERIOD (exports have no
 * such choice); `paid` keeps the rows of platforms with spend in the period, and `summed` adds those
 * rows up per bucket (level=total with channels=paid).
 */
export interface ReportRequest {
  request: ExportRequest;
  granularity: Granularity;
  paid: boolean;
  summed: boolean;
}

/**
 * The export request a report is: the same rows, ids included, for the one attribution model,
 * window and mode asked; or the problems of the query, every one of them.
 */
export function reportRequest(query: ReportQuery): ReportRequest | { problems: ErrorItem[] } {
  const problems: ErrorItem[] = [];
  const metrics = query.metrics.split(',').map((id) => id.trim());
  // As in exports: beside attribution metrics, aov is that of the row's attributed orders, not the store's.
  const isStoreMetric = (id: string) => isOrderMetric(id) && !(id === 'aov' && metrics.some(isAttributionMetric));
  const paid = query.channels === 'paid';
  for (const id of metrics) {
    if (!METRIC_IDS.includes(id)) {
      problems.push({ loc: 'query/metrics', msg: `Unknown metric id ${JSON.stringify(id)}: GET /v1/exports/metrics lists them`, type: 'enum' });
    } else if (isStoreMetric(id) && query.level !== 'total') {
      problems.push({ loc: 'query/metrics', msg: `${id} describes the whole store: ask for it with level=total`, type: 'dependency' });
    } else if (isStoreMetric(id) && paid) {
      problems.push({ loc: 'query/metrics', msg: `${id} describes the whole store, every channel: ask for it without channels=paid`, type: 'dependency' });
    }
  }
  if (new Set(metrics).size < metrics.length) problems.push({ loc: 'query/metrics', msg: 'Each metric may be asked for once', type: 'unique' });
  if (query.level === 'total' && query.breakdown) {
    problems.push({ loc: 'query/breakdown', msg: 'A breakdown splits the rows of ad objects: level=total has none', type: 'dependency' });
  }
  problems.push(
    ...dayRangeProblems(query, MAX_REPORT_DAYS, `A report covers at most ${MAX_REPORT_DAYS} days (end_date included): export longer periods with POST /v1/exports/data-export`),
  );
  if (problems.length > 0) return { problems };
  // The paid channels' total per bucket adds up the platforms' rows; the store's comes from the plan (export_aggregation DATE).
  const summed = paid && query.level === 'total';
  const aggregated = query.level === 'total' && !summed;
  return {
    granularity: query.granularity,
    paid,
    summed,
    request: {
      level: query.level === 'total' ? 'platform' : query.level,
      time_granularity: query.granularity === 'PERIOD' ? 'DAILY' : query.granularity,
      period_type: 'FIXED',
      period_options: { period_starting_at: query.start_date, period_ending_at: query.end_date },
      breakdowns: query.breakdown ? [{ key: query.breakdown, values: [] }] : [],
      options: { export_aggregation: aggregated ? 'DATE' : 'BREAKDOWN', include_ids: query.level !== 'total', escape_formulas: false },
      attribution_options: { attribution_models: [query.model], attribution_windows: [query.window], accounting_modes: [query.mode] },
      metrics: metrics.map((id) => ({ id })),
    },
  };
}

/** `text` as an SQL string literal. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * A JSON object as SQL text: each key with the JSON of its SQL value (null when NULL), in order.
 * Built with `||`, not json_build_object, whose arguments stop at 100 and which writes spaces.
 */
const jsonObjectSql = (entries: [key: string, value: string][]) =>
  entries.length === 0 ? `'{}'` : `'{' || ${entries.map(([key, value]) => `${literal(`${JSON.stringify(key)}:`)} || coalesce(to_json(${value})::text, 'null')`).join(" || ',' || ")} || '}'`;

/**
 * The expression of a metric over a set of rows, in SQL: the sum of a summed metric, and a ratio
 * from the sums of its parts, as exact decimals rounded as the rows' ratios are. `computed` names
 * the summed columns the rows have.
 */
function sumOfRows(plan: ExportPlan, computed: readonly string[]): (id: string) => string {
  const ratios = ratiosOf(plan.attribution.length > 0);
  const sum = (metric: string) => (computed.includes(metric) ? `coalesce(sum(${columnName(metric)}), 0)` : '0');
  return (id) => {
    const metric = METRIC_ALIASES[id] ?? id;
    if (isSummed(metric)) return `round(${sum(metric)}, ${RATIO_SCALE})`;
    const ratio = ratios[metric];
    if (!ratio) return 'NULL::numeric';
    const [numerator, denominator, factor] = ratio;
    return `round(${sum(numerator)} * ${factor} / nullif(${sum(denominator)}, 0), ${RATIO_SCALE})`;
  };
}

/**
 * The totals of a report's rows as one JSON object, in SQL over `report_rows` (sumOfRows).
 * Amounts in different currencies are never added: with rows in several currencies, every total
 * is null. Beside it, the one currency of the rows (null with several, or none).
 */
function totalsSql(plan: ExportPlan, computed: readonly string[]): string {
  const total = sumOfRows(plan, computed);
  const totals = plan.metrics.map(({ id }): [string, string] => [id, `CASE WHEN count(DISTINCT currency) <= 1 THEN trim_scale(${total(id)}) END`]);
  return `SELECT NULL AS row_json, ${jsonObjectSql(totals)} AS totals, CASE WHEN count(DISTINCT currency) = 1 THEN min(currency) END AS currency FROM report_rows`;
}

/**
 * The rows of the paid channels: those of the platforms with spend in the period, whatever
 * the row's own spend (a campaign paused the day its click converted is still paid), in the
 * plan's order (`position`, numbered before the platforms' window sorts them).
 */
const paidRowsSql = (sql: string) => `SELECT * FROM (
    SELECT r.*, sum(r.spend) OVER (PARTITION BY r.platform) AS platform_spend
      FROM (SELECT r.*, row_number() OVER () AS position FROM (${sql}) AS r) AS r
  ) AS r WHERE platform_spend <> 0 ORDER BY position`;

/**
 * The paid channels' rows added up per bucket, currency and attribution combination, as the
 * totals add up the rows (sumOfRows): the columns of level=total's rows, in the platforms' order.
 */
function summedRowsSql(plan: ExportPlan, paidSql: string, columns: OutputColumn[], computed: readonly string[]) {
  const groups = columns.filter(({ name }) => DIMENSION_COLUMNS.includes(name) && name !== 'platform').map(({ name }) => name);
  const summed = computed.filter(isSummed);
  const metricOf = sumOfRows(plan, computed);
  const asked = plan.metrics.map(({ id }) => METRIC_ALIASES[id] ?? id).filter((metric) => !summed.includes(metric));
  const sql = `SELECT ${groups.join(', ')}, ${[...summed, ...asked].map((metric) => `${metricOf(metric)} AS ${columnName(metric)}`).join(', ')}
    FROM (${paidSql}) AS r GROUP BY ${groups.join(', ')} ORDER BY min(position)`;
  return { sql, columns: columns.filter(({ name }) => name !== 'platform'), computed: [...groups, ...summed, ...asked] };
}

/** The totals of a report without rows (UAT's test credentials keep none): sums 0, ratios null. */
const totalsOfNoRows = (plan: ExportPlan) =>
  JSON.stringify(Object.fromEntries(plan.metrics.map(({ id }) => [id, isSummed(METRIC_ALIASES[id] ?? id) ? 0 : null])));

/**
 * The statement answering a report: each row's JSON text, made where the rows are (numbers with
 * their exact decimals, trailing zeros trimmed), in the rows' order, then a last row with the
 * totals (totalsSql). The rows are kept (materialized) for the totals to add up, so that no
 * summed column crosses to Node: sending them cost a fifth of the dashboard's report.
 */
function reportSql(plan: ExportPlan, sql: string, columns: OutputColumn[], computed: readonly string[]): string {
  const metricNames = new Set(plan.metrics.map(({ id }) => id));
  const members = columns.map(({ name, header }): [string, string] => [header, metricNames.has(header) ? `trim_scale(r.${columnName(name)})` : `r.${columnName(name)}::text`]);
  const sums = computed.filter(isSummed).map((metric) => `, r.${columnName(metric)}`);
  return `WITH report_rows AS MATERIALIZED (SELECT ${jsonObjectSql(members)} AS row_json, r.currency${sums.join('')} FROM (${sql}) AS r)
    SELECT row_json, NULL AS totals, NULL AS currency FROM report_rows
    UNION ALL
    ${totalsSql(plan, computed)}`;
}

/**
 * A report: the rows of an export's plan, run as an export runs them (rows.ts), answered as
 * JSON text. Metric columns are numbers. The rows are read through a cursor, each as the JSON text
 * PostgreSQL makes of it, and joined as bytes a batch at a time: rows as objects cost ten times
 * their text in memory, and a third of the report's time to make again. Attributed rows of whole days
 * are read from the kept daily totals (daily-totals.ts): a dashboard asks the same days again
 * and again, and recomputing them takes seconds.
 */
export async function runReport(
  { clients, reports }: Pick<Store, 'clients' | 'reports'>,
  tenant: Tenant,
  { request, granularity, paid, summed }: ReportRequest,
  signal?: AbortSignal,
): Promise<{ json: Buffer } | { problems: ErrorItem[] }> {
  const planned = planExport(request, await clients.timeZone(tenant.clientId), new Date());
  if ('problems' in planned) return { problems: planned.problems.map((problem) => ({ ...problem, loc: 'query' })) };
  const plan = { ...planned.plan, granularity };
  const learnt = await reports.learnWeights(tenant, plan, signal);
  const keptTotals = keptTotalsOf(tenant, plan);
  const rows = planRowsSql(tenant, { ...plan, fromKeptTotals: keptTotals !== undefined, learnt }, [...SUMMED]);
  const { params } = rows;
  const paidSql = paid ? paidRowsSql(rows.sql) : rows.sql;
  const { sql, columns, computed } = summed ? summedRowsSql(plan, paidSql, rows.columns, rows.computed) : { ...rows, sql: paidSql };
  const fresh = () => ({ ending: { totals: totalsOfNoRows(plan), currency: null as string | null }, batches: [Buffer.from('{"rows":[')] as Buffer[] });
  let { ending, batches } = fresh();
  await reports.eachBatch(tenant, { sql: reportSql(plan, sql, columns, computed), params, keptTotals, signal }, () => {
    ({ ending, batches } = fresh());
    return async (rows) => {
      const texts: string[] = [];
      for (const row of rows) {
        if (row.row_json === null) ending = { totals: row.totals as string, currency: row.currency as string | null };
        else texts.push(row.row_json as string);
      }
      if (texts.length > 0) batches.push(joinedBytes(texts, ',', batches.length > 1));
    };
  });
  const warn = learnt && learnt.warnings.length > 0 ? `,"warn":${JSON.stringify({ attribution_model: learnt.warnings.join('; ') })}` : '';
  batches.push(Buffer.from(`],"totals":${ending.totals},"currency":${JSON.stringify(ending.currency)}${warn}}`));
  return { json: Buffer.concat(batches) };
}
