import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ADMIN_TOKEN, assertErrorEnvelope, finishedExport, minimalOrder, parseCsv, startExportingService, type TestApp, type TestClient } from './helpers.js';

/*
 * GET /v1/reports/performance over HTTP: data in through the API, a report out, against the CSV
 * of an export of the same options, on the same store.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

async function send(target: TestApp, client: Pick<TestClient, 'headers'>, url: string, data: unknown[]) {
  const response = await target.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? (data as object) : { data } });
  assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
}

const spend = (hour_start_iso: string, platform_name: string, campaign_id: string, amount: number, spend_currency = 'USD') => ({
  hour_start_iso,
  platform_name,
  platform_account_id: 'acc',
  campaign_id,
  campaign_name: `${campaign_id} name`,
  spend: amount,
  spend_currency,
  impressions: 100,
  clicks: 10,
});
const touch = (touchpoint_id: string, occurred_at: string, visitor: string, fields: Record<string, unknown> = {}) => ({
  touchpoint_id,
  occurred_at,
  visitor_id: `v-${visitor}`,
  customer_id: `cust-${visitor}`,
  ...fields,
});
const order = (order_id: string, customer: string, time_of_purchase: string, purchase_total: number) =>
  minimalOrder(order_id, { customer_id: `cust-${customer}`, time_of_purchase, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });

/** A client in Berlin with spend on two platforms, touchpoints and orders over 2 to 4 March 2024. */
async function seeded(target: TestApp = app): Promise<TestClient> {
  const client = await service.createClient();
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: 'Europe/Berlin' },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  await send(target, client, '/v1/spend_hourly', [
    spend('2024-03-02T10:00:00Z', 'meta', 'spring', 10),
    spend('2024-03-03T10:00:00Z', 'meta', 'spring', 20),
    spend('2024-03-03T11:00:00Z', 'meta', 'winter', 7.5),
    spend('2024-03-04T09:00:00Z', 'google', 'search', 12),
  ]);
  await send(target, client, '/v1/touchpoints', [
    touch('a1', '2024-03-02T11:00:00Z', 'a', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('a2', '2024-03-03T12:00:00Z', 'a', { platform_name: 'google', campaign_id: 'search' }),
    touch('b1', '2024-03-03T13:00:00Z', 'b', { platform_name: 'meta', campaign_id: 'winter' }),
    touch('c1', '2024-03-04T08:00:00Z', 'c', { platform_name: 'google', campaign_id: 'search' }),
  ]);
  await send(target, client, '/v2/orders', [
    order('a-0', 'a', '2024-02-01T10:00:00Z', 40),
    order('a-1', 'a', '2024-03-03T15:00:00Z', 100),
    order('b-1', 'b', '2024-03-03T18:00:00Z', 45),
    order('d-1', 'd', '2024-03-04T10:00:00Z', 30),
  ]);
  return client;
}

const report = (client: Pick<TestClient, 'headers'>, query: Record<string, string>, target: TestApp = app) =>
  target.inject({ method: 'GET', url: `/v1/reports/performance?${new URLSearchParams(query)}`, headers: client.headers });

/** Runs an export to SUCCESS; its rows by header. */
async function exportRows(client: TestClient, body: object): Promise<Record<string, string>[]> {
  const created = await app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: body });
  assert.equal(created.statusCode, 201, created.body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  const [header, ...rows] = parseCsv((await app.inject({ method: 'GET', url: new URL(result.result[0]!).pathname + new URL(result.result[0]!).search })).body);
  return rows.map((row) => Object.fromEntries(header!.map((name, index) => [name, row[index]!])));
}

/** A report's rows as an export's CSV writes them: numbers and text as cells, null as empty. */
const asCells = (rows: Record<string, unknown>[]) => rows.map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value === null ? '' : String(value)])));
/** The CSV's cells with numbers written as JSON writes them (100.000000 is 100). */
const normalised = (rows: Record<string, string>[], metrics: string[]) =>
  rows.map((row) => Object.fromEntries(Object.entries(row).map(([key, cell]) => [key, metrics.includes(key) && cell !== '' ? String(Number(cell)) : cell])));

