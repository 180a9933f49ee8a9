import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  assertErrorEnvelope,
  listOrders,
  makeOrder,
  minimalOrder,
  postAliases,
  postOrders,
  startService,
  type TestApp,
  type TestClient,
} from './helpers.js';

const service = await startService();
after(() => service.close());

const RANGE = { start_date: '2024-01-01', end_date: '2024-12-31' };
/** The public credentials of the UAT API. */
const TEST_CREDENTIALS = { headers: { authorization: 'None', 'data-client-id': 'test' } };

async function stored(app: TestApp, client: Pick<TestClient, 'headers'>): Promise<Map<string, Record<string, unknown>>> {
  const response = await listOrders(app, client, RANGE);
  assert.equal(response.statusCode, 200, response.body);
  return new Map((response.json() as { data: Record<string, unknown>[] }).data.map((order) => [order.order_id as string, order]));
}

async function upsert(app: TestApp, client: Pick<TestClient, 'headers'>, orders: unknown[]) {
  const response = await postOrders(app, client, orders);
  assert.equal(response.statusCode, 200, response.body);
  const { inserted, updated } = response.json() as { inserted: number; updated: number };
  return { inserted, updated };
}

/** Row counts of the tables requests may write to. */
async function tableCounts() {
  const [row] = await service.db.query<{ orders: number; aliases: number }>(
    'SELECT (SELECT count(*)::int FROM orders) AS orders, (SELECT count(*)::int FROM order_aliases) AS aliases',
  );
  return row!;
}

describe('UAT and production data are apart', () => {
  test('the same API key works on both', async () => {
    const client = await service.createClient();
    for (const app of [service.production, service.uat]) {
      assert.deepEqual(await upsert(app, client, [minimalOrder('key-check')]), { inserted: 1, updated: 0 });
    }
  });

  test('an order sent to one environment is invisible on the other, even under the same order_id', async () => {
    const client = await service.createClient();
    const onProduction = makeOrder('same-id', { customer_id: 'production-customer' });
    const onUat = minimalOrder('same-id', { customer_id: 'uat-customer', currency: 'GBP' });
    assert.deepEqual(await upsert(service.production, client, [onProduction, minimalOrder('production-only')]), {
      inserted: 2,
      updated: 0,
    });
    assert.deepEqual(await upsert(service.uat, client, [onUat, minimalOrder('uat-only')]), { inserted: 2, updated: 0 });

    const production = await stored(service.production, client);
    const uat = await stored(service.uat, client);
    assert.deepEqual([...production.keys()].sort(), ['production-only', 'same-id']);
    assert.deepEqual([...uat.keys()].sort(), ['same-id', 'uat-only']);
    assert.equal(production.get('same-id')!.customer_id, 'production-customer');
    assert.equal(production.get('same-id')!.currency, 'USD');
    assert.equal(uat.get('same-id')!.customer_id, 'uat-customer');
    assert.equal(uat.get('same-id')!.currency, 'GBP');
  });

  test('aliases are per environment too', async () => {
    const client = await service.createClient();
    await upsert(service.production, client, [minimalOrder('p1'), minimalOrder('p2')]);
    await upsert(service.uat, client, [minimalOrder('u1')]);
    const alias = { type: 'shopify', id: 'S-42' };

    const onProduction = await postAliases(service.production, client, [{ order_id: 'p1', ...alias }]);
    assert.equal(onProduction.statusCode, 200, onProduction.body);
    // The alias taken on production is free on UAT; the production-only order does not exist there.
    const onUat = await postAliases(service.uat, client, [{ order_id: 'u1', ...alias }]);
    assert.equal(onUat.statusCode, 200, onUat.body);
    assert.equal(onUat.json().added, 1);
    const missing = await postAliases(service.uat, client, [{ order_id: 'p2', type: 'x', id: '1' }]);
    assert.deepEqual(assertErrorEnvelope(missing, 404).errors?.map((item) => item.order_id), ['p2']);

    assert.deepEqual((await stored(service.production, client)).get('p1')!.alternate_order_ids, [alias]);
    assert.deepEqual((await stored(service.uat, client)).get('u1')!.alternate_order_ids, [alias]);
    assert.deepEqual((await stored(service.production, client)).get('p2')!.alternate_order_ids, []);
  });
});

