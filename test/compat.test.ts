import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../src/db/index.js';
import { ADMIN_TOKEN, listOrders, minimalOrder, parseCsv, startExportingService, startLoggedApp, startService, type TestApp } from './helpers.js';
import { pipelineScriptsExport } from './pipeline-scripts.js';

/** Requests the hosted API's real clients send, replayed as they send them. */

/** What the vendor's Magento module posts to the old order path: no shipping_cost. */
const MAGENTO_ORDER_TEXT =
  '[{"products":[{"id":"2041","name":"Driven Backpack","quantity":1,"price":36.0}],' +
  '"customer_shipping_address":{"address1":"6146 Honey Bluff Parkway","address2":"","city":"Calder",' +
  '"state":"MI","zip":"49628-7978","country_code":"USA"},"order_id":"000000123",' +
  '"customer_id":"magento_user_42","time_of_purchase":"2026-11-22T14:03:11+00:00",' +
  '"customer_email":"roni_cost@example.com","customer_phone_number":"(555) 229-3326",' +
  '"customer_name":"Veronica Costello","customer_ip_address":"203.0.113.7",' +
  '"discount_amount":-10.0,"tax":5.52,"currency":"USD","purchase_total":81.52,' +
  '"discount_codes":["SAVE10"],"order_tags":["MAGENTO"]}]';
const [magentoOrder] = JSON.parse(MAGENTO_ORDER_TEXT) as [Record<string, unknown>];

/** Its cancellation: the same order again, totals and quantities zeroed, tagged as cancelled. */
const magentoCancellation = {
  ...magentoOrder,
  products: [{ id: '2041', name: 'Driven Backpack', quantity: 0, price: 36.0 }],
  discount_amount: 0,
  tax: 0,
  purchase_total: 0,
  order_tags: ['MAGENTO-CANCELLED'],
};

const DEPRECATED_SINCE = `@${Date.UTC(2026, 10, 23) / 1000}`;
const SUCCESSOR_LINK = '</v2/orders>; rel="successor-version"';

let lines: string[];
let close: () => Promise<void>;
let app: TestApp;
let db: Database;
let apiKey: string;
let clientId: string;

const postLegacy = (authorization: string, payload: string | object) =>
  app.inject({
    method: 'POST',
    url: '/v1/orders',
    headers: { authorization, 'data-client-id': clientId, 'content-type': 'application/json' },
    payload,
  });

async function storedOrders(): Promise<Record<string, unknown>[]> {
  const response = await listOrders(app, { headers: { authorization: apiKey, 'data-client-id': clientId } }, { start_date: '2026-11-22', end_date: '2026-11-22' });
  assert.equal(response.statusCode, 200);
  return response.json().data;
}

