import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { errorForLog } from '../src/logger.js';
import { ADMIN_TOKEN, listOrders, makeOrder, postAliases, postOrders, startLoggedApp, type TestApp } from './helpers.js';

let lines: string[];
let app: TestApp;
let close: () => Promise<void>;

before(async () => {
  ({ app, lines, close } = await startLoggedApp());
});
after(() => close());

test('logs carry no API key, admin token or personal data, whatever the request', async () => {
  const created = await app.inject({
    method: 'POST',
    url: '/admin/v1/clients',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { name: 'Acme' },
  });
  const { client_id, api_key } = created.json();
  const client = { headers: { authorization: `Bearer ${api_key}`, 'data-client-id': client_id } };
  const order = makeOrder('o-1', { alternate_order_ids: [{ type: 't', id: 'x' }] });

  assert.equal((await postOrders(app, client, [order])).statusCode, 200);
  assert.equal((await postOrders(app, client, [{ ...order, currency: 'XXX' }])).statusCode, 400);
  assert.equal((await postOrders(app, { headers: { ...client.headers, authorization: 'wrong' } }, [order])).statusCode, 401);
  assert.equal((await postAliases(app, client, [{ order_id: 'ghost', type: 't', id: 'y' }])).statusCode, 404);
  assert.equal((await listOrders(app, client, { start_date: '2024-01-01', end_date: '2024-12-31' })).statusCode, 200);
  await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': '192.0.2.55' }, remoteAddress: '192.0.2.44' });

  assert.ok(lines.length >= 6, 'one line per request at least');
  const log = lines.join('\n');
  const address = order.customer_shipping_address as Record<string, string>;
  for (const secret of [
    api_key,
    ADMIN_TOKEN,
    String(order.customer_email),
    String(order.customer_phone_number),
    String(order.customer_name),
    String(order.customer_ip_address),
    address.address1!,
    address.city!,
    '192.0.2.44',
    '192.0.2.55',
  ]) {
    assert.ok(!log.includes(secret), `the log holds ${secret}`);
  }
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), 'every line is JSON');
  const requestLine = JSON.parse(lines.find((line) => line.includes('"route":"/v2/orders"'))!);
  assert.equal(requestLine.method, 'POST');
  assert.match(requestLine.reqId, /^[0-9a-f-]{36}$/);
});

test('a database error is logged without the row values its message and detail may quote', () => {
  const error = Object.assign(new Error('new row for relation "touchpoints" violates check constraint, jane@example.com'), {
    code: '23514',
    detail: 'Failing row contains (jane@example.com, +15555550100).',
    table: 'touchpoints',
    constraint: 'touchpoints_check',
  });
  const logged = JSON.stringify(errorForLog(error));
  assert.ok(!logged.includes('jane@example.com') && !logged.includes('+1555'), logged);
  assert.match(logged, /"code":"23514"/);
  assert.match(logged, /"constraint":"touchpoints_check"/);
});
