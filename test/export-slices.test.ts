import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import type { Tenant } from '../src/auth/tenant.js';
import type { Row } from '../src/db/database.js';
import type { Queryable } from '../src/db/index.js';
import { planExport, type ExportPlan } from '../src/exports/plan.js';
import type { ExportRequest } from '../src/exports/schema.js';
import { readSlicedRows, readSlices, slicesOf, type Slice } from '../src/attribution/slices.js';
import { ADMIN_TOKEN, citusUrl, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * An export's period cut into slices, each computed by a statement of its own (slices.ts): the
 * slices' rows, read back in order, are the rows of the whole period's statement, whatever the
 * plan; on PostgreSQL they are computed on connections of their own that read one snapshot.
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const NEW_YORK = 'America/New_York';
const NOW = new Date('2024-06-01T00:00:00Z');

const AZORES = 'Atlantic/Azores';
const planOf = (request: object, timeZone = NEW_YORK): ExportPlan => {
  const planned = planExport(request as ExportRequest, timeZone, NOW);
  if ('problems' in planned) throw new Error(JSON.stringify(planned.problems));
  return planned.plan;
};
const days = (from: string, last: string, extra: object = {}) =>
  planOf({ period_type: 'FIXED', period_options: { period_starting_at: from, period_ending_at: last }, metrics: [{ id: 'spend' }], ...extra });

// A client in New York with two months of data around the slices' boundaries: visitors who visit
// before and after them, a campaign renamed mid-period, one that changes account, one whose spend
// is all in the first days, orders of first-time and returning customers, refunds, two currencies.
async function clientIn(timeZone: string): Promise<{ client: TestClient; tenant: Tenant; send: (url: string, data: unknown[]) => Promise<void> }> {
  const client = await service.createClient(`sliced, ${timeZone}`);
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: timeZone },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  const send = async (url: string, data: unknown[]) => {
    const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? data : { data } });
    assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
  };
  return { client, tenant: { clientId: client.client_id, environment: 'production', dryRun: false }, send };
}

const { tenant, send } = await clientIn(NEW_YORK);
{
  let seed = 7;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!;
  const at = (fromDay: number, toDay: number) => new Date(Date.UTC(2024, 1, 15) + (fromDay + random() * (toDay - fromDay)) * 86_400_000).toISOString();
  const spend = [];
  for (let day = 0; day < 56; day++) {
    const hour = new Date(Date.UTC(2024, 1, 15, 15) + day * 86_400_000).toISOString();
    spend.push(
      { hour_start_iso: hour, platform_name: 'meta', platform_account_id: 'm1', campaign_id: 'spring', campaign_name: day < 30 ? 'Spring' : 'Spring sale', ad_id: pick(['a1', 'a2']), spend: 10 + day, spend_currency: 'USD', impressions: 100, clicks: 5 },
      { hour_start_iso: hour, platform_name: 'google', platform_account_id: day < 25 ? 'g1' : 'g2', campaign_id: 'search', campaign_name: 'Search', spend: 3, spend_currency: 'EUR', impressions: 50, clicks: 2 },
    );
    if (day < 3) spend.push({ hour_start_iso: hour, platform_name: 'meta', platform_account_id: 'm1', campaign_id: 'early', campaign_name: 'Early bird', spend: 7, spend_currency: 'USD', impressions: 10, clicks: 1 });
  }
  await send('/v1/spend_hourly', spend);
  await send('/v1/spend', [{ date: '2024-03-20', platform_name: 'meta', platform_account_id: 'm1', campaign_id: 'spring', campaign_name: 'Spring sale', ad_id: 'a1', spend: 99, spend_currency: 'USD', impressions: 1, clicks: 1 }]);
  const sources = [
    { platform_name: 'meta', campaign_id: 'spring', ad_id: 'a1' },
    { platform_name: 'meta', campaign_id: 'early' },
    { platform_name: 'google', campaign_id: 'search' },
    { platform_name: 'tiktok', campaign_id: 'no-spend' },
    { utm_source: 'newsletter', utm_medium: 'email' },
    {},
  ];
  const touchpoints = Array.from({ length: 240 }, (_, n) => ({
    touchpoint_id: `t${n}`,
    occurred_at: at(0, 55),
    type: n % 9 === 0 ? 'view' : 'visit',
    visitor_id: `v${n % 40}`,
    ...(n % 3 === 0 && { customer_id: `c${n % 20}` }),
    ...pick(sources),
  }));
  await send('/v1/touchpoints', touchpoints);
  const orders = Array.from({ length: 70 }, (_, n) => {
    const total = Math.round(random() * 20_000) / 100;
    const purchased = at(3, 55);
    return minimalOrder(`o${n}`, {
      customer_id: `c${n % 20}`,
      time_of_purchase: purchased,
      currency: n % 7 === 0 ? 'EUR' : 'USD',
      purchase_total: total,
      products: [{ id: 'p', name: 'P', quantity: 1, price: total }],
      ...(n % 11 === 0 && { refunds: [{ product_id: 'p', quantity: 1, refund_amount: total, refund_cost: 0, refund_made_at: new Date(new Date(purchased).getTime() + 3 * 86_400_000).toISOString() }] }),
    });
  });
  await send('/v2/orders', orders);
}

