import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ADMIN_TOKEN, listOrders, startLoggedApp, startService, type TestApp } from './helpers.js';

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
  ({ app, lines, close } = await startLoggedApp());
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
