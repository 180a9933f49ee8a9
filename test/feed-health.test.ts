import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ADMIN_TOKEN, assertErrorEnvelope, hourlySpend, minimalOrder, postOrders, startService, type TestApp, type TestClient } from './helpers.js';

/* GET /v1/health/feeds: what each feed delivered per day, and when it last did. */

const service = await startService();
after(() => service.close());
const app = service.production;

const health = (client: Pick<TestClient, 'headers'>, target: TestApp = app) => target.inject({ method: 'GET', url: '/v1/health/feeds', headers: client.headers });

async function feeding(target: TestApp = app): Promise<TestClient> {
  const client = await service.createClient();
  assert.equal((await postOrders(target, client, [minimalOrder('o1'), minimalOrder('o2')])).statusCode, 200);
  const spend = await target.inject({ method: 'POST', url: '/v1/spend_hourly', headers: client.headers, payload: { data: [hourlySpend('c1'), hourlySpend('c2'), hourlySpend('c3')] } });
  assert.ok(spend.statusCode < 300, spend.body);
  const touchpoints = await target.inject({
    method: 'POST',
    url: '/v1/touchpoints',
    headers: client.headers,
    payload: { data: [{ touchpoint_id: 't1', occurred_at: '2024-03-01T10:00:00Z', visitor_id: 'v1' }] },
  });
  assert.ok(touchpoints.statusCode < 300, touchpoints.body);
  return client;
}

test('counts per local day of the last write, 30 days oldest first, and the last arrival of each feed', async () => {
  const client = await feeding();
  // o2 was last received three days ago (UTC, the client's zone).
  await service.db.query(`UPDATE orders SET updated_at = now() - interval '3 days' WHERE client_id = $1 AND order_id = 'o2'`, [client.client_id]);
  const response = await health(client);
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json();
  assert.equal(body.time_zone, 'UTC');
  assert.equal(body.days.length, 30);
  const today = new Date().toISOString().slice(0, 10);
  const threeDaysAgo = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
  assert.deepEqual(body.days.at(-1), { date: today, orders: 1, spend: 3, touchpoints: 1 });
  assert.deepEqual(body.days.at(-4), { date: threeDaysAgo, orders: 1, spend: 0, touchpoints: 0 });
  assert.equal(body.days.reduce((sum: number, day: { orders: number }) => sum + day.orders, 0), 2);
  for (const feed of ['orders', 'spend', 'touchpoints']) assert.ok(Date.now() - Date.parse(body.last_received_at[feed]) < 60_000, feed);
});

test('a record older than 30 days is only the last arrival', async () => {
  const client = await feeding();
  await service.db.query(`UPDATE touchpoints SET updated_at = '2024-01-01T00:00:00Z' WHERE client_id = $1`, [client.client_id]);
  const body = (await health(client)).json();
  assert.equal(body.days.reduce((sum: number, day: { touchpoints: number }) => sum + day.touchpoints, 0), 0);
  assert.equal(body.last_received_at.touchpoints, '2024-01-01T00:00:00.000Z');
});

test("a client sees its own feeds, of the port's environment; credentials are required", async () => {
  await feeding();
  const other = await service.createClient();
  const body = (await health(other)).json();
  assert.ok(body.days.every((day: Record<string, unknown>) => day.orders === 0 && day.spend === 0 && day.touchpoints === 0));
  assert.deepEqual(body.last_received_at, { orders: null, spend: null, touchpoints: null });
  const inUat = await feeding(service.uat);
  assert.equal((await health(inUat)).json().last_received_at.orders, null, 'production sees none of its UAT records');
  assert.notEqual((await health(inUat, service.uat)).json().last_received_at.orders, null);
  assert.equal((await health({ headers: { authorization: 'None', 'data-client-id': 'test' } }, service.uat)).statusCode, 200);
  assertErrorEnvelope(await health({ headers: {} }), 401);
});

/** The date it is at `instant` in `timeZone`. */
const localDay = (timeZone: string, instant: Date) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(instant);
const dayBefore = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

test("a client in Pacific/Kiritimati (UTC+14) gets its own zone and its days, not UTC's", async () => {
  const client = await feeding();
  const patched = await app.inject({
    method: 'PATCH',
    url: `/admin/v1/clients/${client.client_id}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { time_zone: 'Pacific/Kiritimati' },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  // o1 last received at 00:30 yesterday in Kiritimati: 10:30 the day before in UTC.
  const before = new Date();
  const yesterday = dayBefore(localDay('Pacific/Kiritimati', before));
  await service.db.query(`UPDATE orders SET updated_at = $2 WHERE client_id = $1 AND order_id = 'o1'`, [client.client_id, `${yesterday}T00:30:00+14:00`]);

  const response = await health(client);
  const after = new Date();
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json() as { time_zone: string; days: { date: string; orders: number }[] };
  assert.equal(body.time_zone, 'Pacific/Kiritimati');
  // The last day is today in Kiritimati (as of the request, which may have crossed its midnight).
  assert.ok([localDay('Pacific/Kiritimati', before), localDay('Pacific/Kiritimati', after)].includes(body.days.at(-1)!.date), body.days.at(-1)!.date);
  const orders = (date: string) => body.days.find((day) => day.date === date)?.orders;
  assert.equal(orders(yesterday), 1);
  assert.equal(orders(dayBefore(yesterday)), 0, 'not on the UTC day of the write');
});

test('the document describes time_zone and environment, with examples', async () => {
  const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const schema = document.paths['/v1/health/feeds'].get.responses['200'].content['application/json'].schema;
  assert.match(schema.properties.time_zone.description, /time zone/);
  assert.deepEqual(schema.properties.time_zone.examples, ['America/New_York']);
  assert.deepEqual(schema.properties.environment.enum, ['production', 'uat']);
  assert.match(schema.properties.environment.description, /UAT port/);
  assert.ok(schema.required.includes('environment'));
});

test("the answer names the port's environment, which the dashboard shows: production, or uat for a client's key and for the test credentials", async () => {
  const client = await service.createClient();
  assert.equal((await health(client)).json().environment, 'production');
  assert.equal((await health(client, service.uat)).json().environment, 'uat');
  assert.equal((await health({ headers: { authorization: 'None', 'data-client-id': 'test' } }, service.uat)).json().environment, 'uat');
});
