import { Value } from 'typebox/value';
import { breakdownNamed, DEFAULT_MODEL, DEFAULT_WINDOW, DIMENSION_COLUMNS, exportRowsSql, isAttributionMetric, isOrderMetric, METRIC_ALIASES, modelNamed, windowNamed, type AccountingMode, type AttributionCombination, type RowsPlan } from '../attribution/index.js';
import type { Tenant } from '../auth/tenant.js';
import type { ErrorItem } from '../http/errors.js';
import { PeriodError, periodDays, resolvePeriod } from './period.js';
import { ExportRequest } from './schema.js';

/** What an export asks for when it asks for attribution metrics and leaves out a list of attribution_options. */
export const ATTRIBUTION_DEFAULTS = { model: DEFAULT_MODEL, window: DEFAULT_WINDOW, accountingMode: 'cash' as AccountingMode };
/**
 * The most days × attribution combinations an export may ask for: crediting takes each order of
 * the period once per combination, so that product is its work (a year of 6 combinations, the
 * attribution benchmark's, took 80 to 100 s). A year of 32 combinations, or two years of 16;
 * past it an export would hold a worker and the database for tens of minutes.
 */
export const MAX_DAY_COMBINATIONS = 366 * 32;
/** The distinct values of a list, in the order first given. */
const distinct = <T>(values: readonly T[]) => [...new Set(values)];

/**
 * Everything an export request means, decided in one place: the rows to compute (what the row
 * builder of rows.ts runs), the metrics to show under which headers, how to write them, and what
 * the request asked for that is ignored. Options that are ignored are off in the plan.
 */
export interface ExportPlan extends RowsPlan {
  /** The metrics asked for, in the order asked, each with the header of its column. */
  metrics: { id: string; label: string }[];
  /** One set of rows per combination: models × windows × accounting modes asked, when attribution metrics are. */
  attribution: AttributionCombination[];
  /** Whether names and ids the client chose are written so that spreadsheets never run them. */
  escapeFormulas: boolean;
  /** The export's files are `<fileBaseName>.csv`, or `-1`, `-2`, … when there are several. */
  fileBaseName: string;
  /** What the request asks for that does not apply, and why: told to the client in `warn`. */
  ignored: string[];
}

type Complete = ExportRequest &
  Required<Pick<ExportRequest, 'level' | 'time_granularity' | 'period_type'>> & { options: Required<NonNullable<ExportRequest['options']>> };

/**
 * The request with the schema's defaults where it leaves a field out. Requests are stored with
 * them already, except options of a request sent without `options`, or stored before an option
 * existed.
 */
const withDefaults = (request: ExportRequest) => Value.Default(ExportRequest, { ...request, options: { ...request.options } }) as Complete;

/**
 * The plan of an export request (validated by its schema, as sent or as stored), or the problems
 * that make it impossible. Relative periods are whole days of `timeZone`, counted from `now`.
 */