const PERIOD = { start_date: '2024-03-02', end_date: '2024-03-04' };
const CAMPAIGN_METRICS = ['spend', 'rev', 'roas', 'cac', 'txns', 'visits'];

test('campaign rows equal the CSV of an export of the same options, ids included; totals from summed parts', async () => {
  const client = await seeded();
  const response = await report(client, { ...PERIOD, level: 'campaign', metrics: CAMPAIGN_METRICS.join(','), model: 'last_touch', window: '7', mode: 'cash' });
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json();
  const exported = await exportRows(client, {
    level: 'campaign',
    period_type: 'FIXED',
    period_options: { period_starting_at: PERIOD.start_date, period_ending_at: PERIOD.end_date },
    options: { include_ids: true },
    attribution_options: { attribution_models: ['last_touch'], attribution_windows: ['7'], accounting_modes: ['cash'] },
    metrics: CAMPAIGN_METRICS.map((id) => ({ id })),
  });
  assert.ok(exported.length >= 4, JSON.stringify(exported));
  assert.deepEqual(asCells(body.rows), normalised(exported, CAMPAIGN_METRICS));
  assert.ok(body.rows.some((row: Record<string, unknown>) => row.campaign_id === 'spring' && row.platform === 'meta'));
  assert.equal(body.currency, 'USD');
  // Spend 49.5; last touch credits a-1 (100) to google search, b-1 (45) to meta winter, d-1 (30) is unattributed.
  assert.deepEqual(body.totals, { spend: 49.5, rev: 175, roas: Number((175 / 49.5).toFixed(6)), cac: 16.5, txns: 3, visits: 4 });
  // The hosted API's aliases total as the metrics they name.
  const aliased = (await report(client, { ...PERIOD, level: 'campaign', metrics: 'revAttributed,imprs', model: 'last_touch', window: '7', mode: 'cash' })).json();
  const impressions = aliased.rows.reduce((sum: number, row: Record<string, number>) => sum + row.imprs!, 0);
  assert.ok(impressions > 0);
  assert.deepEqual(aliased.totals, { revAttributed: 175, imprs: impressions });
});

test('level total: the store metrics beside attribution per day, equal to an export summed by DATE', async () => {
  const client = await seeded();
  const metrics = ['spend', 'rev', 'revenue', 'mer', 'transactions'];
  const response = await report(client, { ...PERIOD, level: 'total', metrics: metrics.join(',') });
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json();
  const exported = await exportRows(client, {
    period_type: 'FIXED',
    period_options: { period_starting_at: PERIOD.start_date, period_ending_at: PERIOD.end_date },
    options: { export_aggregation: 'DATE' },
    metrics: metrics.map((id) => ({ id })),
  });
  assert.deepEqual(asCells(body.rows), normalised(exported, metrics));
  assert.deepEqual(
    body.rows.map((row: Record<string, unknown>) => [row.date, row.spend, row.revenue]),
    [['2024-03-02', 10, 0], ['2024-03-03', 27.5, 145], ['2024-03-04', 12, 30]],
  );
  assert.deepEqual(body.totals, { spend: 49.5, rev: 175, revenue: 175, mer: Number((175 / 49.5).toFixed(6)), transactions: 3 });
});

test('PERIOD: one row per object for the whole period, the sums of its days; customers counted over the period', async () => {
  const client = await seeded();
  const query = { ...PERIOD, level: 'campaign', metrics: 'spend,rev,txns,visits,roas' };
  const daily = (await report(client, query)).json();
  const whole = (await report(client, { ...query, granularity: 'PERIOD' })).json();
  const summed = new Map<string, { spend: number; rev: number; txns: number; visits: number }>();
  for (const row of daily.rows) {
    const key = `${row.platform}|${row.campaign_id}|${row.currency}`;
    const sums = summed.get(key) ?? { spend: 0, rev: 0, txns: 0, visits: 0 };
    for (const metric of ['spend', 'rev', 'txns', 'visits'] as const) sums[metric] += row[metric];
    summed.set(key, sums);
  }
  assert.deepEqual(
    whole.rows.map((row: Record<string, number | string>) => [row.date, `${row.platform}|${row.campaign_id}|${row.currency}`, row.spend, row.rev, row.txns, row.visits, row.roas]).sort((a: string[], b: string[]) => (a[1]! < b[1]! ? -1 : 1)),
    [...summed].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, sums]) => ['2024-03-02', key, sums.spend, sums.rev, sums.txns, sums.visits, sums.spend === 0 ? null : Number((sums.rev / sums.spend).toFixed(6))]),
  );
  assert.deepEqual(whole.totals, daily.totals);
  const store = (await report(client, { ...PERIOD, level: 'total', granularity: 'PERIOD', metrics: 'transactions,new_customers,returning_customers' })).json();
  // a ordered in February: returning; b and d are new.
  assert.deepEqual(store.rows.map((row: Record<string, number>) => [row.transactions, row.new_customers, row.returning_customers]), [[3, 2, 1]]);
});