describe('public test credentials', () => {
  test('are refused on production like any wrong credentials', async () => {
    const wrong = { headers: { authorization: 'None', 'data-client-id': '00000000-0000-4000-8000-000000000000' } };
    const requests = [
      (client: typeof wrong) => postOrders(service.production, client, [minimalOrder('t')]),
      (client: typeof wrong) => listOrders(service.production, client, RANGE),
      (client: typeof wrong) => postAliases(service.production, client, [{ order_id: 't', type: 'a', id: 'b' }]),
    ];
    for (const request of requests) {
      const { message, errors } = assertErrorEnvelope(await request(TEST_CREDENTIALS), 401);
      const reference = assertErrorEnvelope(await request(wrong), 401);
      assert.deepEqual({ message, errors }, { message: reference.message, errors: reference.errors });
    }
  });

  test('are fully validated on UAT: an invalid order is a 400 with the envelope', async () => {
    const before = await tableCounts();
    const response = await postOrders(service.uat, TEST_CREDENTIALS, [
      minimalOrder('valid'),
      minimalOrder('bad', { currency: 'XXX', products: [] }),
    ]);
    const body = assertErrorEnvelope(response, 400);
    assert.deepEqual(
      body.errors?.map(({ loc, msg, order_id }) => ({ loc, msg, order_id })),
      [
        { loc: 'body/1/currency', msg: 'Currency does not match any known currencies', order_id: 'bad' },
        { loc: 'body/1/products', msg: 'Must have at least one product', order_id: 'bad' },
      ],
    );
    const aliases = await postAliases(service.uat, TEST_CREDENTIALS, [{ order_id: '', type: 'a', id: 'b', extra: 1 }]);
    assert.deepEqual(
      assertErrorEnvelope(aliases, 400).errors?.map((item) => item.loc).sort(),
      ['body/aliases/0/extra', 'body/aliases/0/order_id'],
    );
    assertErrorEnvelope(await listOrders(service.uat, TEST_CREDENTIALS, { start_date: 'yesterday', end_date: '2024-12-31' }), 400);
    assert.deepEqual(await tableCounts(), before);
  });

  test('a valid batch is answered as if stored, and nothing is stored', async () => {
    const client = await service.createClient();
    await upsert(service.uat, client, [minimalOrder('existing')]);
    const before = await tableCounts();
    const batch = [
      makeOrder('t1', { alternate_order_ids: [{ type: 'shopify', id: 'T-1' }] }),
      minimalOrder('t2'),
      minimalOrder('existing'),
    ];
    const response = await postOrders(service.uat, TEST_CREDENTIALS, batch);
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as Record<string, unknown>;
    assert.equal(body.inserted, batch.length);
    assert.equal(body.updated, 0);
    assert.deepEqual(body.warnings, []);
    assert.equal(body.request_id, response.headers['x-request-id']);
    assert.equal(typeof body.message, 'string');
    assert.deepEqual(await tableCounts(), before);
    assert.deepEqual([...(await stored(service.uat, client)).keys()], ['existing']);
  });

  test('warnings are reported as for a real client', async () => {
    const response = await postOrders(service.uat, TEST_CREDENTIALS, [minimalOrder('w', { customer_id: 'jane@example.com' })]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(
      (response.json() as { warnings: { loc: string }[] }).warnings.map((warning) => warning.loc),
      ['body/0/customer_id'],
    );
  });

  test('aliases are answered 200 and nothing is stored', async () => {
    const client = await service.createClient();
    await upsert(service.uat, client, [minimalOrder('real')]);
    const before = await tableCounts();
    const response = await postAliases(service.uat, TEST_CREDENTIALS, [
      { order_id: 'real', type: 'shopify', id: '1' },
      { order_id: 'any', type: 'shopify', id: '2' },
    ]);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().request_id, response.headers['x-request-id']);
    assert.deepEqual(await tableCounts(), before);
  });

  test('listing answers an empty page, whatever UAT holds', async () => {
    const client = await service.createClient();
    await upsert(service.uat, client, [minimalOrder('visible-to-its-client-only')]);
    const response = await listOrders(service.uat, TEST_CREDENTIALS, RANGE);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { data: [], page: 1, page_size: 0, total_pages: 0, total_count: 0 });
  });
});
