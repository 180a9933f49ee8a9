import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  assertErrorEnvelope,
  finishedExport,
  listOrders,
  makeOrder,
  minimalOrder,
  parseCsv,
  postAliases,
  postOrders,
  startExportingService,
  startService,
  type TestApp,
  type TestClient,
  type TestService,
} from './helpers.js';

/*
 * PATCH /v2/orders over HTTP: a partial update of existing orders, all or nothing, validated as
 * the upsert validates, on both ports and per client; what it changes reads back through the
 * list, the explanation of an order and exports.
 */

const service = await startExportingService();
after(() => service.close());

const WHOLE_RANGE = { start_date: '0001-01-01', end_date: '9999-12-31' };
const UAT_TEST_CREDENTIALS = { headers: { authorization: 'None', 'data-client-id': 'test' } };

type Headers = Pick<TestClient, 'headers'>;
const patchOrders = (client: Headers, patches: unknown, app: TestApp = service.production) =>
  app.inject({ method: 'PATCH', url: '/v2/orders', headers: client.headers, payload: patches as object });

/** The client's orders on `app` by order_id, as GET /v2/orders reads them back. */
async function storedOrders(client: Headers, app: TestApp = service.production): Promise<Record<string, Record<string, unknown>>> {
  const response = await listOrders(app, client, WHOLE_RANGE);
  assert.equal(response.statusCode, 200, response.body);
  const orders = response.json().data as Record<string, unknown>[];
  return Object.fromEntries(orders.map((order) => [order.order_id, order]));
}

/** A new client with `orders` stored on `app`. */
async function clientWith(orders: object[], app: TestApp = service.production): Promise<TestClient> {
  const client = await service.createClient();
  const response = await postOrders(app, client, orders);
  assert.equal(response.statusCode, 200, response.body);
  return client;
}

/** Expects `response` to be a refusal with `status` that changed none of the client's orders. */
async function refusedAndUnchanged(client: Headers, send: () => Promise<{ statusCode: number; body: string }>, status: number, app?: TestApp) {
  const before = await storedOrders(client, app);
  const response = await send();
  const body = assertErrorEnvelope(response as never, status);
  assert.deepEqual(await storedOrders(client, app), before, 'a refused patch changes nothing');
  return body;
}

