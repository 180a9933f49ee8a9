import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planExport, type ExportPlan } from '../src/exports/plan.js';
import type { ExportRequest } from '../src/exports/schema.js';

// Monday 11 March 2024, 03:30 UTC: still Sunday the 10th in New York, already 12:30 in Tokyo.
const NOW = new Date('2024-03-11T03:30:00Z');
const NEW_YORK = 'America/New_York';

function planOf(request: ExportRequest, timeZone = NEW_YORK): ExportPlan {
  const planned = planExport(request, timeZone, NOW);
  if ('problems' in planned) assert.fail(`unexpected problems: ${JSON.stringify(planned.problems)}`);
  return planned.plan;
}

function problemsOf(request: ExportRequest): [string, string][] {
  const planned = planExport(request, NEW_YORK, NOW);
  if (!('problems' in planned)) assert.fail('expected problems, got a plan');
  return planned.problems.map(({ loc, type }) => [loc, type]);
}

test('the defaults: the last 7 whole local days, daily rows of platforms, spend metrics headed by their ids', () => {
  assert.deepEqual(planOf({ metrics: [{ id: 'spend' }, { id: 'cpc' }] }), {
    timeZone: NEW_YORK,
    period: { kind: 'days', from: '2024-03-03', to: '2024-03-10' },
    granularity: 'DAILY',
    level: 'platform',
    breakdowns: [],
    includeIds: false,
    includeKind: false,
    removeZeroSpend: false,
    withOrders: false,
    metrics: [
      { id: 'spend', label: 'spend' },
      { id: 'cpc', label: 'cpc' },
    ],
    attribution: [],
    escapeFormulas: true,
    fileBaseName: 'export-2024-03-11', // the UTC date of creation, as files were always named
    ignored: [],
  });
});

test('a stored request holds the schema\'s defaults already; options missing from it take theirs', () => {
  const stored = {
    level: 'ad',
    time_granularity: 'HOURLY',
    period_type: 'YESTERDAY',
    options: { include_ids: true, remove_zero_spend: true }, // stored before escape_formulas existed
    metrics: [{ id: 'clicks' }],
  } as const;
  const plan = planOf({ ...stored, options: { ...stored.options }, metrics: [...stored.metrics] });
  assert.deepEqual(
    [plan.level, plan.granularity, plan.period, plan.includeIds, plan.removeZeroSpend, plan.escapeFormulas],
    ['ad', 'HOURLY', { kind: 'days', from: '2024-03-09', to: '2024-03-10' }, true, true, true],
  );
  assert.equal(planOf({ ...stored, options: { escape_formulas: false }, metrics: [...stored.metrics] }).escapeFormulas, false);
});

test('a FIXED period keeps its two instants whatever the zone; relative periods are days of the client\'s zone', () => {
  const fixed = {
    period_type: 'FIXED',
    period_options: { period_starting_at: '2024-03-01T00:00:00+09:00', period_ending_at: '2024-03-08T00:00:00+09:00' },
    export_file_name: 'march',
    metrics: [{ id: 'spend' }],
  } as const;
  const plan = planOf({ ...fixed, metrics: [...fixed.metrics] }, 'Asia/Tokyo');
  assert.equal(plan.timeZone, 'Asia/Tokyo');
  assert.deepEqual(plan.period, { kind: 'instants', from: '2024-03-01T00:00:00+09:00', to: '2024-03-08T00:00:00+09:00' });
  assert.equal(plan.fileBaseName, 'march');
  assert.deepEqual(plan.ignored, []);
  // The same moment is Monday the 11th in Tokyo and Sunday the 10th in New York.
  assert.deepEqual(planOf({ period_type: 'TODAY', metrics: [{ id: 'spend' }] }, 'Asia/Tokyo').period, { kind: 'days', from: '2024-03-11', to: '2024-03-12' });
  assert.deepEqual(planOf({ period_type: 'TODAY', metrics: [{ id: 'spend' }] }).period, { kind: 'days', from: '2024-03-10', to: '2024-03-11' });
});

test('DATE aggregation sums over the ad objects: no level, ids or kind, each named as ignored; breakdowns and order metrics kept', () => {
  const plan = planOf({
    level: 'ad',
    breakdowns: [{ key: 'account', values: ['act1'] }],
    options: { export_aggregation: 'DATE', include_ids: true, include_kind_and_platform: true },
    metrics: [{ id: 'spend' }, { id: 'revenue' }, { id: 'mer', label: 'MER' }],
  });
  assert.equal(plan.level, null);
  assert.equal(plan.includeIds, false);
  assert.equal(plan.includeKind, false);
  assert.equal(plan.withOrders, true);
  assert.deepEqual(plan.breakdowns, [{ key: 'account', values: ['act1'] }]);
  assert.deepEqual(plan.metrics, [
    { id: 'spend', label: 'spend' },
    { id: 'revenue', label: 'revenue' },
    { id: 'mer', label: 'MER' },
  ]);
  assert.deepEqual(plan.ignored, [
    'options.include_kind_and_platform (export_aggregation DATE sums over the ad objects)',
    'options.include_ids (export_aggregation DATE sums over the ad objects)',
    'level (export_aggregation DATE sums over the ad objects)',
  ]);
});

