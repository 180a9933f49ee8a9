import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { MODEL_ALIASES, MODELS } from '../src/attribution/models.js';
import { ADMIN_TOKEN, finishedExport, minimalOrder, parseCsv, startExportingService, type TestClient } from './helpers.js';

/*
 * Attributed exports over HTTP: touchpoints and orders in, an export per model, window and
 * accounting mode out, as CSV, against numbers computed by hand.
 */

const service = await startExportingService();
after(() => service.close());
const app = service.production;

async function send(client: TestClient, url: string, data: unknown[]) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload: url === '/v2/orders' ? (data as object) : { data } });
  assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
}

/** Runs an export to SUCCESS; its rows by header name. */
async function exportRows(client: TestClient, body: object): Promise<Record<string, string>[]> {
  const created = await app.inject({ method: 'POST', url: '/v1/exports/data-export', headers: client.headers, payload: body });
  assert.equal(created.statusCode, 201, created.body);
  const result = await finishedExport(app, client, created.json().id);
  assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
  // Rows of visits alone have no currency: they are not one of the export's currencies.
  const currencies = (result.warn as { currencies?: string } | null)?.currencies;
  if (currencies) assert.match(currencies, /^Amounts in [A-Z]{3}(, [A-Z]{3})+ are in rows of their own/);
  const files = await Promise.all(
    result.result.map((link) => {
      const url = new URL(link);
      return app.inject({ method: 'GET', url: url.pathname + url.search });
    }),
  );
  const [header, ...rows] = files.flatMap((file, index) => parseCsv(file.body).slice(index === 0 ? 0 : 1));
  return rows.map((row) => Object.fromEntries(header!.map((name, index) => [name, row[index]!])));
}

/** The cells of `columns` of each row, joined by `|`, for assertions that read as tables. */
const table = (rows: Record<string, string>[], columns: string[]) => rows.map((row) => columns.map((column) => row[column]).join('|'));