export function planExport(request: ExportRequest, timeZone: string, now: Date): { plan: ExportPlan } | { problems: ErrorItem[] } {
  const { level, time_granularity, period_type, period_options, breakdowns = [], options, attribution_options = {}, metrics } = withDefaults(request);
  const problems: ErrorItem[] = [];
  const ignored: string[] = [];

  let period: RowsPlan['period'] | undefined;
  try {
    period = resolvePeriod(period_type, period_options, timeZone, now);
  } catch (error) {
    if (!(error instanceof PeriodError)) throw error;
    problems.push({ loc: 'body/period_options', msg: error.message, type: 'period' });
  }
  if (period_type !== 'FIXED' && period_options) ignored.push('period_options (period_type is not FIXED)');

  const summed = options.export_aggregation === 'DATE';
  const attributed = metrics.some((metric) => isAttributionMetric(metric.id));
  // In an attributed export, aov is that of the row's attributed orders: no store row needed.
  const isStoreMetric = (id: string) => isOrderMetric(id) && !(attributed && id === 'aov');
  metrics.forEach((metric, index) => {
    if (isStoreMetric(metric.id) && !summed && !options.aggregate_data) {
      problems.push({
        loc: `body/metrics/${index}/id`,
        msg: 'Order metrics describe the whole store: ask for them with options.aggregate_data or options.export_aggregation DATE',
        type: 'dependency',
      });
    }
  });
  if (summed && options.include_kind_and_platform) ignored.push('options.include_kind_and_platform (export_aggregation DATE sums over the ad objects)');
  if (summed && options.include_ids) ignored.push('options.include_ids (export_aggregation DATE sums over the ad objects)');
  else if (options.aggregate_data && options.include_ids) ignored.push('options.include_ids (aggregate_data keeps the platform level, which has no id)');
  if (summed && level !== 'platform') ignored.push('level (export_aggregation DATE sums over the ad objects)');
  else if (options.aggregate_data && level !== 'platform') ignored.push('level (aggregate_data keeps the platform level)');

  // Headers must tell columns apart: a label may repeat neither another nor any dimension column.
  // A metric without a label is headed by its id: clients read columns by id.
  const headers = new Set(DIMENSION_COLUMNS);
  const labelled = metrics.map((metric, index) => {
    const label = metric.label ?? metric.id;
    if (headers.has(label)) problems.push({ loc: `body/metrics/${index}/label`, msg: `Column ${label} is in the export already`, type: 'unique' });
    headers.add(label);
    return { id: metric.id, label };
  });

  // An alias is its key: naming a key twice, once by an alias, would leave unclear which values keep rows.
  const resolvedBreakdowns = breakdowns.map(({ key, values }) => ({ key: breakdownNamed(key), values }));
  resolvedBreakdowns.forEach(({ key }, index) => {
    const first = resolvedBreakdowns.findIndex((breakdown) => breakdown.key === key);
    if (first < index) {
      problems.push({
        loc: `body/breakdowns/${index}/key`,
        msg: `${breakdowns[index]!.key} is the breakdown ${breakdowns[first]!.key} names already: each breakdown may be given once`,
        type: 'unique',
      });
    }
  });

  const { attribution_models = [], attribution_windows = [], accounting_modes = [] } = attribution_options;
  let attribution: AttributionCombination[] = [];
  if (attributed) {
    // An alias is credited by its model, and its rows are named as asked: by the id the client matches on.
    const models = (attribution_models.length > 0 ? distinct(attribution_models) : [ATTRIBUTION_DEFAULTS.model]).map((modelAsked) => ({
      model: modelNamed(modelAsked)!,
      modelAsked,
    }));
    const windows = attribution_windows.length > 0 ? distinct(attribution_windows.map(windowNamed)) : [ATTRIBUTION_DEFAULTS.window];
    const modes = accounting_modes.length > 0 ? distinct(accounting_modes as AccountingMode[]) : [ATTRIBUTION_DEFAULTS.accountingMode];
    attribution = models.flatMap((named) => windows.flatMap((window) => modes.map((accountingMode) => ({ ...named, window, accountingMode }))));
  } else {
    for (const [field, values] of Object.entries({ attribution_models, attribution_windows, accounting_modes })) {
      if (values.length > 0) ignored.push(`attribution_options.${field} (no attribution metric is asked for)`);
    }
  }

  const days = period && periodDays(period);
  if (days && days * Math.max(attribution.length, 1) > MAX_DAY_COMBINATIONS) {
    problems.push({
      loc: 'body/attribution_options',
      msg:
        `An export may credit at most ${MAX_DAY_COMBINATIONS.toLocaleString('en-US')} day-combinations (the period's days × models × windows × ` +
        `accounting modes: a year of 32 combinations); this one asks for ${days} × ${attribution.length} = ` +
        `${(days * attribution.length).toLocaleString('en-US')}. Split it by period, or by model`,
      type: 'too_large',
    });
  }
  if (problems.length > 0 || !period) return { problems };
  return {
    plan: {
      timeZone,
      period,
      granularity: time_granularity,
      level: summed ? null : options.aggregate_data ? 'platform' : level,
      breakdowns: resolvedBreakdowns,
      includeIds: options.include_ids && !summed && !options.aggregate_data,
      includeKind: options.include_kind_and_platform && !summed,
      removeZeroSpend: options.remove_zero_spend,
      withOrders: metrics.some((metric) => isStoreMetric(metric.id)),
      attribution,
      metrics: labelled,
      escapeFormulas: options.escape_formulas,
      fileBaseName: request.export_file_name ?? `export-${now.toISOString().slice(0, 10)}`,
      ignored,
    },
  };
}

/**
 * The engine's plan of an export plan's rows. A metric is an expression over a row's sums, worked
 * out for every row: only those asked (and `alsoComputed`) are. Thirty of them over the 32,771 rows
 * of the dashboard's 30 days were a fifth of its statement.
 */
export function rowsPlanOf(plan: ExportPlan, alsoComputed: readonly string[] = []): RowsPlan {
  return { ...plan, metricsComputed: [...plan.metrics.map(({ id }) => METRIC_ALIASES[id] ?? id), ...alsoComputed] };
}

/** A column of an export's output: the statement's column it is read from, and its header. */
export interface OutputColumn {
  name: string;
  header: string;
}

/**
 * The statement of a plan's rows, and the columns to output in order: every dimension column of
 * its rows, then the metrics asked for under their labels. Files and answers of every format are
 * written from these two, so that none computes a number its own way.
 */
export function planRowsSql(
  tenant: Tenant,
  plan: ExportPlan,
  alsoComputed: readonly string[] = [],
): { sql: string; params: unknown[]; columns: OutputColumn[]; computed: string[] } {
  const { sql, params, columns } = exportRowsSql({ tenant, ...rowsPlanOf(plan, alsoComputed) });
  const dimensions = columns.filter((name) => DIMENSION_COLUMNS.includes(name));
  return {
    sql,
    params,
    /** Every column the statement computes, whether output or not (the metrics of every row). */
    computed: columns,
    // An alias (imprs) is its metric's column (impressions) under the alias's header.
    columns: [
      ...dimensions.map((name) => ({ name, header: name })),
      ...plan.metrics.map(({ id, label }) => ({ name: METRIC_ALIASES[id] ?? id, header: label })),
    ],
  };
}