describe('patching', () => {
  test('changes the fields sent and keeps the others, created_at included', async () => {
    const client = await clientWith([makeOrder('a'), makeOrder('b')]);
    const before = await storedOrders(client);
    const response = await patchOrders(client, [{ order_id: 'a', customer_name: 'Jane Roe', order_tags: ['vip'] }]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { message: 'Updated 1 order', updated: 1, warnings: [], request_id: response.headers['x-request-id'] });
    assert.match(String(response.headers['ratelimit-policy']), /^"order-writes";/, 'the order-write budget is spent');
    const after = await storedOrders(client);
    const { updated_at: beforeUpdatedAt, ...unchanged } = before.a!;
    const { updated_at: afterUpdatedAt, ...patched } = after.a!;
    assert.deepEqual(patched, { ...unchanged, customer_name: 'Jane Roe', order_tags: ['vip'] });
    assert.ok(String(afterUpdatedAt) > String(beforeUpdatedAt), `updated_at ${beforeUpdatedAt} -> ${afterUpdatedAt}`);
    assert.deepEqual(after.b, before.b, 'an order not in the patch is untouched');
  });

  test('null clears an optional field, a nested object and a list, and only those', async () => {
    const client = await clientWith([makeOrder('a')]);
    const response = await patchOrders(client, [
      { order_id: 'a', customer_email: null, customer_shipping_address: null, discount_codes: null, discount_amount: null, is_recurring_order: null },
    ]);
    assert.equal(response.statusCode, 200, response.body);
    const { created_at: _c, updated_at: _u, ...stored } = (await storedOrders(client)).a!;
    const {
      customer_email: _e, customer_shipping_address: _s, discount_codes: _d, discount_amount: _a, is_recurring_order: _r,
      ...kept
    } = makeOrder('a');
    assert.deepEqual(stored, { ...kept, alternate_order_ids: [] });
  });

  test('an e-mail can replace its hash when the patch clears the hash, not beside it', async () => {
    const hash = 'a'.repeat(64);
    const client = await clientWith([minimalOrder('a', { hashed_customer_email: hash }), minimalOrder('b', { customer_phone_number: '+15555550100' })]);
    const body = await refusedAndUnchanged(
      client,
      () => patchOrders(client, [{ order_id: 'a', customer_email: 'jane@example.com' }, { order_id: 'b', hashed_customer_phone_number: hash }]),
      400,
    );
    assert.deepEqual(body.errors, [
      {
        loc: 'body/0/customer_email',
        msg: 'Must not be present together with hashed_customer_email, which the order has: clear it with "hashed_customer_email": null in the same patch',
        type: 'exclusive',
        order_id: 'a',
      },
      {
        loc: 'body/1/hashed_customer_phone_number',
        msg: 'Must not be present together with customer_phone_number, which the order has: clear it with "customer_phone_number": null in the same patch',
        type: 'exclusive',
        order_id: 'b',
      },
    ]);
    const response = await patchOrders(client, [{ order_id: 'a', customer_email: 'jane@example.com', hashed_customer_email: null }]);
    assert.equal(response.statusCode, 200, response.body);
    const stored = (await storedOrders(client)).a!;
    assert.equal(stored.customer_email, 'jane@example.com');
    assert.equal('hashed_customer_email' in stored, false);
  });

  test('moves an order to another day: the list finds it there, its amounts exact', async () => {
    const client = await clientWith([minimalOrder('a', { time_of_purchase: '2024-03-08T09:00:00Z' })]);
    const response = await patchOrders(client, [{ order_id: 'a', time_of_purchase: '2024-05-01T23:30:00-02:00', purchase_total: 12345678901234.56 }]);
    assert.equal(response.statusCode, 200, response.body);
    const onDay = async (day: string) => (await listOrders(service.production, client, { start_date: day, end_date: day })).json().data;
    assert.deepEqual(await onDay('2024-03-08'), []);
    const [moved] = await onDay('2024-05-02');
    assert.equal(moved.time_of_purchase, '2024-05-01T23:30:00-02:00');
    const raw = (await listOrders(service.production, client, { start_date: '2024-05-02', end_date: '2024-05-02' })).body;
    assert.match(raw, /"purchase_total": ?12345678901234\.56[,}]/);
  });

  test('adds the aliases of alternate_order_ids, as the upsert does, and refuses one taken', async () => {
    const client = await clientWith([minimalOrder('a', { alternate_order_ids: [{ type: 'shop', id: '1' }] }), minimalOrder('b')]);
    const response = await patchOrders(client, [{ order_id: 'a', alternate_order_ids: [{ type: 'erp', id: 'E-1' }] }]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual((await storedOrders(client)).a!.alternate_order_ids, [{ type: 'shop', id: '1' }, { type: 'erp', id: 'E-1' }]);

    const taken = await refusedAndUnchanged(
      client,
      () => patchOrders(client, [{ order_id: 'b', customer_name: 'Bo', alternate_order_ids: [{ type: 'shop', id: '1' }] }]),
      400,
    );
    assert.deepEqual(taken.errors, [
      { loc: 'body/0/alternate_order_ids/0', msg: 'Alias shop 1 is already attached to order a', type: 'alias_conflict', order_id: 'b' },
    ]);
    // The aliases still find their order: the alias route attaches to it as before.
    assert.equal((await postAliases(service.production, client, [{ order_id: 'a', type: 'shop', id: '1' }])).json().ignored, 1);
  });

  test('warns about the "should" rules of the fields sent', async () => {
    const client = await clientWith([minimalOrder('a')]);
    const response = await patchOrders(client, [{ order_id: 'a', customer_id: 'jane@example.com', hashed_customer_email: 'not-a-hash' }]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(
      response.json().warnings.map(({ loc }: { loc: string }) => loc),
      ['body/0/customer_id', 'body/0/hashed_customer_email'],
    );
  });
});

describe('refusals', () => {
  test('unknown order ids are a 404 listing every one, and no order of the batch changes', async () => {
    const client = await clientWith([minimalOrder('a'), minimalOrder('b')]);
    const body = await refusedAndUnchanged(
      client,
      () =>
        patchOrders(client, [
          { order_id: 'a', customer_name: 'Changed' },
          { order_id: 'ghost', customer_name: 'X' },
          { order_id: 'b', purchase_total: 1 },
          { order_id: 'phantom' },
        ]),
      404,
    );
    assert.equal(body.message, '2 orders not found; nothing was stored');
    assert.deepEqual(body.errors, [
      { loc: 'body/1/order_id', msg: 'Order ghost does not exist', type: 'not_found', order_id: 'ghost' },
      { loc: 'body/3/order_id', msg: 'Order phantom does not exist', type: 'not_found', order_id: 'phantom' },
    ]);
  });

  test('products and refunds cannot be patched: a 400 naming each, and nothing changes', async () => {
    const client = await clientWith([makeOrder('a'), makeOrder('b')]);
    const { products, refunds } = makeOrder('x');
    const body = await refusedAndUnchanged(
      client,
      () => patchOrders(client, [{ order_id: 'a', products }, { order_id: 'b', customer_name: 'B', refunds, products: null }]),
      400,
    );
    assert.deepEqual(body.errors, [
      { loc: 'body/0/products', msg: 'products cannot be patched; send the whole order to POST /v2/orders to change it', type: 'not_patchable', order_id: 'a' },
      { loc: 'body/1/products', msg: 'products cannot be patched; send the whole order to POST /v2/orders to change it', type: 'not_patchable', order_id: 'b' },
      { loc: 'body/1/refunds', msg: 'refunds cannot be patched; send the whole order to POST /v2/orders to change it', type: 'not_patchable', order_id: 'b' },
    ]);
  });

  test('a field every order has cannot be cleared with null, nor aliases removed', async () => {
    const client = await clientWith([minimalOrder('a')]);
    const required = ['customer_id', 'time_of_purchase', 'tax', 'currency', 'purchase_total', 'shipping_cost'];
    const body = await refusedAndUnchanged(
      client,
      () => patchOrders(client, [{ order_id: 'a', alternate_order_ids: null, ...Object.fromEntries(required.map((field) => [field, null])) }]),
      400,
    );
    const byLoc = (x: { loc: string }, y: { loc: string }) => (x.loc < y.loc ? -1 : 1);
    assert.deepEqual(body.errors?.sort(byLoc), [
      ...required.map((field) => ({ loc: `body/0/${field}`, msg: 'Cannot be cleared: every order has one', type: 'required', order_id: 'a' })),
      { loc: 'body/0/alternate_order_ids', msg: 'Aliases cannot be removed; leave alternate_order_ids out, or list aliases to add', type: 'type', order_id: 'a' },
    ].sort(byLoc));
    assert.equal((await patchOrders(client, [{ order_id: 'a', order_id_typo: 1 }])).statusCode, 400);
  });

  test('invalid values get the errors the upsert gives them, and nothing changes', async () => {
    const client = await clientWith([minimalOrder('a')]);
    const invalid: Record<string, unknown>[] = [
      { currency: 'XUSDX' },
      { customer_email: 'not-an-email' },
      { tax: '1' },
      { purchase_total: 1e15 },
      { discount_amount: -1e15 },
      { customer_ip_address: '999.1.1.1' },
      { order_tags: ['A', 'B', 'A'] },
      { customer_shipping_address: { country_code: 'XKK' } },
      { customer_id: 'a' },
      { time_of_purchase: '2024-03-08T01:23:45' },
      { coupon: 'X' },
      { customer_email: 'jane@example.com', hashed_customer_email: 'a'.repeat(64) },
    ];
    for (const fields of invalid) {
      const asUpsert = assertErrorEnvelope(await postOrders(service.production, client, [minimalOrder('a', fields)]), 400);
      const asPatch = await refusedAndUnchanged(client, () => patchOrders(client, [{ order_id: 'a', ...fields }]), 400);
      assert.ok((asPatch.errors ?? []).length > 0);
      assert.deepEqual(asPatch.errors, asUpsert.errors, JSON.stringify(fields));
      assert.equal(asPatch.message, asUpsert.message);
    }
  });

  test('the batch is bounded and unique by order_id, as the upsert batch is', async () => {
    const client = await clientWith([minimalOrder('a')]);
    const twice = assertErrorEnvelope(await patchOrders(client, [{ order_id: 'a' }, { order_id: 'a', tax: 1 }]), 400);
    assert.deepEqual(twice.errors?.map(({ loc, type }) => [loc, type]), [['body/1/order_id', 'unique']]);
    const many = Array.from({ length: 1001 }, (_, n) => ({ order_id: `o${n}` }));
    const tooMany = assertErrorEnvelope(await patchOrders(client, many), 400);
    assert.deepEqual(tooMany.errors, [{ loc: 'body', msg: 'At most 1000 orders per request: split the batch', type: 'max_items' }]);
    assertErrorEnvelope(await patchOrders(client, []), 400);
    assertErrorEnvelope(await patchOrders(client, { order_id: 'a' }), 400);
  });
});

describe('environments and clients', () => {
  test("another client's order is unknown: 404, and it stays as it was", async () => {
    const owner = await clientWith([minimalOrder('shared-id')]);
    const other = await clientWith([minimalOrder('own')]);
    const body = await refusedAndUnchanged(owner, () => patchOrders(other, [{ order_id: 'shared-id', purchase_total: 1 }]), 404);
    assert.deepEqual(body.errors?.map(({ order_id }) => order_id), ['shared-id']);
  });

  test('UAT and production are apart: an order of one is unknown on the other', async () => {
    const client = await clientWith([minimalOrder('p')]);
    assert.equal((await postOrders(service.uat, client, [minimalOrder('u', { purchase_total: 5 })])).statusCode, 200);
    await refusedAndUnchanged(client, () => patchOrders(client, [{ order_id: 'p', purchase_total: 7 }], service.uat), 404, service.uat);
    await refusedAndUnchanged(client, () => patchOrders(client, [{ order_id: 'u', purchase_total: 7 }]), 404);
    const onUat = await patchOrders(client, [{ order_id: 'u', purchase_total: 7 }], service.uat);
    assert.equal(onUat.statusCode, 200, onUat.body);
    assert.equal((await storedOrders(client, service.uat)).u!.purchase_total, 7);
    assert.equal((await storedOrders(client)).p!.purchase_total, 10);
  });

  test('the UAT test credentials are validated, answered as if stored, and store nothing', async () => {
    const invalid = await patchOrders(UAT_TEST_CREDENTIALS, [{ order_id: 'a', products: [] }], service.uat);
    assert.deepEqual(assertErrorEnvelope(invalid, 400).errors?.map(({ type }) => type), ['not_patchable']);
    const valid = await patchOrders(UAT_TEST_CREDENTIALS, [{ order_id: 'a', purchase_total: 1 }, { order_id: 'b' }], service.uat);
    assert.equal(valid.statusCode, 200, valid.body);
    assert.equal(valid.json().updated, 2);
    assert.equal(valid.json().message, 'Updated 2 orders');
  });

  test('the test credentials are refused on production, and a request without credentials everywhere', async () => {
    assertErrorEnvelope(await patchOrders(UAT_TEST_CREDENTIALS, [{ order_id: 'a' }]), 401);
    assertErrorEnvelope(await patchOrders({ headers: {} }, [{ order_id: 'a' }], service.uat), 401);
  });
});

describe('what reads orders sees a patch', () => {
  test("an order's explanation credits the patched total, and follows a patched customer", async () => {
    const client = await clientWith([minimalOrder('a', { customer_id: 'c1', time_of_purchase: '2024-03-20T12:00:00Z', currency: 'USD', purchase_total: 100 })]);
    const touchpoint = { touchpoint_id: 't1', occurred_at: '2024-03-20T09:00:00Z', customer_id: 'c1', utm_source: 'meta', utm_medium: 'cpc', utm_campaign: 'spring' };
    const sent = await service.production.inject({ method: 'POST', url: '/v1/touchpoints', headers: client.headers, payload: { data: [touchpoint] } });
    assert.equal(sent.statusCode, 201, sent.body);
    const credited = async () => {
      const response = await service.production.inject({ method: 'GET', url: '/v2/orders/a/attribution', headers: client.headers, query: { model: 'last_touch', window: '30' } });
      assert.equal(response.statusCode, 200, response.body);
      const { purchase_total, touchpoints } = response.json() as { purchase_total: number; touchpoints: { touchpoint_id: string; revenue: number }[] };
      return { purchase_total, touchpoints: touchpoints.map(({ touchpoint_id, revenue }) => [touchpoint_id, revenue]) };
    };
    assert.deepEqual(await credited(), { purchase_total: 100, touchpoints: [['t1', 100]] });
    assert.equal((await patchOrders(client, [{ order_id: 'a', purchase_total: 250.5 }])).statusCode, 200);
    assert.deepEqual(await credited(), { purchase_total: 250.5, touchpoints: [['t1', 250.5]] });
    assert.equal((await patchOrders(client, [{ order_id: 'a', customer_id: 'c2' }])).statusCode, 200);
    assert.deepEqual(await credited(), { purchase_total: 250.5, touchpoints: [] });
  });

  test("an export's revenue and currency are the patched ones", async () => {
    const client = await clientWith([
      minimalOrder('a', { time_of_purchase: '2024-03-08T10:00:00Z', currency: 'USD', purchase_total: 10 }),
      minimalOrder('b', { time_of_purchase: '2024-03-08T11:00:00Z', currency: 'USD', purchase_total: 20 }),
    ]);
    const revenue = async () => {
      const created = await service.production.inject({
        method: 'POST',
        url: '/v1/exports/data-export',
        headers: client.headers,
        payload: {
          level: 'platform',
          period_type: 'FIXED',
          period_options: { period_starting_at: '2024-03-08', period_ending_at: '2024-03-09' },
          options: { export_aggregation: 'DATE' },
          metrics: [{ id: 'revenue' }, { id: 'transactions' }],
        },
      });
      assert.equal(created.statusCode, 201, created.body);
      const { status, result } = await finishedExport(service.production, client, created.json().id);
      assert.equal(status, 'SUCCESS');
      const file = new URL(result[0]!);
      return parseCsv((await service.production.inject({ method: 'GET', url: file.pathname + file.search })).body);
    };
    assert.deepEqual(await revenue(), [['date', 'currency', 'revenue', 'transactions'], ['2024-03-08', 'USD', '30', '2']]);
    const response = await patchOrders(client, [
      { order_id: 'a', purchase_total: 12.5 },
      { order_id: 'b', currency: 'EUR', time_of_purchase: '2024-03-09T11:00:00Z' },
    ]);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(await revenue(), [
      ['date', 'currency', 'revenue', 'transactions'],
      ['2024-03-08', 'USD', '12.5', '1'],
      ['2024-03-09', 'EUR', '20', '1'],
    ]);
  });
});

describe('body size', () => {
  let limited: TestService;
  before(async () => (limited = await startService({ BODY_LIMIT_BYTES: '1000' })));
  after(() => limited.close());

  test('a body past BODY_LIMIT_BYTES is a 413 with the envelope, and nothing changes', async () => {
    const client = await limited.createClient();
    assert.equal((await postOrders(limited.production, client, [minimalOrder('a')])).statusCode, 200);
    const before = (await listOrders(limited.production, client, WHOLE_RANGE)).json().data;
    const large = [{ order_id: 'a', customer_name: 'x'.repeat(1000 * 1000) }];
    const body = assertErrorEnvelope(await patchOrders(client, large, limited.production), 413);
    assert.match(body.message, /1000 bytes/);
    assert.deepEqual((await listOrders(limited.production, client, WHOLE_RANGE)).json().data, before);
  });

  test('a body announced 1000 times past the limit is refused before any of it is sent', async () => {
    const client = await limited.createClient();
    const address = await limited.production.listen({ port: 0, host: '127.0.0.1' });
    const { hostname, port } = new URL(address);
    const socket = net.connect(Number(port), hostname);
    await once(socket, 'connect');
    const headers = Object.entries({ ...client.headers, 'content-type': 'application/json', 'content-length': String(1000 * 1000) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`PATCH /v2/orders HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n${headers}\r\n[`);
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    // The server waits for the announced body before closing (a lingering close): the head is enough.
    while (!answer.includes('\r\n')) await once(socket, 'data');
    socket.destroy();
    assert.equal(answer.split('\r\n')[0], 'HTTP/1.1 413 Payload Too Large');
  });
});

test('the OpenAPI document has the patch, its body derived from the order', async () => {
  const { paths } = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json();
  const patch = paths['/v2/orders'].patch;
  assert.deepEqual(Object.keys(patch.responses).sort(), ['200', '400', '401', '404', '413']);
  const order = patch.requestBody.content['application/json'].schema.items;
  const upserted = paths['/v2/orders'].post.requestBody.content['application/json'].schema.items;
  assert.deepEqual(order.required, ['order_id']);
  assert.deepEqual(Object.keys(order.properties), Object.keys(upserted.properties));
  assert.deepEqual(order.properties.customer_name.type, ['string', 'null']);
  assert.equal(order.properties.currency.type, 'string');
  assert.deepEqual(order.properties.currency.enum, upserted.properties.currency.enum);
});