const NEW_YORK = 'America/New_York';
// Local days 1 and 2 March 2024 in New York (UTC−5).
const PERIOD = { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01T00:00:00-05:00', period_ending_at: '2024-03-03T00:00:00-05:00' } };

const spend = (hour_start_iso: string, campaign_id: string, amount: number) => ({
  hour_start_iso,
  platform_name: 'meta',
  campaign_id,
  campaign_name: `${campaign_id} name`,
  spend: amount,
  spend_currency: 'USD',
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

/**
 * A client in New York with:
 * - spend on meta `spring` (10 on day 1, 20 on day 2) and `winter` (5 on day 1, spend only);
 * - customer a: a meta `spring` click (09:00 local, day 1), a google `search` click (13:00,
 *   google has no spend: touchpoint only), then their first order, 100 (15:00); another
 *   `spring` visit on day 2 (not a new visit);
 * - customer b: a direct visit at 23:30 local on day 1 (04:30 UTC on day 2), then an order of
 *   60 at 01:00 local on day 2, b's second order (the first is in February, with no path);
 * - customer c: a first order of 30 on day 2 with no touchpoint: unattributed;
 * - visitor d: a `spring` visit on day 2, with no order.
 */
async function scenario(): Promise<TestClient> {
  const client = await service.createClient();
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: NEW_YORK },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  await send(client, '/v1/spend_hourly', [
    spend('2024-03-01T15:00:00Z', 'spring', 10),
    spend('2024-03-02T15:00:00Z', 'spring', 20),
    spend('2024-03-01T16:00:00Z', 'winter', 5),
  ]);
  await send(client, '/v1/touchpoints', [
    touch('a1', '2024-03-01T14:00:00Z', 'a', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('a2', '2024-03-01T18:00:00Z', 'a', { platform_name: 'google', campaign_id: 'search' }),
    touch('a3', '2024-03-02T14:00:00Z', 'a', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('b1', '2024-03-02T04:30:00Z', 'b'),
    touch('d1', '2024-03-02T15:30:00Z', 'd', { platform_name: 'meta', campaign_id: 'spring' }),
  ]);
  await send(client, '/v2/orders', [
    order('a-1', 'a', '2024-03-01T20:00:00Z', 100),
    order('b-0', 'b', '2024-02-01T12:00:00Z', 40),
    order('b-1', 'b', '2024-03-02T06:00:00Z', 60),
    order('c-1', 'c', '2024-03-02T17:00:00Z', 30),
  ]);
  return client;
}

const COLUMNS = ['date', 'platform', 'campaign', 'currency', 'attribution_model', 'attribution_window', 'accounting_mode'];
const METRICS = ['spend', 'rev', 'txns', 'revFt', 'revRtn', 'roas', 'visits', 'newVisits', 'ecr'];
const campaignExport = (attribution_options: object, extra: object = {}) => ({
  ...PERIOD,
  level: 'campaign',
  attribution_options,
  metrics: METRICS.map((id) => ({ id, label: id })),
  ...extra,
});

test('campaign rows: spend and touchpoint objects, channel and unattributed rows, credits by hand (linear, 30 days, cash and accrual)', async () => {
  const client = await scenario();
  const rows = await exportRows(client, campaignExport({ attribution_models: ['linear'], attribution_windows: ['30'], accounting_modes: ['cash', 'accrual'] }));
  assert.deepEqual(table(rows, [...COLUMNS, ...METRICS]), [
    // cash: b's order counts on day 2, when it was placed; b's visit on day 1, when it was made.
    '2024-03-01|direct|||linear|30|cash|0|0.000000|0.000000|0.000000|0.000000||1|1|0.000000',
    '2024-03-01|google|search|USD|linear|30|cash|0|50.000000|0.500000|50.000000|0.000000||1|0|0.500000',
    '2024-03-01|meta|spring name|USD|linear|30|cash|10|50.000000|0.500000|50.000000|0.000000|5.000000|1|1|0.500000',
    '2024-03-01|meta|winter name|USD|linear|30|cash|5|0.000000|0.000000|0.000000|0.000000|0.000000|0|0|',
    '2024-03-02|direct||USD|linear|30|cash|0|60.000000|1.000000|0.000000|60.000000||0|0|',
    '2024-03-02|meta|spring name|USD|linear|30|cash|20|0.000000|0.000000|0.000000|0.000000|0.000000|2|1|0.000000',
    '2024-03-02|unattributed||USD|linear|30|cash|0|30.000000|1.000000|30.000000|0.000000||0|0|',
    // accrual: b's credit is on day 1, the local day of its touchpoint; the unattributed order stays on day 2.
    '2024-03-01|direct||USD|linear|30|accrual|0|60.000000|1.000000|0.000000|60.000000||1|1|1.000000',
    '2024-03-01|google|search|USD|linear|30|accrual|0|50.000000|0.500000|50.000000|0.000000||1|0|0.500000',
    '2024-03-01|meta|spring name|USD|linear|30|accrual|10|50.000000|0.500000|50.000000|0.000000|5.000000|1|1|0.500000',
    '2024-03-01|meta|winter name|USD|linear|30|accrual|5|0.000000|0.000000|0.000000|0.000000|0.000000|0|0|',
    '2024-03-02|meta|spring name|USD|linear|30|accrual|20|0.000000|0.000000|0.000000|0.000000|0.000000|2|1|0.000000',
    '2024-03-02|unattributed||USD|linear|30|accrual|0|30.000000|1.000000|30.000000|0.000000||0|0|',
  ]);
});

test('an export without first-order or new-visit metrics leaves their probes out, with the same rows and figures', async () => {
  const client = await scenario();
  const options = { attribution_models: ['linear', 'first_touch'], attribution_windows: ['30'], accounting_modes: ['cash', 'accrual'] };
  const cheap = METRICS.filter((metric) => !['revFt', 'revRtn', 'newVisits'].includes(metric));
  const everything = await exportRows(client, campaignExport(options));
  const without = await exportRows(client, campaignExport(options, { metrics: cheap.map((id) => ({ id, label: id })) }));
  assert.ok(everything.some((row) => row.newVisits !== '0' && row.revRtn !== '0.000000'));
  assert.deepEqual(table(without, [...COLUMNS, ...cheap]), table(everything, [...COLUMNS, ...cheap]));
});

test('each model its own set of rows, in the order asked', async () => {
  const client = await scenario();
  const rows = await exportRows(
    client,
    campaignExport({ attribution_models: ['first_touch', 'last_touch'], attribution_windows: ['1'] }, { metrics: [{ id: 'rev', label: 'rev' }, { id: 'txnsFt', label: 'txnsFt' }] }),
  );
  const credited = rows.filter((row) => row.rev !== '0.000000');
  assert.deepEqual(table(credited, ['date', 'platform', 'campaign', 'attribution_model', 'attribution_window', 'accounting_mode', 'rev', 'txnsFt']), [
    '2024-03-01|meta|spring name|first_touch|1|cash|100.000000|1.000000',
    '2024-03-02|direct||first_touch|1|cash|60.000000|0.000000',
    '2024-03-02|unattributed||first_touch|1|cash|30.000000|1.000000',
    '2024-03-01|google|search|last_touch|1|cash|100.000000|1.000000',
    '2024-03-02|direct||last_touch|1|cash|60.000000|0.000000',
    '2024-03-02|unattributed||last_touch|1|cash|30.000000|1.000000',
  ]);
});

test('a touchpoint a model gives nothing has no row of zeros on the day of the purchase; its visit keeps its own row', async () => {
  const client = await service.createClient();
  // f's order of 80 on day 2: a meta `spring` click on day 1, then a google `search` click on day 2, the last touch.
  await send(client, '/v1/touchpoints', [
    touch('f1', '2024-03-01T14:00:00Z', 'f', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('f2', '2024-03-02T14:00:00Z', 'f', { platform_name: 'google', campaign_id: 'search' }),
  ]);
  await send(client, '/v2/orders', [order('f-1', 'f', '2024-03-02T20:00:00Z', 80)]);
  const rows = await exportRows(
    client,
    campaignExport({ attribution_models: ['last_touch'], attribution_windows: ['30'], accounting_modes: ['cash'] }, { metrics: [{ id: 'rev' }, { id: 'visits' }] }),
  );
  assert.deepEqual(table(rows, ['date', 'platform', 'campaign', 'attribution_model', 'rev', 'visits']), [
    '2024-03-01|meta|spring|last_touch|0.000000|1',
    '2024-03-02|google|search|last_touch|80.000000|1',
  ]);
});

test("the hosted API's model ids are aliases: credited by our model, their rows named by the id asked", async () => {
  const client = await scenario();
  // A view of a tiktok ad an hour before a's order: clicks_and_views counts it, clicks_only does not.
  await send(client, '/v1/touchpoints', [touch('a-view', '2024-03-01T19:00:00Z', 'a', { type: 'view', platform_name: 'tiktok', campaign_id: 'feed' })]);
  const rows = await exportRows(
    client,
    campaignExport(
      { attribution_models: ['northbeam_custom__va', 'northbeam_custom', 'clicks_and_views', 'northbeam_custom__enh'], attribution_windows: ['1'] },
      { metrics: [{ id: 'rev', label: 'rev' }] },
    ),
  );
  const credited = rows.filter((row) => row.rev !== '0.000000');
  const clicksAndViews = (model: string) => [
    `2024-03-01|google|search|${model}|33.333333`,
    `2024-03-01|meta|spring name|${model}|33.333333`,
    `2024-03-01|tiktok|feed|${model}|33.333333`,
    `2024-03-02|direct||${model}|60.000000`,
    `2024-03-02|unattributed||${model}|30.000000`,
  ];
  assert.deepEqual(table(credited, ['date', 'platform', 'campaign', 'attribution_model', 'rev']), [
    ...clicksAndViews('northbeam_custom__va'),
    '2024-03-01|google|search|northbeam_custom|50.000000',
    '2024-03-01|meta|spring name|northbeam_custom|50.000000',
    '2024-03-02|direct||northbeam_custom|60.000000',
    '2024-03-02|unattributed||northbeam_custom|30.000000',
    ...clicksAndViews('clicks_and_views'),
    ...clicksAndViews('northbeam_custom__enh'),
  ]);
});

test('the infinity window: a touchpoint 400 days before the purchase is in its path, in no numbered window; accrual counts it on its day', async () => {
  const client = await service.createClient();
  await send(client, '/v1/spend_hourly', [spend('2024-03-01T15:00:00Z', 'spring', 10)]);
  // e's order of 100 at 20:00 UTC on 1 March 2024: a meta `spring` click 400 days before, a direct visit 12 hours before.
  await send(client, '/v1/touchpoints', [
    touch('e1', '2023-01-26T20:00:00Z', 'e', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('e2', '2024-03-01T08:00:00Z', 'e'),
  ]);
  await send(client, '/v2/orders', [order('e-1', 'e', '2024-03-01T20:00:00Z', 100)]);
  const day = (date: string) => ({ period_type: 'FIXED', period_options: { period_starting_at: date, period_ending_at: date } });
  const columns = ['date', 'platform', 'campaign', 'attribution_model', 'attribution_window', 'accounting_mode', 'spend', 'rev', 'txns'];
  const cash = await exportRows(client, {
    ...day('2024-03-01'),
    level: 'campaign',
    attribution_options: { attribution_models: ['linear'], attribution_windows: ['90', 'infinity'], accounting_modes: ['cash'] },
    metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'txns' }],
  });
  assert.deepEqual(table(cash, columns), [
    // 90 days: the direct visit alone; infinity: halves to the direct visit and to the click of 400 days before.
    '2024-03-01|direct||linear|90|cash|0|100.000000|1.000000',
    '2024-03-01|meta|spring name|linear|90|cash|10|0.000000|0.000000',
    '2024-03-01|direct||linear|infinity|cash|0|50.000000|0.500000',
    '2024-03-01|meta|spring name|linear|infinity|cash|10|50.000000|0.500000',
  ]);
  // Accrual: the click's half is counted on its own day, 400 days before the order; in no numbered window
  // (where the click has a row for its visit, with nothing credited).
  const accrual = await exportRows(client, {
    ...day('2023-01-26'),
    level: 'campaign',
    attribution_options: { attribution_models: ['linear'], attribution_windows: ['90', 'infinity'], accounting_modes: ['accrual'] },
    metrics: [{ id: 'rev' }, { id: 'txns' }],
  });
  assert.deepEqual(table(accrual, columns.filter((column) => column !== 'spend')), [
    '2023-01-26|meta|spring|linear|90|accrual|0.000000|0.000000',
    '2023-01-26|meta|spring|linear|infinity|accrual|50.000000|0.500000',
  ]);
});

test('defaults: attribution metrics without options are linear, 30 days, cash; DATE sums every row of a bucket, unattributed included', async () => {
  const client = await scenario();
  const rows = await exportRows(client, { ...PERIOD, options: { export_aggregation: 'DATE' }, metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'visits' }, { id: 'aov' }] });
  assert.deepEqual(table(rows, ['date', 'currency', 'attribution_model', 'attribution_window', 'accounting_mode', 'spend', 'rev', 'visits', 'aov']), [
    '2024-03-01|USD|linear|30|cash|15|100.000000|3|100.000000',
    '2024-03-02|USD|linear|30|cash|20|90.000000|2|45.000000',
  ]);
});

test("newVisits: a visit is new when it is its visitor's first visit ever, whether the earlier one is in the period or before it", async () => {
  const client = await service.createClient();
  const at = (day: string, hour: number) => `2024-${day}T${String(hour).padStart(2, '0')}:00:00Z`;
  await send(client, '/v1/touchpoints', [
    { touchpoint_id: 'known before', occurred_at: at('02-10', 12), visitor_id: 'v-known' },
    { touchpoint_id: 'known again', occurred_at: at('03-01', 12), visitor_id: 'v-known' },
    { touchpoint_id: 'first', occurred_at: at('03-01', 13), visitor_id: 'v-new' },
    { touchpoint_id: 'second', occurred_at: at('03-01', 14), visitor_id: 'v-new' },
    // Without a visitor, a touchpoint is its customer's; a view is no visit.
    { touchpoint_id: 'customer before', occurred_at: at('02-11', 12), customer_id: 'c-known' },
    { touchpoint_id: 'customer again', occurred_at: at('03-01', 15), customer_id: 'c-known' },
    { touchpoint_id: 'customer first', occurred_at: at('03-01', 16), customer_id: 'c-new' },
    { touchpoint_id: 'a view', occurred_at: at('02-12', 12), visitor_id: 'v-viewed', type: 'view', platform_name: 'meta', campaign_id: 'x' },
    { touchpoint_id: 'first visit after a view', occurred_at: at('03-01', 17), visitor_id: 'v-viewed' },
  ]);
  const rows = await exportRows(client, { ...PERIOD, options: { export_aggregation: 'DATE' }, metrics: [{ id: 'visits', label: 'visits' }, { id: 'newVisits', label: 'new' }] });
  assert.deepEqual(table(rows, ['date', 'visits', 'new']), ['2024-03-01|6|3']);
});

test("HOURLY, ids beside names, and the account breakdown: a touchpoint's object takes the account of its spend", async () => {
  const client = await service.createClient();
  await send(client, '/v1/spend_hourly', [{ ...spend('2024-03-01T10:00:00Z', 'spring', 10), platform_account_id: 'act_1' }]);
  await send(client, '/v1/touchpoints', [
    touch('t1', '2024-03-01T09:30:00Z', 'a', { platform_name: 'meta', campaign_id: 'spring' }),
    touch('t2', '2024-03-01T09:45:00Z', 'b', { platform_name: 'google', campaign_id: 'search' }),
  ]);
  await send(client, '/v2/orders', [order('a-1', 'a', '2024-03-01T10:15:00Z', 50), order('b-1', 'b', '2024-03-01T10:20:00Z', 20)]);
  const rows = await exportRows(client, {
    period_type: 'FIXED',
    period_options: { period_starting_at: '2024-03-01T00:00:00Z', period_ending_at: '2024-03-02T00:00:00Z' },
    level: 'campaign',
    time_granularity: 'HOURLY',
    breakdowns: [{ key: 'account', values: [] }],
    options: { include_ids: true },
    attribution_options: { attribution_models: ['last_touch'], attribution_windows: ['1'], accounting_modes: ['cash'] },
    metrics: ['spend', 'rev', 'visits'].map((id) => ({ id, label: id })),
  });
  // google has no spend, so no account: its row is named by its ids.
  assert.deepEqual(table(rows, ['date', 'platform', 'account', 'campaign', 'campaign_id', 'currency', 'spend', 'rev', 'visits']), [
    '2024-03-01T09:00:00+00:00|google||search|search||0|0.000000|1',
    '2024-03-01T09:00:00+00:00|meta|act_1|spring name|spring||0|0.000000|1',
    '2024-03-01T10:00:00+00:00|google||search|search|USD|0|20.000000|0',
    '2024-03-01T10:00:00+00:00|meta|act_1|spring name|spring|USD|10|50.000000|0',
  ]);
});

test("the hosted API's metric ids imprs and revAttributed are impressions and rev under their own headers", async () => {
  const client = await scenario();
  const rows = await exportRows(client, { ...PERIOD, level: 'campaign', metrics: ['imprs', 'impressions', 'revAttributed', 'rev'].map((id) => ({ id })) });
  assert.deepEqual(Object.keys(rows[0]!).slice(-4), ['imprs', 'impressions', 'revAttributed', 'rev']);
  assert.ok(rows.some((row) => row.rev !== '0.000000') && rows.some((row) => row.impressions !== '0'));
  for (const row of rows) assert.deepEqual([row.imprs, row.revAttributed], [row.impressions, row.rev]);
  // revAttributed alone makes the export attributed, as rev does.
  const [attributed] = await exportRows(client, { ...PERIOD, metrics: [{ id: 'revAttributed' }] });
  assert.equal(attributed!.attribution_model, 'linear');
});

test('platform breakdown values keep only the rows they name; remove_zero_spend drops touchpoint-only rows', async () => {
  const client = await scenario();
  const kept = await exportRows(
    client,
    campaignExport({ accounting_modes: ['cash'] }, { breakdowns: [{ key: 'platform', values: ['meta', 'unattributed'] }], options: { remove_zero_spend: true } }),
  );
  assert.deepEqual(table(kept, ['date', 'platform', 'campaign', 'spend', 'rev']), [
    '2024-03-01|meta|spring name|10|50.000000',
    '2024-03-01|meta|winter name|5|0.000000',
    '2024-03-02|meta|spring name|20|0.000000',
  ]);
});

test('unknown models are a 422, in one answer with the other problems; attribution options without attribution metrics are ignored, said in warn', async () => {
  const client = await service.createClient();
  const unknown = await app.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: client.headers,
    payload: { attribution_options: { attribution_models: ['linear', 'northbeam_custom__xyz'] }, metrics: [{ id: 'rev' }] },
  });
  assert.equal(unknown.statusCode, 422);
  assert.deepEqual(
    unknown.json().errors.map((error: { loc: string }) => error.loc),
    ['body/attribution_options/attribution_models/1'],
  );
  // One answer names every problem: an unknown metric, an unknown model and a bad window.
  const three = await app.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: client.headers,
    payload: { attribution_options: { attribution_models: ['lineal'], attribution_windows: ['5'] }, metrics: [{ id: 'revenu' }] },
  });
  assert.equal(three.statusCode, 422);
  assert.deepEqual(
    three.json().errors.map((error: { loc: string; msg: string }) => [error.loc, error.msg]).sort(),
    [
      ['body/attribution_options/attribution_models/0', 'Unknown attribution model: GET /v1/exports/attribution-models lists them'],
      ['body/attribution_options/attribution_windows/0', 'Must be one of: 1, 3, 7, 14, 30, 60, 90, infinity'],
      ['body/metrics/0/id', 'Unknown metric id: GET /v1/exports/metrics lists them'],
    ],
  );
  const ignoring = await app.inject({
    method: 'POST',
    url: '/v1/exports/data-export',
    headers: client.headers,
    payload: { attribution_options: { attribution_models: ['linear'], accounting_modes: ['accrual'] }, metrics: [{ id: 'spend' }] },
  });
  assert.equal(ignoring.statusCode, 201, ignoring.body);
  assert.deepEqual((await finishedExport(app, client, ignoring.json().id)).warn, {
    ignored: [
      'attribution_options.attribution_models (no attribution metric is asked for)',
      'attribution_options.accounting_modes (no attribution metric is asked for)',
    ],
  });
  const models = await app.inject({ method: 'GET', url: '/v1/exports/attribution-models', headers: client.headers });
  assert.deepEqual(models.json().attribution_models.map((model: { id: string }) => model.id), [
    ...MODELS.map((model) => model.id),
    ...Object.keys(MODEL_ALIASES),
  ]);
});

