import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { listOrders, minimalOrder, postAliases, postOrders, startService } from './helpers.js';

const service = await startService();
after(() => service.close());

const WRITERS = 8;
const ORDERS = 40;

/** A deterministic shuffle, so that each writer locks the same rows in a different order. */
function shuffled<T>(items: T[], seed: number): T[] {
  const result = [...items];
  let state = seed;
  for (let i = result.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [result[i], result[j]] = [result[j]!, result[i]!];
  }
  return result;
}

test('concurrent upserts of the same orders all succeed and leave each order whole', async () => {
  const client = await service.createClient();
  const ids = Array.from({ length: ORDERS }, (_, i) => `order-${i}`);
  // Writer v sends version v of every order: its tax, price and alias all say v.
  const batches = Array.from({ length: WRITERS }, (_, version) =>
    shuffled(ids, version + 1).map((id) =>
      minimalOrder(id, {
        tax: version,
        products: [{ id: 'p', name: `version ${version}`, quantity: 1, price: version }],
        alternate_order_ids: [{ type: `writer-${version}`, id }],
      }),
    ),
  );
  const responses = await Promise.all(batches.map((batch) => postOrders(service.production, client, batch)));
  for (const response of responses) assert.equal(response.statusCode, 200, response.body);
  const counts = responses.map((response) => response.json() as { inserted: number; updated: number });
  assert.equal(counts.reduce((sum, count) => sum + count.inserted, 0), ORDERS, 'each order inserted exactly once');
  assert.equal(counts.reduce((sum, count) => sum + count.updated, 0), ORDERS * (WRITERS - 1));

  const page = (await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' })).json();
  assert.equal(page.total_count, ORDERS);
  for (const order of page.data) {
    const version = order.tax;
    assert.deepEqual(order.products, [{ id: 'p', name: `version ${version}`, quantity: 1, price: version }], 'no mixed versions');
    assert.equal(order.alternate_order_ids.length, WRITERS, 'every writer’s alias kept');
  }
});

test('concurrent patches and upserts of the same orders all succeed and leave each order one whole version', async () => {
  const client = await service.createClient();
  const ids = Array.from({ length: ORDERS }, (_, i) => `order-${i}`);
  await postOrders(service.production, client, ids.map((id) => minimalOrder(id)));
  // Writer v sets tax and purchase_total to v (and adds its alias): by patch for even v, by upsert for odd v.
  const requests = Array.from({ length: WRITERS }, (_, version) => {
    const order = (id: string) => ({ tax: version, purchase_total: version, alternate_order_ids: [{ type: `writer-${version}`, id }] });
    const batch = shuffled(ids, version + 1);
    return version % 2 === 0
      ? service.production.inject({ method: 'PATCH', url: '/v2/orders', headers: client.headers, payload: batch.map((id) => ({ order_id: id, ...order(id) })) })
      : postOrders(service.production, client, batch.map((id) => minimalOrder(id, order(id))));
  });
  for (const response of await Promise.all(requests)) assert.equal(response.statusCode, 200, response.body);

  const page = (await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' })).json();
  assert.equal(page.total_count, ORDERS);
  for (const order of page.data) {
    assert.equal(order.purchase_total, order.tax, 'no mixed versions');
    assert.equal(order.alternate_order_ids.length, WRITERS, 'every writer’s alias kept');
  }
  const [totals] = await service.db.query<{ mismatched: number }>(
    "SELECT count(*)::int AS mismatched FROM orders WHERE client_id = $1 AND purchase_total <> (body->>'tax')::numeric",
    [client.client_id],
  );
  assert.equal(totals?.mismatched, 0, 'the stored total is the body’s');
});

test('concurrent requests attaching the same alias add it once and all succeed', async () => {
  const client = await service.createClient();
  await postOrders(service.production, client, [minimalOrder('a')]);
  const responses = await Promise.all(
    Array.from({ length: WRITERS }, () => postAliases(service.production, client, [{ order_id: 'a', type: 't', id: 'same' }])),
  );
  for (const response of responses) assert.equal(response.statusCode, 200, response.body);
  assert.equal(responses.reduce((sum, response) => sum + response.json().added, 0), 1);
});

test('concurrent requests claiming one alias for different orders: one wins, the others are told', async () => {
  const client = await service.createClient();
  const ids = Array.from({ length: WRITERS }, (_, i) => `claimant-${i}`);
  await postOrders(service.production, client, ids.map((id) => minimalOrder(id)));
  const responses = await Promise.all(
    ids.map((id) => postAliases(service.production, client, [{ order_id: id, type: 't', id: 'contested' }])),
  );
  const statuses = responses.map((response) => response.statusCode).sort();
  assert.deepEqual(statuses, [200, ...Array<number>(WRITERS - 1).fill(400)]);
  for (const response of responses.filter((r) => r.statusCode === 400)) {
    assert.equal(response.json().errors[0].type, 'alias_conflict');
  }
  const [row] = await service.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM order_aliases WHERE client_id = $1 AND alias_id = 'contested'",
    [client.client_id],
  );
  assert.equal(row?.n, 1);
});

test('concurrent spend upserts of overlapping keys in opposite orders, and deletes, all succeed', async () => {
  const client = await service.createClient();
  const record = (platform_name: string, campaign_id: string, spend: number) => ({
    hour_start_iso: '2024-03-08T09:00:00Z',
    platform_name,
    campaign_id,
    campaign_name: campaign_id,
    spend,
    spend_currency: 'USD',
  });
  const keys = ['google', 'Meta', 'tiktok', 'Bing'].flatMap((platform) => ['a', 'B', 'c'].map((campaign) => [platform, campaign] as const));
  const requests = Array.from({ length: WRITERS }, (_, writer) => {
    if (writer % 4 === 3) {
      return service.production.inject({
        method: 'DELETE',
        url: '/v1/spend_hourly',
        headers: client.headers,
        payload: { data: { hour_start_iso: '2024-03-08T09:00:00Z', campaign_id: 'B' } },
      });
    }
    const batch = shuffled(keys, writer + 1).map(([platform, campaign]) => record(platform, campaign, writer));
    return service.production.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: { data: batch } });
  });
  for (const response of await Promise.all(requests)) assert.ok([200, 201].includes(response.statusCode), response.body);
});
