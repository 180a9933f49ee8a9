import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  exportedCsv,
  hourlySpend,
  makeOrder,
  postOrders,
  startExportingService,
  type TestApp,
  type TestClient,
  type TestService,
} from './helpers.js';

/** A key of `scope` for `client`, issued through the admin API. */
async function issueKey(app: TestApp, client: TestClient, payload?: object) {
  return app.inject({
    method: 'POST',
    url: `/admin/v1/clients/${client.client_id}/api-keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    ...(payload ? { payload } : {}),
  });
}

/** Every operation of the API (not the admin API, not the pixel's public collector) that is not a GET, from its OpenAPI document. */
async function writingOperations(app: TestApp): Promise<{ method: string; url: string }[]> {
  const { paths } = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(paths).flatMap(([path, operations]) =>
    path.startsWith('/admin/') || path.startsWith('/v1/collect')
      ? []
      : Object.keys(operations)
          .filter((method) => !['get', 'head', 'options'].includes(method))
          .map((method) => ({ method: method.toUpperCase(), url: path.replace(/\{[^}]+\}/g, 'x') })),
  );
}

async function storedRows(service: TestService, clientId: string) {
  const [row] = await service.db.query<{ orders: number; spend: number; touchpoints: number; identities: number }>(
    `SELECT (SELECT count(*)::int FROM orders WHERE client_id = $1) AS orders,
            (SELECT count(*)::int FROM spend_hourly WHERE client_id = $1) AS spend,
            (SELECT count(*)::int FROM touchpoints WHERE client_id = $1) AS touchpoints,
            (SELECT count(*)::int FROM identities WHERE client_id = $1) AS identities`,
    [clientId],
  );
  return row!;
}

describe('API keys of scope read', () => {
  let service: TestService;
  let shop: TestClient;
  let reader: Record<string, string>;

  before(async () => {
    service = await startExportingService();
    shop = await service.createClient('Read-only shop');
    const issued = await issueKey(service.production, shop, { scope: 'read' });
    assert.equal(issued.statusCode, 201, issued.body);
    const key = issued.json() as { api_key: string; scope: string };
    assert.equal(key.scope, 'read');
    reader = { authorization: key.api_key, 'data-client-id': shop.client_id };

    const stored = await postOrders(service.production, shop, [makeOrder('1001', { time_of_purchase: '2024-03-08T09:23:45Z' })]);
    assert.equal(stored.statusCode, 200, stored.body);
    const spend = await service.production.inject({ method: 'POST', url: '/v1/spend_hourly', headers: shop.headers, payload: { data: [hourlySpend('spring')] } });
    assert.equal(spend.statusCode, 201, spend.body);
  });
  after(() => service.close());

  test('a key is made of scope write unless asked; another scope is refused with the ones there are', async () => {
    const plain = await issueKey(service.production, shop);
    assert.equal(plain.statusCode, 201, plain.body);
    assert.equal((plain.json() as { scope: string }).scope, 'write');
    const refused = assertErrorEnvelope(await issueKey(service.production, shop, { scope: 'admin' }), 400);
    assert.deepEqual(
      refused.errors!.map(({ loc, msg }) => ({ loc, msg })),
      [{ loc: 'body/scope', msg: 'Must be one of read, write' }],
    );
  });

  test('reads the orders, a report, an explanation and an export', async () => {
    const orders = await service.production.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers: reader });
    assert.equal(orders.statusCode, 200, orders.body);
    assert.equal((orders.json() as { total_count: number }).total_count, 1);
    const report = await service.production.inject({
      method: 'GET',
      url: '/v1/reports/performance?start_date=2024-03-01&end_date=2024-03-31&level=campaign&metrics=spend,rev',
      headers: reader,
    });
    assert.equal(report.statusCode, 200, report.body);
    const explained = await service.production.inject({ method: 'GET', url: '/v2/orders/1001/attribution', headers: reader });
    assert.equal(explained.statusCode, 200, explained.body);

    const exported = await exportedCsv(service.production, { headers: reader }, {
      period_type: 'FIXED',
      period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' },
      level: 'campaign',
      time_granularity: 'DAILY',
      metrics: [{ id: 'spend' }],
    });
    assert.ok(exported.rows.length > 1, 'the export has rows');
  });

  test('every operation that is not a GET but making an export is refused 403 before its body is read, and nothing is stored', async () => {
    const before = await storedRows(service, shop.client_id);
    const operations = await writingOperations(service.production);
    assert.ok(operations.length >= 10, `the API's writing operations: ${JSON.stringify(operations)}`);
    // A thousand times the largest body any route takes, and not JSON: refused without being read.
    const huge = 'x'.repeat(1024 * 1024);
    for (const { method, url } of operations) {
      const response = await service.production.inject({ method: method as 'POST', url, headers: { ...reader, 'content-type': 'application/json' }, payload: huge });
      if (url === '/v1/exports/data-export') {
        assert.notEqual(response.statusCode, 403, `${method} ${url}: making an export only reads`);
        continue;
      }
      const error = assertErrorEnvelope(response, 403);
      assert.match(error.message, /can only read/, `${method} ${url}`);
    }
    assert.deepEqual(await storedRows(service, shop.client_id), before);
  });

  test('a write with a key of scope read is refused even when well-formed; the same with a key of scope write is stored', async () => {
    const order = [makeOrder('2002', { time_of_purchase: '2024-03-09T10:00:00Z' })];
    assertErrorEnvelope(await postOrders(service.production, { headers: reader }, order), 403);
    assert.equal((await storedRows(service, shop.client_id)).orders, 1);
    const stored = await postOrders(service.production, shop, order);
    assert.equal(stored.statusCode, 200, stored.body);
    assert.equal((await storedRows(service, shop.client_id)).orders, 2);
  });

  test('a revoked key of scope read is refused as any wrong key is (401)', async () => {
    const issued = (await issueKey(service.production, shop, { scope: 'read' })).json() as { api_key: string; key_id: string };
    const revoked = await service.production.inject({
      method: 'DELETE',
      url: `/admin/v1/clients/${shop.client_id}/api-keys/${issued.key_id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(revoked.statusCode, 204);
    const headers = { authorization: issued.api_key, 'data-client-id': shop.client_id };
    assertErrorEnvelope(await service.production.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers }), 401);
    assertErrorEnvelope(await postOrders(service.production, { headers }, []), 401);
  });
});