test('channels=paid: the rows of the platforms with spend in the period, added up per day at level total', async () => {
  const client = await seeded();
  const query = { ...PERIOD, level: 'platform', model: 'linear', metrics: 'spend,rev,roas' };
  const all = (await report(client, query)).json();
  const paid = (await report(client, { ...query, channels: 'paid' })).json();
  const paidPlatforms = new Set(all.rows.filter((row: Record<string, number>) => row.spend !== 0).map((row: Record<string, string>) => row.platform));
  assert.deepEqual([...paidPlatforms].sort(), ['google', 'meta']);
  assert.deepEqual(paid.rows, all.rows.filter((row: Record<string, string>) => paidPlatforms.has(row.platform)));
  // google's click of 3 March converted the day before its spend: a paid channel's row without spend of its own.
  assert.ok(paid.rows.some((row: Record<string, unknown>) => row.platform === 'google' && row.spend === 0 && Number(row.rev) > 0));
  const paidRev = paid.rows.reduce((sum: number, row: Record<string, number>) => sum + row.rev!, 0);
  assert.ok(Math.abs(paid.totals.rev - paidRev) < 1e-9);
  assert.equal(paid.totals.spend, all.totals.spend, 'all spend is paid channels\' spend');
  assert.ok(paid.totals.rev < all.totals.rev, 'the unattributed order is not paid revenue');
  assert.equal(paid.totals.roas, Number((paid.totals.rev / paid.totals.spend).toFixed(6)));

  // level=total: one row a day, the sums of that day's paid rows, in the days' order, with the same totals.
  const summed = (await report(client, { ...query, level: 'total', channels: 'paid' })).json();
  const byDay = new Map<string, { spend: number; rev: number }>();
  for (const row of paid.rows) {
    const day = byDay.get(row.date) ?? { spend: 0, rev: 0 };
    byDay.set(row.date, { spend: day.spend + row.spend, rev: day.rev + row.rev });
  }
  assert.deepEqual(
    summed.rows.map((row: Record<string, unknown>) => Object.keys(row)),
    summed.rows.map(() => ['date', 'currency', 'attribution_model', 'attribution_window', 'accounting_mode', 'spend', 'rev', 'roas']),
  );
  assert.deepEqual(summed.rows.map((row: Record<string, string>) => row.date), [...byDay.keys()].sort());
  for (const row of summed.rows) {
    const day = byDay.get(row.date)!;
    assert.ok(Math.abs(row.spend - day.spend) < 1e-9 && Math.abs(row.rev - day.rev) < 1e-9, row.date);
    assert.equal(row.roas, day.spend === 0 ? null : Number((day.rev / day.spend).toFixed(6)), row.date);
  }
  assert.deepEqual(summed.totals, paid.totals);

  // The paid channels are those with spend in the period asked: on 3 March alone, google had none.
  const third = (await report(client, { ...query, start_date: '2024-03-03', end_date: '2024-03-03', level: 'total', granularity: 'PERIOD', channels: 'paid' })).json();
  const metaThird = (await report(client, { ...query, start_date: '2024-03-03', end_date: '2024-03-03', granularity: 'PERIOD' })).json().rows.find((row: Record<string, string>) => row.platform === 'meta');
  assert.deepEqual([third.rows[0].spend, third.rows[0].rev], [metaThird.spend, metaThird.rev]);

  // Store metrics count every channel: refused with channels=paid, as an unknown choice is.
  const store = assertErrorEnvelope(await report(client, { ...query, level: 'total', channels: 'paid', metrics: 'revenue,rev' }), 422);
  assert.deepEqual(store.errors!.map((error) => [error.loc, error.msg]), [['query/metrics', 'revenue describes the whole store, every channel: ask for it without channels=paid']]);
  assertErrorEnvelope(await report(client, { ...query, channels: 'organic' }), 422);
});