test('aggregate_data keeps the platform level, without ids but with the kind column', () => {
  const plan = planOf({
    level: 'campaign',
    options: { aggregate_data: true, include_ids: true, include_kind_and_platform: true },
    metrics: [{ id: 'new_customers' }],
  });
  assert.deepEqual([plan.level, plan.includeIds, plan.includeKind, plan.withOrders], ['platform', false, true, true]);
  assert.deepEqual(plan.ignored, [
    'options.include_ids (aggregate_data keeps the platform level, which has no id)',
    'level (aggregate_data keeps the platform level)',
  ]);
});

test('options that cannot apply are named in ignored, in the order of the request\'s fields', () => {
  const plan = planOf({
    period_type: 'LAST_30_DAYS',
    period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-02T00:00:00Z' },
    attribution_options: { attribution_windows: ['7'], accounting_modes: ['cash', 'accrual'] },
    metrics: [{ id: 'spend' }],
  });
  assert.deepEqual(plan.period, { kind: 'days', from: '2024-02-09', to: '2024-03-10' });
  assert.deepEqual(plan.ignored, [
    'period_options (period_type is not FIXED)',
    'attribution_options.attribution_windows (no attribution metric is asked for)',
    'attribution_options.accounting_modes (no attribution metric is asked for)',
  ]);
  assert.deepEqual(plan.attribution, []);
});

test('a label may repeat neither another label nor a dimension column', () => {
  assert.deepEqual(problemsOf({ metrics: [{ id: 'spend', label: 'campaign_id' }] }), [['body/metrics/0/label', 'unique']]);
  // A metric without a label is headed by its id: a label of another metric may not take it.
  assert.deepEqual(problemsOf({ metrics: [{ id: 'clicks' }, { id: 'cpc', label: 'clicks' }] }), [['body/metrics/1/label', 'unique']]);
  assert.deepEqual(planOf({ metrics: [{ id: 'clicks', label: 'spend' }, { id: 'spend', label: 'clicks' }] }).metrics, [
    { id: 'clicks', label: 'spend' },
    { id: 'spend', label: 'clicks' },
  ]);
});

test('every problem of a request is found, and then there is no plan', () => {
  assert.deepEqual(
    problemsOf({
      period_type: 'FIXED',
      level: 'campaign',
      metrics: [{ id: 'spend', label: 'currency' }, { id: 'revenue' }],
    }),
    [
      ['body/period_options', 'period'],
      ['body/metrics/1/id', 'dependency'],
      ['body/metrics/0/label', 'unique'],
    ],
  );
});

test('the hosted API\'s breakdown key and model ids are aliases: the plan holds ours, and the model ids as asked', () => {
  const plan = planOf({
    breakdowns: [{ key: 'Platform (Northbeam)', values: ['google'] }],
    attribution_options: {
      attribution_models: ['northbeam_custom__va', 'northbeam_custom', 'clicks_only', 'northbeam_custom__enh', 'northbeam_custom__va'],
      attribution_windows: ['7'],
    },
    metrics: [{ id: 'rev' }],
  });
  assert.deepEqual(plan.breakdowns, [{ key: 'platform', values: ['google'] }]);
  // Each id asked is a set of rows, named by it; a repeated one once.
  assert.deepEqual(
    plan.attribution.map(({ model, modelAsked }) => [modelAsked, model]),
    [
      ['northbeam_custom__va', 'clicks_and_views'],
      ['northbeam_custom', 'clicks_only'],
      ['clicks_only', 'clicks_only'],
      ['northbeam_custom__enh', 'clicks_and_views'],
    ],
  );
  assert.deepEqual(
    problemsOf({
      breakdowns: [{ key: 'Platform (Northbeam)', values: [] }, { key: 'platform', values: [] }],
      metrics: [{ id: 'spend' }],
    }),
    [['body/breakdowns/1/key', 'unique']],
  );
});

test('planning leaves the request as it was', () => {
  const request: ExportRequest = { metrics: [{ id: 'spend' }] };
  planOf(request);
  assert.deepEqual(request, { metrics: [{ id: 'spend' }] });
});