// A client in the Azores, where clocks go back from 01:00 to 00:00 on 27 October 2024: that day's
// midnight comes twice, at 00:00Z (summer time, UTC+0) and 01:00Z. Each of its first visit and
// order is in the hour between them, its second later that day.
const azores = await clientIn(AZORES);
{
  const daysOfSpend = Array.from({ length: 12 }, (_, n) => 20 + n);
  await azores.send(
    '/v1/spend_hourly',
    daysOfSpend.map((day) => ({ hour_start_iso: `2024-10-${day}T12:00:00Z`, platform_name: 'meta', campaign_id: 'spring', campaign_name: 'Spring', spend: 10, spend_currency: 'USD' })),
  );
  const visit = (id: string, occurred_at: string) => ({ touchpoint_id: id, occurred_at, visitor_id: 'v1', customer_id: 'c1', platform_name: 'meta', campaign_id: 'spring' });
  await azores.send('/v1/touchpoints', [visit('t1', '2024-10-27T00:30:00Z'), visit('t2', '2024-10-27T12:00:00Z')]);
  const order = (id: string, time_of_purchase: string, total: number) =>
    minimalOrder(id, { customer_id: 'c1', time_of_purchase, currency: 'USD', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
  await azores.send('/v2/orders', [order('o1', '2024-10-27T00:40:00Z', 10), order('o2', '2024-10-27T13:00:00Z', 20)]);
}

// Every record is written before the first test is registered: a top-level await between tests
// lets the runner finish (and close the service) before the later tests run.

test('slices start on the first day of a bucket and split the buckets about evenly', () => {
  assert.deepEqual(slicesOf(days('2024-12-01', '2024-12-30'), 2), [{ toDay: '2024-12-16' }, { fromDay: '2024-12-16' }]);
  assert.deepEqual(slicesOf(days('2024-03-01', '2024-03-03'), 3), [{ toDay: '2024-03-02' }, { fromDay: '2024-03-02', toDay: '2024-03-03' }, { fromDay: '2024-03-03' }]);
  // More slices asked than buckets: one per bucket.
  assert.deepEqual(slicesOf(days('2024-03-01', '2024-03-02'), 5), [{ toDay: '2024-03-02' }, { fromDay: '2024-03-02' }]);
  // Weeks start on Mondays (4 March 2024 is one), months on the first.
  assert.deepEqual(slicesOf(days('2024-03-01', '2024-03-31', { time_granularity: 'WEEKLY' }), 2), [{ toDay: '2024-03-11' }, { fromDay: '2024-03-11' }]);
  assert.deepEqual(slicesOf(days('2024-01-15', '2024-04-14', { time_granularity: 'MONTHLY' }), 2), [{ toDay: '2024-03-01' }, { fromDay: '2024-03-01' }]);
  assert.deepEqual(slicesOf(days('2024-03-02', '2024-03-30', { time_granularity: 'MONTHLY' }), 4), [{}]);
  // Instants: the local days they touch in the client's zone (New York: UTC−5, then −4 from 10 March).
  const instants = days('2024-03-01T00:00:00-05:00', '2024-03-03T12:00:00-04:00');
  assert.deepEqual(slicesOf(instants, 3), [{ toDay: '2024-03-02' }, { fromDay: '2024-03-02', toDay: '2024-03-03' }, { fromDay: '2024-03-03' }]);
});

test('one slice: when one is asked, for HOURLY rows, for one bucket, and for kept totals', () => {
  const march = days('2024-03-01', '2024-03-31');
  assert.deepEqual(slicesOf(march, 1), [{}]);
  assert.deepEqual(slicesOf(days('2024-03-01', '2024-03-31', { time_granularity: 'HOURLY' }), 4), [{}]);
  assert.deepEqual(slicesOf({ ...march, granularity: 'PERIOD' }, 4), [{}]);
  assert.deepEqual(slicesOf({ ...march, fromKeptTotals: true }, 4), [{}]);
  assert.deepEqual(slicesOf(days('2024-03-01', '2024-03-01'), 4), [{}]);
});

test('readingTogether: the transactions see one snapshot, taken before the first statement of any', async () => {
  const { db } = service;
  const count = async (q: { query: typeof db.query }) => Number((await q.query<{ n: string }>('SELECT count(*) AS n FROM clients'))[0]!.n);
  await db.readingTogether(2, async (txs) => {
    assert.equal(txs.length, db.kind === 'postgres' ? 2 : 1, 'PGlite has one connection');
    const before = await count(txs[0]!);
    if (db.kind === 'pglite') return; // a write would wait for this transaction
    const snapshot = async (q: { query: typeof db.query }) => (await q.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s'))[0]!.s;
    assert.equal(await snapshot(txs[1]!), await snapshot(txs[0]!), 'the second transaction took the first one\'s snapshot');
    await service.createClient('committed while the slices read');
    assert.equal(await count(db), before + 1);
    // On Citus the shared snapshot is the coordinator's: a worker's transaction takes its own at
    // its first statement there (docs/decisions.md, "Long exports in slices, side by side").
    if (citusUrl) return;
    assert.equal(await count(txs[1]!), before, 'the second transaction reads the first one\'s snapshot, not the state after the write');
  });
});

/** Every column of every row, hidden sort keys and sums included, in the order read. */
const SELECT = ['row_to_json(r)::text AS row'];

/** The rows of `slices`, each on a connection of its own on PostgreSQL, in turn on PGlite's one. */
async function rowsOfSlices(plan: ExportPlan, slices: Slice[], batchSize = 1000, of: Tenant = tenant): Promise<string[]> {
  const rows: string[] = [];
  const collect = async (batch: Row[]) => void rows.push(...batch.map((row) => row.row as string));
  await service.db.readingTogether(slices.length, (txs) => readSlices(txs, of, plan, slices, { batchSize, select: SELECT }, collect));
  return rows;
}

const MODELS = ['linear', 'first_touch', 'time_decay', 'clicks_and_views'];
const request = fc.record({
  period: fc.constantFrom(
    { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' },
    { period_starting_at: '2024-03-01T00:00:00-05:00', period_ending_at: '2024-04-01T00:00:00-04:00' },
    { period_starting_at: '2024-02-26', period_ending_at: '2024-04-07' },
  ),
  time_granularity: fc.constantFrom('DAILY', 'WEEKLY', 'MONTHLY'),
  level: fc.constantFrom('platform', 'campaign', 'ad'),
  breakdowns: fc.constantFrom(
    [],
    [{ key: 'account', values: [] }],
    [{ key: 'account', values: ['m1', 'g2', ''] }],
    [{ key: 'platform', values: ['meta', 'tiktok', 'email', 'unattributed'] }],
  ),
  include_kind_and_platform: fc.boolean(),
  include_ids: fc.boolean(),
  remove_zero_spend: fc.boolean(),
  summed: fc.boolean(),
  attributed: fc.boolean(),
  models: fc.subarray(MODELS, { minLength: 1, maxLength: 2 }),
  windows: fc.subarray(['1', '7', '30', 'infinity'], { minLength: 1, maxLength: 2 }),
  modes: fc.subarray(['cash', 'accrual'], { minLength: 1 }),
});

test('property: the slices\' rows, read back in order, are the whole period\'s rows, whatever the plan', async () => {
  await fc.assert(
    fc.asyncProperty(request, fc.integer({ min: 2, max: 5 }), fc.integer({ min: 1, max: 7 }), async (asked, count, batchSize) => {
      const metrics = ['spend', 'clicks', ...(asked.attributed ? ['rev', 'txns', 'revFt', 'roas', 'visits', 'newVisits'] : []), ...(asked.summed ? ['revenue', 'refunds', 'new_customers', 'returning_customers'] : [])];
      const plan = planOf({
        period_type: 'FIXED',
        period_options: asked.period,
        time_granularity: asked.time_granularity,
        level: asked.level,
        breakdowns: asked.breakdowns,
        metrics: metrics.map((id) => ({ id })),
        options: {
          include_ids: asked.include_ids,
          include_kind_and_platform: asked.include_kind_and_platform,
          remove_zero_spend: asked.remove_zero_spend,
          export_aggregation: asked.summed ? 'DATE' : 'NONE',
        },
        attribution_options: { attribution_models: asked.models, attribution_windows: asked.windows, accounting_modes: asked.modes },
      });
      const slices = slicesOf(plan, count);
      fc.pre(slices.length > 1); // a month of MONTHLY rows is one bucket
      const whole = await rowsOfSlices(plan, [{}]);
      assert.ok(whole.length > 0);
      const sliced = await rowsOfSlices(plan, slices, batchSize);
      assert.deepEqual(sliced, whole);
    }),
    { numRuns: 25, seed: 11 },
  );
});

test('an export of three models and both modes reads the same rows from slices on connections of their own', async () => {
  const plan = planOf({
    period_type: 'FIXED',
    period_options: { period_starting_at: '2024-02-20', period_ending_at: '2024-04-05' },
    level: 'campaign',
    metrics: ['spend', 'rev', 'txns', 'visits'].map((id) => ({ id })),
    attribution_options: { attribution_models: ['first_touch', 'linear', 'time_decay'], accounting_modes: ['cash', 'accrual'] },
  });
  const whole = await rowsOfSlices(plan, [{}]);
  const read: string[] = [];
  await readSlicedRows(service.db, tenant, plan, { connections: 3, batchSize: 4, select: SELECT }, async (batch) => void read.push(...batch.map((row) => row.row as string)));
  assert.deepEqual(read, whole);
  // Six combinations, each with rows in both halves of the period.
  const combinations = whole.map((row) => (JSON.parse(row) as { combination: number }).combination);
  assert.deepEqual([...new Set(combinations)], [1, 2, 3, 4, 5, 6]);
});

const AZORES_PERIOD = { period_type: 'FIXED', period_options: { period_starting_at: '2024-10-20', period_ending_at: '2024-11-02' } };
const rowsOn = (rows: string[], date: string) => rows.map((row) => JSON.parse(row) as Record<string, unknown>).filter((row) => row.date === date);

test('a day whose midnight comes twice starts at the first: its first hour is in its own rows, whole or cut there', async () => {
  const plan = planOf({ ...AZORES_PERIOD, metrics: ['spend', 'revenue', 'transactions', 'new_customers'].map((id) => ({ id })), options: { export_aggregation: 'DATE' } }, AZORES);
  assert.deepEqual(slicesOf(plan, 2), [{ toDay: '2024-10-27' }, { fromDay: '2024-10-27' }]);
  const whole = await rowsOfSlices(plan, [{}], 1000, azores.tenant);
  assert.deepEqual(
    rowsOn(whole, '2024-10-27').map(({ spend, revenue, transactions, new_customers }) => ({ spend, revenue, transactions, new_customers })),
    [{ spend: 10, revenue: 30, transactions: 2, new_customers: 1 }],
  );
  assert.deepEqual(await rowsOfSlices(plan, slicesOf(plan, 2), 1000, azores.tenant), whole);
  // A period that starts on that day.
  const fromThatDay = planOf({ ...AZORES_PERIOD, period_options: { period_starting_at: '2024-10-27', period_ending_at: '2024-10-27' }, metrics: [{ id: 'revenue' }], options: { export_aggregation: 'DATE' } }, AZORES);
  assert.deepEqual(rowsOn(await rowsOfSlices(fromThatDay, [{}], 1000, azores.tenant), '2024-10-27').map((row) => row.revenue), [30]);
});

test('attributed rows cut at that midnight keep every credit and visit, zero-spend rows removed or not', async () => {
  for (const remove_zero_spend of [true, false]) {
    const plan = planOf(
      {
        ...AZORES_PERIOD,
        level: 'campaign',
        metrics: ['spend', 'rev', 'txns', 'visits', 'newVisits'].map((id) => ({ id })),
        options: { remove_zero_spend },
        attribution_options: { attribution_models: ['linear'], attribution_windows: ['7'], accounting_modes: ['cash', 'accrual'] },
      },
      AZORES,
    );
    const whole = await rowsOfSlices(plan, [{}], 1000, azores.tenant);
    assert.deepEqual(
      rowsOn(whole, '2024-10-27').map(({ rev, txns, visits, newVisits }) => ({ rev, txns, visits, newVisits })),
      [
        { rev: 30, txns: 2, visits: 2, newVisits: 1 },
        { rev: 30, txns: 2, visits: 2, newVisits: 1 },
      ],
    );
    assert.deepEqual(await rowsOfSlices(plan, slicesOf(plan, 2), 1000, azores.tenant), whole);
  }
});

test('a slice that fails fails the read only once every slice has settled: none sends a statement after the transactions end', { skip: service.db.kind !== 'postgres' }, async () => {
  const plan = days('2024-03-01', '2024-03-30');
  let ended = false;
  const late: string[] = [];
  const failing = (tx: Queryable): Queryable => ({
    ...tx,
    query: async (sql, params) => {
      if (sql.startsWith('DECLARE')) throw new Error('slice 1 failed');
      return tx.query(sql, params);
    },
  });
  const slow = (tx: Queryable): Queryable => ({
    ...tx,
    query: async (sql, params) => {
      // The second slice is slower to set up (a busy server): its first setting takes a second.
      if (sql.includes('work_mem')) await tx.query('SELECT pg_sleep(1)');
      if (ended) late.push(sql);
      return tx.query(sql, params);
    },
  });
  await assert.rejects(
    service.db.readingTogether(2, (txs) => readSlices([failing(txs[0]!), slow(txs[1]!)], tenant, plan, slicesOf(plan, 2), { batchSize: 10, select: ['1 AS one'] }, async () => {})),
    /slice 1 failed/,
  );
  ended = true;
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual(late, []);
});