before(async () => {
  ({ app, db, lines, close } = await startLoggedApp());
  const created = await app.inject({ method: 'POST', url: '/admin/v1/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'Magento shop' } });
  ({ api_key: apiKey, client_id: clientId } = created.json());
});
after(() => close());

test("the Magento module's order, posted to the old path with the raw key, is stored with shipping_cost 0 and answered as deprecated", async () => {
  const response = await postLegacy(apiKey, MAGENTO_ORDER_TEXT);
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual({ ...(response.json() as object), request_id: undefined }, { message: 'Upserted 1 order', inserted: 1, updated: 0, warnings: [], request_id: undefined });
  assert.equal(response.headers.deprecation, DEPRECATED_SINCE);
  assert.equal(response.headers.link, SUCCESSOR_LINK);

  const [stored, ...others] = await storedOrders();
  assert.equal(others.length, 0);
  const { alternate_order_ids, created_at, updated_at, ...body } = stored!;
  assert.deepEqual(body, { ...magentoOrder, shipping_cost: 0 });
  assert.deepEqual(alternate_order_ids, []);
  assert.ok(created_at && updated_at);
});

test('its cancellation (zeroed totals and quantities, MAGENTO-CANCELLED) replaces the order', async () => {
  const response = await postLegacy(apiKey, [magentoCancellation]);
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(response.json().inserted, 0);
  assert.equal(response.json().updated, 1);
  assert.equal(response.headers.deprecation, DEPRECATED_SINCE);

  const [stored, ...others] = await storedOrders();
  assert.equal(others.length, 0);
  assert.deepEqual(stored!.order_tags, ['MAGENTO-CANCELLED']);
  assert.deepEqual(stored!.products, [{ id: '2041', name: 'Driven Backpack', quantity: 0, price: 36 }]);
  for (const total of ['purchase_total', 'tax', 'discount_amount', 'shipping_cost']) assert.equal(stored![total], 0, total);

  // Stored: one row of the order, its body the cancellation as sent with shipping_cost 0.
  const rows = await db.query<{ body: string }>(`SELECT body::text AS body FROM orders WHERE client_id = $1 AND order_id = $2`, [clientId, '000000123']);
  assert.equal(rows.length, 1);
  assert.deepEqual(JSON.parse(rows[0]!.body), { ...magentoCancellation, shipping_cost: 0 });
});

test('the old path takes the key with a Basic or Bearer scheme too, and a shipping_cost when one is sent', async () => {
  const basic = await postLegacy(`Basic ${apiKey}`, [{ ...magentoOrder, order_id: '000000124' }]);
  const bearer = await postLegacy(`Bearer ${apiKey}`, [{ ...magentoOrder, order_id: '000000125', shipping_cost: 7.5 }]);
  assert.equal(basic.statusCode, 200, basic.body);
  assert.equal(bearer.statusCode, 200, bearer.body);
  const shipping = Object.fromEntries((await storedOrders()).map((order) => [order.order_id, order.shipping_cost]));
  assert.deepEqual(shipping, { '000000123': 0, '000000124': 0, '000000125': 7.5 });
});

test("the old path's refusals are deprecated too; the current path still requires shipping_cost", async () => {
  const { customer_id: _left, ...withoutCustomer } = magentoOrder;
  const refused = await postLegacy(apiKey, [withoutCustomer]);
  assert.equal(refused.statusCode, 400);
  assert.equal(refused.headers.deprecation, DEPRECATED_SINCE);

  const current = await app.inject({
    method: 'POST',
    url: '/v2/orders',
    headers: { authorization: apiKey, 'data-client-id': clientId, 'content-type': 'application/json' },
    payload: JSON.stringify([{ ...magentoOrder, order_id: '000000126' }]),
  });
  assert.equal(current.statusCode, 400);
  assert.match(current.body, /shipping_cost/);
  assert.equal(current.headers.deprecation, undefined);
});

test('the OpenAPI document marks the old path deprecated, and only it', async () => {
  const { paths } = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  assert.equal(paths['/v1/orders'].post.deprecated, true);
  assert.notEqual(paths['/v2/orders'].post.deprecated, true);
  assert.ok(!paths['/v1/orders'].post.requestBody.content['application/json'].schema.items.required.includes('shipping_cost'));
});

test("the Magento order's personal data never reaches the log", () => {
  assert.ok(lines.some((line) => line.includes('"route":"/v1/orders"')), 'the old path is logged');
  const log = lines.join('\n');
  const address = magentoOrder.customer_shipping_address as Record<string, string>;
  for (const personal of ['roni_cost', '229-3326', 'Veronica', 'Costello', '203.0.113.7', address.address1!, address.city!, address.zip!]) {
    assert.ok(!log.includes(personal), `the log holds ${personal}`);
  }
});

test('the old path spends the same order-write budget as the current one', async () => {
  const body = JSON.stringify([magentoOrder]);
  const service = await startService({ ORDER_WRITE_BYTES_PER_MINUTE: String(Buffer.byteLength(body) * 2 + 40) });
  try {
    const client = await service.createClient();
    const post = (url: string, order: object) =>
      service.production.inject({ method: 'POST', url, headers: { ...client.headers, 'content-type': 'application/json' }, payload: JSON.stringify([order]) });
    const legacy = await post('/v1/orders', magentoOrder);
    assert.equal(legacy.statusCode, 200, legacy.body);
    assert.match(String(legacy.headers['ratelimit-policy']), /^"order-writes";/);
    assert.equal((await post('/v2/orders', { ...magentoOrder, shipping_cost: 0 })).statusCode, 200);
    const over = await post('/v1/orders', magentoOrder);
    assert.equal(over.statusCode, 429);
    assert.ok(over.headers['retry-after']);
  } finally {
    await service.close();
  }
});

// ---------------------------------------------------------------------------------------------
// The export, spend and order clients of REAL-CLIENTS.md, replayed with their own headers, paths,
// bodies and polling, reading what they read from the answers.

describe('the export clients, as they call', async () => {
  const service = await startExportingService();
  after(() => service.close());
  const exporting = service.production;

  const DAY = '2026-11-22';
  const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  const daysBefore = (day: string, days: number) => new Date(Date.parse(`${day}T12:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);

  /**
   * A shop's day `day`: daily spend on Google Ads (120, 4,000 impressions) and Facebook Ads (80,
   * 10,000); a Google click two hours before an order of 200, a Facebook click four hours before
   * one of 50, and a Facebook click 400 days before an order of 30, which only the infinity window
   * reaches.
   */
  async function shop(day: string): Promise<{ key: string; clientId: string }> {
    const client = await service.createClient();
    const headers = { ...client.headers, 'content-type': 'application/json' };
    const post = async (url: string, payload: object) => {
      const response = await exporting.inject({ method: 'POST', url, headers, payload: JSON.stringify(payload) });
      assert.ok(response.statusCode === 200 || response.statusCode === 201, response.body);
    };
    const spend = (platform_name: string, platform_account_id: string, campaign_id: string, amount: number, impressions: number) =>
      ({ date: day, platform_name, platform_account_id, campaign_id, campaign_name: campaign_id, spend: amount, spend_currency: 'USD', impressions, clicks: 10 });
    await post('/v1/spend', { data: [spend('Google Ads', 'g-1', 'brand', 120, 4000), spend('Facebook Ads', 'fb-1', 'retarget', 80, 10000)] });
    const click = (touchpoint_id: string, occurred_at: string, customer_id: string, platform_name: string, campaign_id: string) =>
      ({ touchpoint_id, occurred_at, customer_id, platform_name, campaign_id, utm_medium: 'cpc' });
    await post('/v1/touchpoints', {
      data: [
        click('tp-g', `${day}T10:00:00Z`, 'cust-g', 'Google Ads', 'brand'),
        click('tp-f', `${day}T09:00:00Z`, 'cust-f', 'Facebook Ads', 'retarget'),
        click('tp-old', `${daysBefore(day, 400)}T14:00:00Z`, 'cust-old', 'Facebook Ads', 'retarget'),
      ],
    });
    const order = (order_id: string, customer_id: string, hour: string, purchase_total: number) =>
      minimalOrder(order_id, { customer_id, time_of_purchase: `${day}T${hour}:00:00Z`, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });
    await post('/v2/orders', [order('g-1', 'cust-g', '12', 200), order('f-1', 'cust-f', '13', 50), order('old-1', 'cust-old', '14', 30)]);
    return { key: client.api_key, clientId: client.client_id };
  }

  const { key, clientId } = await shop(DAY);
  /** Each client's own headers: the key raw, or after `Basic `; JSON content type on every request, as they send it. */
  const rawKey = { authorization: key, 'data-client-id': clientId, 'content-type': 'application/json' };
  const basicKey = { authorization: `Basic ${key}`, 'data-client-id': clientId, 'content-type': 'application/json', accept: 'application/json' };

  const get = (url: string, headers: Record<string, string>) => exporting.inject({ method: 'GET', url, headers });

  /**
   * Creates an export as the clients do (accepting 200 or 201, the id from `id`), polls its result
   * until a status the client stops on, and downloads `result[0]` without credentials. The CSV as
   * rows of cells, the header first.
   */
  async function runExport(headers: Record<string, string>, body: object, stopsOn: string[]): Promise<string[][]> {
    const created = await exporting.inject({ method: 'POST', url: '/v1/exports/data-export', headers, payload: JSON.stringify(body) });
    assert.ok(created.statusCode === 200 || created.statusCode === 201, created.body);
    const { id } = created.json();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
      const polled = await get(`/v1/exports/data-export/result/${id}`, headers);
      assert.equal(polled.statusCode, 200, polled.body);
      const { status, result } = polled.json();
      if (status === 'PENDING') continue;
      assert.ok(stopsOn.includes(status), `the client would poll ${status} forever`);
      assert.equal(status, 'SUCCESS', polled.body);
      const link = new URL(result[0]);
      const file = await exporting.inject({ method: 'GET', url: link.pathname + link.search });
      assert.equal(file.statusCode, 200, file.body);
      return parseCsv(file.body);
    }
    return assert.fail('the export stayed PENDING');
  }

  /** The cells of `columns` per row whose `key` column is one of `keys`, each column found by its header, as a client reads them. */
  function readById(csv: string[][], key: string, columns: string[]): Record<string, Record<string, string>> {
    const [header, ...rows] = csv;
    const index = (column: string) => {
      const found = header!.indexOf(column);
      assert.notEqual(found, -1, `no column ${column} in ${header!.join(',')}`);
      return found;
    };
    return Object.fromEntries(rows.map((row) => [row[index(key)]!, Object.fromEntries(columns.map((column) => [column, row[index(column)]!]))]));
  }

  test("the assistant plugin's connection check lists the day's daily spend of every account", async () => {
    const response = await get(`/v1/spend?page=1&page_size=1000&date=${DAY}`, rawKey);
    assert.equal(response.statusCode, 200, response.body);
    const { data, total_pages, total_count } = response.json();
    assert.deepEqual([total_pages, total_count], [1, 2]);
    assert.deepEqual(
      data.map((record: Record<string, unknown>) => [record.platform_name, record.platform_account_id, record.spend]),
      [['Facebook Ads', 'fb-1', 80], ['Google Ads', 'g-1', 120]],
    );
  });

  test('the assistant plugin reads the catalogs, then exports with Platform (Northbeam) and reads spend, imprs, txns, rev and ecpc by id', async () => {
    for (const catalog of ['metrics', 'breakdowns', 'attribution-models']) assert.equal((await get(`/v1/exports/${catalog}`, rawKey)).statusCode, 200, catalog);
    const metricIds = (await get('/v1/exports/metrics', rawKey)).json().metrics.map((metric: { id: string }) => metric.id);
    for (const id of ['imprs', 'revAttributed', 'txns', 'roas', 'cac', 'aov', 'ecpc']) assert.ok(metricIds.includes(id), id);
    const { breakdowns } = (await get('/v1/exports/breakdowns', rawKey)).json();
    const values = breakdowns.find((breakdown: { key: string }) => breakdown.key === 'Platform (Northbeam)')?.values;
    assert.deepEqual(values, ['Facebook Ads', 'Google Ads']);

    const csv = await runExport(
      rawKey,
      {
        level: 'platform',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: `${DAY}T00:00:00Z`, period_ending_at: `${DAY}T23:59:59Z` },
        breakdowns: [{ key: 'Platform (Northbeam)', values }],
        options: { export_aggregation: 'BREAKDOWN', remove_zero_spend: false, aggregate_data: false, include_ids: false, include_kind_and_platform: false },
        attribution_options: { attribution_models: ['northbeam_custom'], accounting_modes: ['accrual'], attribution_windows: ['1'] },
        metrics: [{ id: 'spend' }, { id: 'imprs' }, { id: 'txns' }, { id: 'rev' }, { id: 'ecpc' }],
      },
      ['SUCCESS', 'ERROR'],
    );
    // One visit each: ecpc is the whole spend.
    assert.deepEqual(readById(csv, 'platform', ['date', 'spend', 'imprs', 'txns', 'rev', 'ecpc']), {
      'Facebook Ads': { date: DAY, spend: '80', imprs: '10000', txns: '1.000000', rev: '50.000000', ecpc: '80.000000' },
      'Google Ads': { date: DAY, spend: '120', imprs: '4000', txns: '1.000000', rev: '200.000000', ecpc: '120.000000' },
    });
  });

  test("the data pipelines' export (REAL-CLIENTS.md's body) polled until SUCCESS or FAILED, read by its labels and ids", async () => {
    const csv = await runExport(
      rawKey,
      {
        level: 'platform',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: '2026-11-16T00:00:00Z', period_ending_at: '2026-11-22T23:59:59Z' },
        breakdowns: [{ key: 'Platform (Northbeam)', values: ['Google Ads', 'Facebook Ads'] }],
        options: { export_aggregation: 'BREAKDOWN', remove_zero_spend: false, aggregate_data: true, include_ids: false, include_kind_and_platform: false },
        attribution_options: { attribution_models: ['last_touch'], accounting_modes: ['accrual'], attribution_windows: ['1'] },
        metrics: [{ id: 'spend', label: 'spend_amount' }, { id: 'aov' }, { id: 'roas' }],
      },
      ['SUCCESS', 'FAILED'],
    );
    assert.deepEqual(readById(csv, 'platform', ['date', 'spend_amount', 'aov', 'roas']), {
      'Facebook Ads': { date: DAY, spend_amount: '80', aov: '50.000000', roas: '0.625000' },
      'Google Ads': { date: DAY, spend_amount: '120', aov: '200.000000', roas: '1.666667' },
    });
  });

  test("the data-pipeline scripts' own export, as they build it (five platforms, googleClicks, metaLinkClicks), read by its labels", async () => {
    const csv = await runExport(
      rawKey,
      pipelineScriptsExport(DAY),
      ['SUCCESS', 'FAILED'],
    );
    assert.deepEqual(readById(csv, 'platform', ['date', 'spend_amount', 'AOV', 'Google_Clicks', 'Imprs', 'FB_Link_Clicks_Default', 'ROAS']), {
      'Facebook Ads': { date: DAY, spend_amount: '80', AOV: '50.000000', Google_Clicks: '0', Imprs: '10000', FB_Link_Clicks_Default: '10', ROAS: '0.625000' },
      'Google Ads': { date: DAY, spend_amount: '120', AOV: '200.000000', Google_Clicks: '10', Imprs: '4000', FB_Link_Clicks_Default: '0', ROAS: '1.666667' },
    });
  });

  test('the Basic-key assistant server checks Platform (Northbeam) in the catalog, then exports with the infinity window', async () => {
    assert.equal((await get('/v1/exports/metrics', basicKey)).statusCode, 200);
    const { breakdowns } = (await get('/v1/exports/breakdowns', basicKey)).json();
    const values = new Map(breakdowns.map((breakdown: { key: string; values: string[] }) => [breakdown.key, breakdown.values])).get('Platform (Northbeam)');
    assert.ok(values, 'the client stops when the key is not listed');

    const channels = await runExport(
      basicKey,
      {
        level: 'platform',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: `${DAY}T00:00:00Z`, period_ending_at: `${DAY}T23:59:59Z` },
        options: { export_aggregation: 'BREAKDOWN', remove_zero_spend: false, aggregate_data: false, include_kind_and_platform: true },
        attribution_options: { attribution_models: ['northbeam_custom'], accounting_modes: ['cash'], attribution_windows: ['infinity'] },
        metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'cac' }, { id: 'txns' }],
        breakdowns: [{ key: 'Platform (Northbeam)', values }],
      },
      ['SUCCESS', 'ERROR'],
    );
    // Facebook has its click of the day's order of 50 and, without a lookback limit, the one of 400 days before the order of 30.
    assert.deepEqual(readById(channels, 'platform', ['spend', 'rev', 'cac', 'txns', 'attribution_window']), {
      'Facebook Ads': { spend: '80', rev: '80.000000', cac: '40.000000', txns: '2.000000', attribution_window: 'infinity' },
      'Google Ads': { spend: '120', rev: '200.000000', cac: '120.000000', txns: '1.000000', attribution_window: 'infinity' },
    });

    // Some versions send date-only period options: whole local days, the end day included.
    const metric = await runExport(
      basicKey,
      {
        level: 'platform',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: DAY, period_ending_at: DAY },
        options: { export_aggregation: 'DATE', remove_zero_spend: false, aggregate_data: true },
        attribution_options: { attribution_models: ['first_touch'], accounting_modes: ['cash'], attribution_windows: ['infinity'] },
        metrics: [{ id: 'revAttributed' }],
      },
      ['SUCCESS', 'ERROR'],
    );
    assert.deepEqual(readById(metric, 'date', ['revAttributed']), { [DAY]: { revAttributed: '280.000000' } });
  });

  test('the TypeScript assistant server reads every order without paging, and exports LAST_7_DAYS with northbeam_custom__va', async () => {
    // Its shop's data is of yesterday, the last day of LAST_7_DAYS; 1,001 more orders the day before, more than a page.
    const day = yesterday();
    const own = await shop(day);
    const headers = { authorization: own.key, 'data-client-id': own.clientId, 'content-type': 'application/json' };
    const bulk = Array.from({ length: 1001 }, (_, n) => minimalOrder(`bulk-${n}`, { time_of_purchase: `${daysBefore(day, 1)}T08:00:00Z`, currency: 'USD' }));
    for (const batch of [bulk.slice(0, 500), bulk.slice(500)]) {
      assert.equal((await exporting.inject({ method: 'POST', url: '/v2/orders', headers, payload: JSON.stringify(batch) })).statusCode, 200);
    }
    const orders = await get(`/v2/orders?start_date=${daysBefore(day, 1)}&end_date=${day}`, headers);
    assert.equal(orders.statusCode, 200);
    const ids = (orders.json().data as { order_id: string }[]).map((order) => order.order_id);
    assert.equal(ids.length, 1004);
    assert.deepEqual(new Set(ids), new Set([...bulk.map((order) => order.order_id), 'g-1', 'f-1', 'old-1']));

    const csv = await runExport(
      headers,
      {
        level: 'campaign',
        time_granularity: 'DAILY',
        period_type: 'LAST_7_DAYS',
        options: { export_aggregation: 'BREAKDOWN', remove_zero_spend: false, aggregate_data: true, include_ids: false, include_kind_and_platform: true },
        attribution_options: { attribution_models: ['northbeam_custom__va'], accounting_modes: ['accrual'], attribution_windows: ['1'] },
        metrics: [{ id: 'spend' }, { id: 'rev' }, { id: 'cac' }],
      },
      ['SUCCESS', 'FAILED'],
    );
    const read = readById(csv.filter((row, index) => index === 0 || row.includes(day)), 'platform', ['spend', 'rev', 'cac', 'attribution_model']);
    assert.deepEqual(
      { google: read['Google Ads'], facebook: read['Facebook Ads'] },
      {
        google: { spend: '120', rev: '200.000000', cac: '120.000000', attribution_model: 'northbeam_custom__va' },
        facebook: { spend: '80', rev: '50.000000', cac: '80.000000', attribution_model: 'northbeam_custom__va' },
      },
    );
  });

  test("the WooCommerce plugin's guest order (customer 0, empty IP) is answered exactly 200", async () => {
    const guest = {
      order_id: '5012',
      customer_id: '0',
      time_of_purchase: '2026-11-22T15:20:00+00:00',
      tax: 2.1,
      currency: 'USD',
      is_recurring_order: false,
      purchase_total: 27.1,
      shipping_cost: 5,
      customer_email: 'guest@example.com',
      customer_phone_number: '',
      customer_name: 'Sam Guest',
      customer_ip_address: '',
      discount_codes: [],
      discount_amount: 0,
      customer_shipping_address: { address1: '1 Main St', address2: '', city: 'Springfield', state: 'IL', zip: '62701', country_code: 'USA' },
      products: [{ id: '77', name: 'Mug', quantity: 2, price: 10 }],
    };
    const response = await exporting.inject({ method: 'POST', url: '/v2/orders', headers: rawKey, payload: JSON.stringify([guest]) });
    assert.equal(response.statusCode, 200, response.body);
    const stored = (await get(`/v2/orders?start_date=${DAY}&end_date=${DAY}`, rawKey)).json().data.find((order: { order_id: string }) => order.order_id === '5012');
    assert.equal(stored.customer_id, '0');
    assert.equal(stored.purchase_total, 27.1);
  });
});