test('changing the model changes the figures', async () => {
  const client = await seeded();
  const query = { ...PERIOD, level: 'campaign', metrics: 'rev' };
  const figures = async (model: string) => (await report(client, { ...query, model })).json().rows.map((row: Record<string, unknown>) => `${row.date} ${row.campaign_id} ${row.rev}`);
  assert.notDeepEqual(await figures('first_touch'), await figures('last_touch'));
});

test('every problem of the query is answered at once, with its loc; no 500', async () => {
  const client = await seeded();
  const wrong = await report(client, { start_date: '2024-03-05', end_date: '2024-03-04', level: 'campaign', metrics: 'spend,nope,revenue' });
  const envelope = assertErrorEnvelope(wrong, 422);
  assert.deepEqual(
    envelope.errors!.map((error) => `${error.loc} ${error.type}`),
    ['query/metrics enum', 'query/metrics dependency', 'query/end_date period'],
  );
  const long = assertErrorEnvelope(await report(client, { start_date: '2024-01-01', end_date: '2024-04-02', metrics: 'spend' }), 422);
  assert.match(long.errors![0]!.msg, /at most 92 days.*POST \/v1\/exports\/data-export/);
  assert.equal((await report(client, { start_date: '2024-01-01', end_date: '2024-04-01', metrics: 'spend' })).statusCode, 200, '92 days are taken');
  const schema = assertErrorEnvelope(await report(client, { start_date: '2024-13-01', end_date: 'x', metrics: 'spend', level: 'planet', extra: '1' }), 422);
  assert.deepEqual(schema.errors!.map((error) => error.loc).sort(), ['query/end_date', 'query/extra', 'query/level', 'query/start_date']);
  assertErrorEnvelope(await report(client, { ...PERIOD, level: 'total', breakdown: 'platform', metrics: 'spend' }), 422);
  assert.equal((await report(client, { ...PERIOD, level: 'campaign', metrics: 'rev,aov' })).statusCode, 200, "beside rev, aov is the row's");
  assertErrorEnvelope(await report({ headers: {} }, { ...PERIOD, metrics: 'spend' }), 401);
});

test('a client sees only its own rows, of the environment of the port', async () => {
  await seeded();
  const other = await service.createClient();
  const own = (await report(other, { ...PERIOD, level: 'campaign', metrics: 'spend,rev,visits' })).json();
  assert.deepEqual(own, { rows: [], totals: { spend: 0, rev: 0, visits: 0 }, currency: null });
  const inUat = await seeded(service.uat);
  assert.deepEqual((await report(inUat, { ...PERIOD, metrics: 'spend' })).json().rows, [], 'production holds none of its UAT data');
  const uatRows = (await report(inUat, { ...PERIOD, metrics: 'spend' }, service.uat)).json().rows;
  assert.ok(uatRows.length > 0);
  const dryRun = await report({ headers: { authorization: 'None', 'data-client-id': 'test' } }, { ...PERIOD, metrics: 'spend' }, service.uat);
  assert.equal(dryRun.statusCode, 200, dryRun.body);
  assert.deepEqual(dryRun.json().rows, []);
});

test('rows in several currencies: each row keeps its own, and no total adds them', async () => {
  const client = await service.createClient();
  await send(app, client, '/v1/spend_hourly', [spend('2024-03-02T10:00:00Z', 'meta', 'a', 10), spend('2024-03-02T11:00:00Z', 'meta', 'b', 9, 'EUR')]);
  const body = (await report(client, { ...PERIOD, level: 'campaign', metrics: 'spend,cpc' })).json();
  assert.deepEqual(body.rows.map((row: Record<string, unknown>) => `${row.currency} ${row.spend}`), ['USD 10', 'EUR 9']);
  assert.deepEqual(body.totals, { spend: null, cpc: null });
  assert.equal(body.currency, null);
});