// Generated data: orders of a few customers, some with touchpoints, in two currencies.
const HOUR = 3_600_000;
const START = Date.parse('2024-03-01T05:00:00Z');
const generated = fc.record({
  orders: fc.array(fc.record({ customer: fc.integer({ min: 0, max: 5 }), hour: fc.integer({ min: -24, max: 72 }), cents: fc.integer({ min: 0, max: 100_000 }), euro: fc.boolean() }), {
    minLength: 1,
    maxLength: 12,
  }),
  touchpoints: fc.array(
    fc.record({
      customer: fc.integer({ min: 0, max: 5 }),
      hour: fc.integer({ min: -24 * 40, max: 72 }),
      campaign: fc.constantFrom('', 'spring', 'winter'),
      view: fc.boolean(),
    }),
    { maxLength: 20 },
  ),
});

test('property: in cash mode, every model credits all of the period\'s revenue, per currency, across its rows', async () => {
  await fc.assert(
    fc.asyncProperty(generated, async ({ orders, touchpoints }) => {
      const client = await scenario();
      await send(
        client,
        '/v2/orders',
        orders.map((o, index) =>
          minimalOrder(`g-${index}`, {
            customer_id: `gen-${o.customer}`,
            time_of_purchase: new Date(START + o.hour * HOUR).toISOString(),
            currency: o.euro ? 'EUR' : 'USD',
            purchase_total: o.cents / 100,
          }),
        ),
      );
      if (touchpoints.length > 0) {
        await send(
          client,
          '/v1/touchpoints',
          touchpoints.map((t, index) => ({
            touchpoint_id: `g-${index}`,
            occurred_at: new Date(START + t.hour * HOUR + index).toISOString(),
            customer_id: `gen-${t.customer}`,
            type: t.view ? 'view' : 'visit',
            ...(t.campaign ? { platform_name: 'meta', campaign_id: t.campaign } : {}),
          })),
        );
      }
      // The store's revenue of the period: the scenario's and the generated orders'.
      const expected: Record<string, number> = { USD: 190_00 };
      for (const o of orders) if (o.hour >= 0 && o.hour < 48) expected[o.euro ? 'EUR' : 'USD'] = (expected[o.euro ? 'EUR' : 'USD'] ?? 0) + o.cents;
      const rows = await exportRows(client, {
        ...PERIOD,
        level: 'campaign',
        attribution_options: { attribution_models: MODELS.map((model) => model.id), attribution_windows: ['7'], accounting_modes: ['cash'] },
        metrics: [{ id: 'rev' }],
      });
      for (const { id } of MODELS) {
        const totals: Record<string, { rev: number; rows: number }> = {};
        for (const row of rows.filter((r) => r.attribution_model === id && r.currency !== '')) {
          const total = (totals[row.currency!] ??= { rev: 0, rows: 0 });
          total.rev += Number(row.rev) * 100;
          total.rows += 1;
        }
        for (const [currency, cents] of Object.entries(expected)) {
          const total = totals[currency] ?? { rev: 0, rows: 0 };
          // Each row is rounded to 6 decimal places: at most half a millionth off per row.
          assert.ok(Math.abs(total.rev - cents) <= total.rows * 0.00005 + 1e-6, `${id} ${currency}: ${total.rev} ≠ ${cents}`);
        }
      }
    }),
    { numRuns: 8 },
  );
});
