import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import {
  listOrders,
  makeOrder,
  minimalOrder,
  postOrders,
  startService,
  type TestClient,
} from './helpers.js';

const service = await startService();
after(() => service.close());

const WHOLE_RANGE = { start_date: '0001-01-01', end_date: '9999-12-31' };

interface ErrorItem {
  loc: string;
  msg: string;
  type: string;
  order_id?: string;
}

async function storedOrders(client: TestClient, query: Record<string, string | number> = WHOLE_RANGE) {
  const response = await listOrders(service.production, client, query);
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { data: Record<string, unknown>[]; page: number; page_size: number; total_pages: number; total_count: number };
}

/** Posts `orders`, expects a 400 and returns its error items. */
async function rejected(client: TestClient, orders: unknown): Promise<ErrorItem[]> {
  const response = await postOrders(service.production, client, orders);
  assert.equal(response.statusCode, 400, response.body);
  const body = response.json();
  assert.equal(typeof body.message, 'string');
  assert.equal(body.request_id, response.headers['x-request-id']);
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, response.body);
  return body.errors;
}

/** Asserts that the only error of posting `order` is `expected` (loc relative to the order). */
async function rejectedWith(order: Record<string, unknown>, expected: Partial<ErrorItem> & { loc: string }) {
  const client = await service.createClient();
  const errors = await rejected(client, [order]);
  assert.deepEqual(
    errors.map(({ loc, msg, type }) => ({ loc, msg, type })),
    [{ msg: errors[0]!.msg, type: errors[0]!.type, ...expected, loc: `body/0/${expected.loc}` }],
  );
  assert.equal((await storedOrders(client)).total_count, 0, 'a rejected batch stores nothing');
}

describe('upsert', () => {
  test('stores a complete order and reads it back exactly as sent', async () => {
    const client = await service.createClient();
    const order = makeOrder('o-1', { alternate_order_ids: [{ type: 'shopify', id: 'S-1' }] });
    const response = await postOrders(service.production, client, [order]);
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.deepEqual(body, {
      message: 'Upserted 1 order',
      inserted: 1,
      updated: 0,
      warnings: [],
      request_id: response.headers['x-request-id'],
    });

    const page = await storedOrders(client);
    assert.equal(page.total_count, 1);
    const { created_at, updated_at, ...stored } = page.data[0]!;
    assert.deepEqual(stored, order);
    assert.match(String(created_at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(updated_at, created_at);
  });

  test('accepts an order with only the required fields', async () => {
    const client = await service.createClient();
    const order = minimalOrder('min');
    assert.equal((await postOrders(service.production, client, [order])).statusCode, 200);
    const { created_at: _c, updated_at: _u, ...stored } = (await storedOrders(client)).data[0]!;
    assert.deepEqual(stored, { ...order, alternate_order_ids: [] });
  });

  test('replaces an existing order wholesale and keeps created_at', async () => {
    const client = await service.createClient();
    await postOrders(service.production, client, [makeOrder('o-1')]);
    const [first] = (await storedOrders(client)).data;

    const replacement = minimalOrder('o-1', {
      products: [{ id: 'hat', name: 'Hat', quantity: 1, price: 10 }],
      purchase_total: 10,
    });
    const response = await postOrders(service.production, client, [replacement]);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().inserted, 0);
    assert.equal(response.json().updated, 1);

    const [second] = (await storedOrders(client)).data;
    const { created_at, updated_at, ...stored } = second!;
    assert.deepEqual(stored, { ...replacement, alternate_order_ids: [] }, 'no product, refund or e-mail of the first version is left');
    assert.equal(created_at, first!.created_at);
    assert.ok(String(updated_at) >= String(first!.updated_at));
  });

  test('counts new and existing orders of one batch separately', async () => {
    const client = await service.createClient();
    await postOrders(service.production, client, [minimalOrder('a'), minimalOrder('b')]);
    const response = await postOrders(service.production, client, [minimalOrder('b'), minimalOrder('c'), minimalOrder('a')]);
    assert.equal(response.json().message, 'Upserted 3 orders');
    assert.equal(response.json().inserted, 1);
    assert.equal(response.json().updated, 2);
  });

  test('adds the aliases of alternate_order_ids and never removes them on a later upsert', async () => {
    const client = await service.createClient();
    await postOrders(service.production, client, [minimalOrder('o', { alternate_order_ids: [{ type: 'shopify', id: '1' }] })]);
    await postOrders(service.production, client, [
      minimalOrder('o', { alternate_order_ids: [{ type: 'custom:erp', id: 'E-9' }, { type: 'shopify', id: '1' }] }),
    ]);
    await postOrders(service.production, client, [minimalOrder('o')]);
    const [stored] = (await storedOrders(client)).data;
    assert.deepEqual(stored!.alternate_order_ids, [
      { type: 'shopify', id: '1' },
      { type: 'custom:erp', id: 'E-9' },
    ]);
  });

  test('refuses an alias that belongs to another order, and stores nothing of the batch', async () => {
    const client = await service.createClient();
    await postOrders(service.production, client, [minimalOrder('first', { alternate_order_ids: [{ type: 't', id: 'shared' }] })]);
    const errors = await rejected(client, [
      minimalOrder('second'),
      minimalOrder('third', { alternate_order_ids: [{ type: 't', id: 'free' }, { type: 't', id: 'shared' }] }),
    ]);
    assert.deepEqual(errors, [
      {
        loc: 'body/1/alternate_order_ids/1',
        msg: 'Alias t shared is already attached to order first',
        type: 'alias_conflict',
        order_id: 'third',
      },
    ]);
    const page = await storedOrders(client);
    assert.deepEqual(page.data.map((order) => order.order_id), ['first']);
    assert.deepEqual(page.data[0]!.alternate_order_ids, [{ type: 't', id: 'shared' }]);
  });

  test('refuses two orders of one batch claiming the same alias, on UAT test credentials too', async () => {
    const client = await service.createClient();
    const batch = [
      minimalOrder('a', { alternate_order_ids: [{ type: 't', id: 'x' }] }),
      minimalOrder('b', { alternate_order_ids: [{ type: 't', id: 'y' }, { type: 't', id: 'x' }] }),
    ];
    const expected = [
      { loc: 'body/1/alternate_order_ids/1', msg: 'Alias t x is given for order a too in this request', type: 'alias_conflict', order_id: 'b' },
    ];
    assert.deepEqual(await rejected(client, batch), expected);
    assert.equal((await storedOrders(client)).total_count, 0);
    const dryRun = await postOrders(service.uat, { headers: { authorization: 'None', 'data-client-id': 'test' } }, batch);
    assert.equal(dryRun.statusCode, 400, dryRun.body);
    assert.deepEqual(dryRun.json().errors, expected);
  });

  test('keeps amounts as exact decimals', async () => {
    const client = await service.createClient();
    const amounts = { purchase_total: 12345678901234.56, tax: 0.1, shipping_cost: 0.2, discount_amount: 99999999999999.9 };
    await postOrders(service.production, client, [minimalOrder('a', amounts), minimalOrder('b', { ...amounts, tax: 0.2 })]);
    const page = await storedOrders(client);
    for (const field of Object.keys(amounts)) assert.equal(page.data[0]![field], amounts[field as keyof typeof amounts]);
    const [sums] = await service.db.query<{ tax: string; total: string }>(
      "SELECT sum((body->>'tax')::numeric)::text AS tax, sum((body->>'purchase_total')::numeric)::text AS total FROM orders WHERE client_id = $1",
      [client.client_id],
    );
    assert.deepEqual(sums, { tax: '0.3', total: '24691357802469.12' });
  });
});

describe('timestamps', () => {
  const accepted = [
    '2022-03-08T01:23:45-08:00',
    '2022-03-08T01:23:45-0800',
    '1970-01-01T00:00:00-0000',
    '2024-02-29T23:59:59.123456Z',
    '2024-03-08T09:23:45+05:30',
    '2024-03-08t09:23:45z',
    '0001-01-01T00:00:00Z',
    '9999-12-31T22:59:59-01:00',
    '9999-12-31T23:59:59.9999994Z', // rounds down to the last microsecond
  ];
  for (const value of accepted) {
    test(`accepts ${value} and keeps it as sent`, async () => {
      const client = await service.createClient();
      const response = await postOrders(service.production, client, [minimalOrder('o', { time_of_purchase: value })]);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal((await storedOrders(client)).data[0]!.time_of_purchase, value);
    });
  }

  const refused = [
    '2024-03-08T01:23:45',
    '2024-03-08 01:23:45Z',
    '2023-02-29T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-03-08T24:00:00Z',
    '2024-03-08',
    'yesterday',
    '2024-03-08T01:23:45+2400',
    '2024-03-08T01:23:45+16:00', // beyond what PostgreSQL stores
    '0000-03-08T01:23:45Z', // there is no year 0
    '0001-01-01T00:00:00+01:00', // year 0 in UTC
    '9999-12-31T23:30:00-01:00', // year 10000 in UTC
    '9999-12-31T23:59:59.9999995Z', // stored to the microsecond: year 10000
  ];
  for (const value of refused) {
    test(`refuses ${value}`, () =>
      rejectedWith(minimalOrder('o', { time_of_purchase: value }), { loc: 'time_of_purchase', type: 'format' }));
  }

  test('a fraction finer than a microsecond is rounded as stored, and the order listed on the day it rounds to', async () => {
    const client = await service.createClient();
    const response = await postOrders(service.production, client, [minimalOrder('o', { time_of_purchase: '2024-03-08T23:59:59.9999999Z' })]);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal((await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' })).json().total_count, 0);
    assert.equal((await listOrders(service.production, client, { start_date: '2024-03-09', end_date: '2024-03-09' })).json().total_count, 1);
  });

  test('compares instants across offsets when listing by date (UTC days)', async () => {
    const client = await service.createClient();
    await postOrders(service.production, client, [
      // 2024-03-09T04:00:00Z: the 9th in UTC although the 8th where it was placed.
      minimalOrder('late-evening-pacific', { time_of_purchase: '2024-03-08T20:00:00-0800' }),
      minimalOrder('early-utc', { time_of_purchase: '2024-03-09T00:00:00Z' }),
      minimalOrder('end-of-8th', { time_of_purchase: '2024-03-08T23:59:59.999Z' }),
      minimalOrder('morning-tokyo', { time_of_purchase: '2024-03-09T08:00:00+09:00' }), // 2024-03-08T23:00Z
    ]);
    const ninth = await storedOrders(client, { start_date: '2024-03-09', end_date: '2024-03-09' });
    assert.deepEqual(ninth.data.map((order) => order.order_id), ['early-utc', 'late-evening-pacific']);
    const eighth = await storedOrders(client, { start_date: '2024-03-08', end_date: '2024-03-08' });
    assert.deepEqual(eighth.data.map((order) => order.order_id), ['morning-tokyo', 'end-of-8th']);
  });
});

describe('the specification messages', () => {
  for (const currency of ['XUSDX', 'usd', 'US', 'ABC', 'USDUSD']) {
    test(`currency ${currency}`, () =>
      rejectedWith(minimalOrder('o', { currency }), {
        loc: 'currency',
        msg: 'Currency does not match any known currencies',
        type: 'enum',
      }));
  }

  test('no products', () =>
    rejectedWith(minimalOrder('o', { products: [] }), {
      loc: 'products',
      msg: 'Must have at least one product',
      type: 'min_items',
    }));

  test('the same product twice', () =>
    rejectedWith(
      minimalOrder('o', {
        products: [
          { id: 'p', name: 'P', quantity: 1, price: 1 },
          { id: 'p', name: 'P again', quantity: 2, price: 1 },
        ],
      }),
      { loc: 'products/1/id', msg: 'Cannot include duplicate product IDs', type: 'unique' },
    ));

  test('the same product and variant twice', () =>
    rejectedWith(
      minimalOrder('o', {
        products: [
          { id: 'p', name: 'P', quantity: 1, price: 1, variant_id: 'v' },
          { id: 'q', name: 'Q', quantity: 1, price: 1, variant_id: 'v' },
          { id: 'p', name: 'P', quantity: 1, price: 1, variant_id: 'v' },
        ],
      }),
      { loc: 'products/2/id', msg: 'Cannot include duplicate product IDs', type: 'unique' },
    ));

  test('one product in two variants is two lines, not a duplicate', async () => {
    const client = await service.createClient();
    const products = [
      { id: 'p', name: 'P', quantity: 1, price: 1 },
      { id: 'p', name: 'P', quantity: 1, price: 1, variant_id: 'v1' },
      { id: 'p', name: 'P', quantity: 1, price: 1, variant_id: 'v2' },
    ];
    const refunds = products.map(({ id, variant_id }) => ({
      product_id: id,
      ...(variant_id ? { variant_id } : {}),
      quantity: 1,
      refund_amount: 1,
      refund_cost: 0,
      refund_made_at: '2024-03-09T00:00:00Z',
    }));
    const response = await postOrders(service.production, client, [minimalOrder('o', { products, refunds })]);
    assert.equal(response.statusCode, 200, response.body);
  });

  test('the same refund line twice', () => {
    const refund = { product_id: 'p', quantity: 1, refund_amount: 1, refund_cost: 0, refund_made_at: '2024-03-09T00:00:00Z' };
    return rejectedWith(minimalOrder('o', { refunds: [refund, { ...refund, quantity: 2 }] }), {
      loc: 'refunds/1/product_id',
      msg: 'Cannot include duplicate product IDs',
      type: 'unique',
    });
  });

  for (const country_code of ['US', 'XXX', 'usa', 'XUSAX', '']) {
    test(`country code "${country_code}"`, () =>
      rejectedWith(minimalOrder('o', { customer_shipping_address: { zip: '1', country_code } }), {
        loc: 'customer_shipping_address/country_code',
        msg: 'Country code should use three-letter ISO 3166 country codes',
        type: 'enum',
      }));
  }

  test('every violation of a batch is reported, each with its order_id', async () => {
    const client = await service.createClient();
    const errors = await rejected(client, [
      minimalOrder('good'),
      minimalOrder('bad-1', { currency: 'XXX', products: [] }),
      minimalOrder('bad-2', { tax: 'ten', extra: true }),
    ]);
    assert.deepEqual(
      errors.map(({ loc, type, order_id }) => ({ loc, type, order_id })).sort((a, b) => a.loc.localeCompare(b.loc)),
      [
        { loc: 'body/1/currency', type: 'enum', order_id: 'bad-1' },
        { loc: 'body/1/products', type: 'min_items', order_id: 'bad-1' },
        { loc: 'body/2/extra', type: 'additional_property', order_id: 'bad-2' },
        { loc: 'body/2/tax', type: 'type', order_id: 'bad-2' },
      ],
    );
    assert.equal((await storedOrders(client)).total_count, 0, 'the valid order of a rejected batch is not stored');
  });
});

describe('field rules', () => {
  const required = ['order_id', 'customer_id', 'time_of_purchase', 'tax', 'currency', 'purchase_total', 'products', 'shipping_cost'];
  for (const field of required) {
    test(`order.${field} is required`, () => {
      const { [field]: _dropped, ...order } = minimalOrder('o');
      return rejectedWith(order, { loc: field, msg: 'Field required', type: 'required' });
    });
  }

  const nested: [string, string, Record<string, unknown>][] = [
    ['products/0', 'id', { products: [{ name: 'P', quantity: 1, price: 1 }] }],
    ['products/0', 'name', { products: [{ id: 'p', quantity: 1, price: 1 }] }],
    ['products/0', 'quantity', { products: [{ id: 'p', name: 'P', price: 1 }] }],
    ['products/0', 'price', { products: [{ id: 'p', name: 'P', quantity: 1 }] }],
    ['refunds/0', 'refund_made_at', { refunds: [{ product_id: 'p', quantity: 1, refund_amount: 1, refund_cost: 1 }] }],
    ['refunds/0', 'refund_cost', { refunds: [{ product_id: 'p', quantity: 1, refund_amount: 1, refund_made_at: '2024-03-09T00:00:00Z' }] }],
    ['customer_shipping_address', 'zip', { customer_shipping_address: { country_code: 'USA' } }],
    ['customer_shipping_address', 'country_code', { customer_shipping_address: { zip: '1' } }],
    ['alternate_order_ids/0', 'id', { alternate_order_ids: [{ type: 't' }] }],
  ];
  for (const [path, field, overrides] of nested) {
    test(`${path.replace(/\/0$/, '[]')}.${field} is required`, () =>
      rejectedWith(minimalOrder('o', overrides), { loc: `${path}/${field}`, type: 'required' }));
  }

  const extras: [string, Record<string, unknown>][] = [
    ['', { coupon: 'X' }],
    ['products/0/', { products: [{ id: 'p', name: 'P', quantity: 1, price: 1, coupon: 'X' }] }],
    ['refunds/0/', { refunds: [{ product_id: 'p', quantity: 1, refund_amount: 1, refund_cost: 1, refund_made_at: '2024-03-09T00:00:00Z', coupon: 'X' }] }],
    ['customer_shipping_address/', { customer_shipping_address: { zip: '1', country_code: 'USA', coupon: 'X' } }],
    ['alternate_order_ids/0/', { alternate_order_ids: [{ type: 't', id: '1', coupon: 'X' }] }],
  ];
  for (const [path, overrides] of extras) {
    test(`no additional property at ${path || 'the order'}`, () =>
      rejectedWith(minimalOrder('o', overrides), { loc: `${path}coupon`, msg: 'Property is not allowed here', type: 'additional_property' }));
  }

  const empty: [string, Record<string, unknown>][] = [
    ['order_id', { order_id: '' }],
    ['customer_id', { customer_id: '' }],
    ['products/0/id', { products: [{ id: '', name: 'P', quantity: 1, price: 1 }] }],
    ['products/0/name', { products: [{ id: 'p', name: '', quantity: 1, price: 1 }] }],
    ['products/0/variant_id', { products: [{ id: 'p', name: 'P', quantity: 1, price: 1, variant_id: '' }] }],
    ['products/0/variant_name', { products: [{ id: 'p', name: 'P', quantity: 1, price: 1, variant_name: '' }] }],
    ['refunds/0/product_id', { refunds: [{ product_id: '', quantity: 1, refund_amount: 1, refund_cost: 1, refund_made_at: '2024-03-09T00:00:00Z' }] }],
    ['refunds/0/variant_id', { refunds: [{ product_id: 'p', variant_id: '', quantity: 1, refund_amount: 1, refund_cost: 1, refund_made_at: '2024-03-09T00:00:00Z' }] }],
    ['customer_shipping_address/address1', { customer_shipping_address: { address1: '', zip: '1', country_code: 'USA' } }],
    ['customer_shipping_address/city', { customer_shipping_address: { city: '', zip: '1', country_code: 'USA' } }],
    ['alternate_order_ids/0/type', { alternate_order_ids: [{ type: '', id: '1' }] }],
    ['alternate_order_ids/0/id', { alternate_order_ids: [{ type: 't', id: '' }] }],
  ];
  for (const [loc, overrides] of empty) {
    test(`${loc} must not be empty`, () => rejectedWith(minimalOrder('o', overrides), { loc, msg: 'Must not be empty', type: 'min_length' }));
  }

  test('optional strings without a minimum may be empty', async () => {
    const client = await service.createClient();
    const order = minimalOrder('o', { customer_name: '', customer_shipping_address: { address2: '', state: '', zip: '', country_code: 'USA' } });
    assert.equal((await postOrders(service.production, client, [order])).statusCode, 200);
  });

  const amounts: [string, (value: number) => Record<string, unknown>][] = [
    ['tax', (value) => ({ tax: value })],
    ['purchase_total', (value) => ({ purchase_total: value })],
    ['shipping_cost', (value) => ({ shipping_cost: value })],
    ['discount_amount', (value) => ({ discount_amount: value })],
    ['products/0/quantity', (value) => ({ products: [{ id: 'p', name: 'P', quantity: value, price: 1 }] })],
    ['products/0/price', (value) => ({ products: [{ id: 'p', name: 'P', quantity: 1, price: value }] })],
    ...(['quantity', 'refund_amount', 'refund_cost'] as const).map(
      (field): [string, (value: number) => Record<string, unknown>] => [
        `refunds/0/${field}`,
        (value) => ({
          refunds: [{ product_id: 'p', quantity: 1, refund_amount: 1, refund_cost: 1, refund_made_at: '2024-03-09T00:00:00Z', [field]: value }],
        }),
      ],
    ),
  ];
  for (const [loc, order] of amounts) {
    test(`${loc} is at most 100000000000000`, async () => {
      await rejectedWith(minimalOrder('o', order(100000000000001)), { loc, msg: 'Must be at most 100000000000000', type: 'maximum' });
      const client = await service.createClient();
      assert.equal((await postOrders(service.production, client, [minimalOrder('o', order(100000000000000))])).statusCode, 200);
    });
  }

  test('ids and alias parts longer than 255 characters are refused (they are index keys)', async () => {
    const long = 'x'.repeat(256);
    await rejectedWith(minimalOrder(long), { loc: 'order_id', msg: 'Must be at most 255 characters long', type: 'max_length' });
    await rejectedWith(minimalOrder('o', { alternate_order_ids: [{ type: long, id: '1' }] }), { loc: 'alternate_order_ids/0/type', type: 'max_length' });
    await rejectedWith(minimalOrder('o', { alternate_order_ids: [{ type: 't', id: long }] }), { loc: 'alternate_order_ids/0/id', type: 'max_length' });
    const client = await service.createClient();
    const multibyte = '€'.repeat(255); // 765 bytes
    const order = minimalOrder(multibyte, { alternate_order_ids: [{ type: multibyte, id: multibyte }] });
    assert.equal((await postOrders(service.production, client, [order])).statusCode, 200);
  });

  test('an amount above the maximum by less than a binary float can tell is refused', async () => {
    const client = await service.createClient();
    const send = (app: typeof service.production, headers: Record<string, string>, text: string) =>
      app.inject({ method: 'POST', url: '/v2/orders', headers: { ...headers, 'content-type': 'application/json' }, payload: text });
    const order = JSON.stringify([
      minimalOrder('o', { purchase_total: 12, products: [{ id: 'p', name: 'P', quantity: 1, price: 7 }] }),
    ]);
    const over = order.replace('"purchase_total":12', '"purchase_total":100000000000000.001').replace('"price":7', '"price":100000000000000.0000001');
    for (const [app, headers] of [
      [service.production, client.headers],
      [service.uat, { authorization: 'None', 'data-client-id': 'test' }],
    ] as const) {
      const response = await send(app, headers, over);
      assert.equal(response.statusCode, 400, response.body);
      assert.deepEqual(
        response.json().errors.map(({ loc, type, order_id }: ErrorItem) => ({ loc, type, order_id })).sort((a: ErrorItem, b: ErrorItem) => a.loc.localeCompare(b.loc)),
        [
          { loc: 'body/0/products/0/price', type: 'maximum', order_id: 'o' },
          { loc: 'body/0/purchase_total', type: 'maximum', order_id: 'o' },
        ],
      );
    }
    assert.equal((await storedOrders(client)).total_count, 0);
    const exact = order.replace('"purchase_total":12', '"purchase_total":100000000000000.000');
    assert.equal((await send(service.production, client.headers, exact)).statusCode, 200);
  });

  test('numbers are never taken from strings', () => rejectedWith(minimalOrder('o', { tax: '1' }), { loc: 'tax', msg: 'Must be a number', type: 'type' }));

  test('an overflowing number is refused', async () => {
    const client = await service.createClient();
    const response = await service.production.inject({
      method: 'POST',
      url: '/v2/orders',
      headers: { ...client.headers, 'content-type': 'application/json' },
      payload: JSON.stringify([minimalOrder('o')]).replace('"tax":0', '"tax":1e999'),
    });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().errors[0].loc, 'body/0/tax');
  });

  for (const email of ['not-an-email', 'a@', '@b.co', 'a b@c.co', 'a@b', 'a@@b.co', 'a@b..co']) {
    test(`customer_email ${email} is refused`, () =>
      rejectedWith(minimalOrder('o', { customer_email: email }), { loc: 'customer_email', msg: 'Must be a valid e-mail address', type: 'format' }));
  }

  for (const ip of ['999.1.1.1', '1.2.3', 'localhost', '2001:db8::g']) {
    test(`customer_ip_address ${ip} is refused`, () =>
      rejectedWith(minimalOrder('o', { customer_ip_address: ip }), { loc: 'customer_ip_address', msg: 'Must be a valid IPv4 or IPv6 address', type: 'format' }));
  }

  test('an empty customer_ip_address (unknown, as the WooCommerce plugin sends it) is accepted and kept empty', async () => {
    const client = await service.createClient();
    const response = await postOrders(service.production, client, [minimalOrder('o', { customer_ip_address: '' })]);
    assert.equal(response.statusCode, 200, response.body);
    const listed = await listOrders(service.production, client, { start_date: '2024-03-08', end_date: '2024-03-08' });
    assert.equal(listed.json().data[0].customer_ip_address, '');
  });

  test('internationalised e-mail addresses are accepted', async () => {
    const client = await service.createClient();
    const orders = ['müller@example.de', 'δοκιμή@παράδειγμα.δοκιμή', 'a.b+tag@sub.example.co.uk'].map((email, i) =>
      minimalOrder(`o${i}`, { customer_email: email }),
    );
    const response = await postOrders(service.production, client, orders);
    assert.equal(response.statusCode, 200, response.body);
  });

  test('IPv4 and IPv6 addresses are accepted', async () => {
    const client = await service.createClient();
    const orders = ['198.51.100.1', '2001:db8::1', '::ffff:192.0.2.1'].map((ip, i) => minimalOrder(`o${i}`, { customer_ip_address: ip }));
    assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
  });

  for (const field of ['discount_codes', 'order_tags']) {
    test(`${field} items are unique`, () =>
      rejectedWith(minimalOrder('o', { [field]: ['A', 'B', 'A'] }), { loc: field, type: 'unique' }));
  }

  for (const [plain, hashed] of [
    ['customer_email', 'hashed_customer_email'],
    ['customer_phone_number', 'hashed_customer_phone_number'],
  ] as const) {
    test(`${plain} and ${hashed} are exclusive`, () =>
      rejectedWith(minimalOrder('o', { [plain]: plain === 'customer_email' ? 'a@b.co' : '+15555550100', [hashed]: 'a'.repeat(64) }), {
        loc: hashed,
        msg: `Must not be present together with ${plain}`,
        type: 'exclusive',
      }));
  }

  test('order_id must differ from customer_id', () =>
    rejectedWith(minimalOrder('same', { customer_id: 'same' }), { loc: 'customer_id', msg: 'Must not be the same as order_id', type: 'distinct' }));

  test('is_recurring_order is a boolean', () =>
    rejectedWith(minimalOrder('o', { is_recurring_order: 'yes' }), { loc: 'is_recurring_order', type: 'type' }));
});

describe('batches', () => {
  test('an empty array is refused', async () => {
    const client = await service.createClient();
    const errors = await rejected(client, []);
    assert.deepEqual(errors.map(({ loc, type }) => ({ loc, type })), [{ loc: 'body', type: 'min_items' }]);
  });

  test('a body that is not an array is refused', async () => {
    const client = await service.createClient();
    const errors = await rejected(client, minimalOrder('o'));
    assert.deepEqual(errors.map(({ loc, type }) => ({ loc, type })), [{ loc: 'body', type: 'type' }]);
  });

  test('two orders with the same order_id are refused, naming it', async () => {
    const client = await service.createClient();
    for (const second of [minimalOrder('dup'), minimalOrder('dup', { tax: 1 })]) {
      const errors = await rejected(client, [minimalOrder('dup'), minimalOrder('other'), second]);
      assert.deepEqual(errors, [
        { loc: 'body/2/order_id', msg: 'Duplicate order_id in this batch: each order may appear once', type: 'unique', order_id: 'dup' },
      ]);
    }
    assert.equal((await storedOrders(client)).total_count, 0);
  });

  test('1000 orders are accepted in one request, 1001 are refused with the limit named', async () => {
    const client = await service.createClient();
    const orders = Array.from({ length: 1001 }, (_, i) => minimalOrder(`o-${i}`));
    const errors = await rejected(client, orders);
    assert.deepEqual(errors, [{ loc: 'body', msg: 'At most 1000 orders per request: split the batch', type: 'max_items' }]);
    const response = await postOrders(service.production, client, orders.slice(0, 1000));
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().inserted, 1000);
    assert.equal((await storedOrders(client)).total_count, 1000);
  });
});

describe('warnings for "should" rules', () => {
  test('are reported and the order is stored', async () => {
    const client = await service.createClient();
    const refund = { quantity: 1, refund_amount: 1, refund_cost: 0, refund_made_at: '2024-03-09T00:00:00Z' };
    const orders = [
      minimalOrder('email-id', { customer_id: 'jane@example.com' }),
      minimalOrder('hashes', { hashed_customer_email: 'not-a-hash', hashed_customer_phone_number: 'A'.repeat(64) }),
      minimalOrder('refunds', {
        products: [{ id: 'p', name: 'P', quantity: 2, price: 1, variant_id: 'v' }],
        refunds: [
          { ...refund, product_id: 'missing' },
          { ...refund, product_id: 'p', variant_id: 'other' },
          { ...refund, product_id: 'p', variant_id: 'v', quantity: 3 },
        ],
      }),
    ];
    const response = await postOrders(service.production, client, orders);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(
      response.json().warnings.map(({ order_id, loc }: { order_id: string; loc: string }) => ({ order_id, loc })),
      [
        { order_id: 'email-id', loc: 'body/0/customer_id' },
        { order_id: 'hashes', loc: 'body/1/hashed_customer_email' },
        { order_id: 'refunds', loc: 'body/2/refunds/0/product_id' },
        { order_id: 'refunds', loc: 'body/2/refunds/1/product_id' },
        { order_id: 'refunds', loc: 'body/2/refunds/2/quantity' },
      ],
    );
    for (const warning of response.json().warnings) assert.ok(warning.msg.length > 10);
    assert.equal((await storedOrders(client)).total_count, 3);
  });
});

test('a refund without a variant is measured against every variant of its product', async () => {
  const client = await service.createClient();
  const refund = { product_id: 'p', refund_amount: 1, refund_cost: 0, refund_made_at: '2024-03-09T00:00:00Z' };
  const products = [
    { id: 'p', name: 'P', quantity: 1, price: 1, variant_id: 'a' },
    { id: 'p', name: 'P', quantity: 5, price: 1, variant_id: 'b' },
  ];
  const response = await postOrders(service.production, client, [
    minimalOrder('within', { products, refunds: [{ ...refund, quantity: 6 }] }),
    minimalOrder('beyond', { products, refunds: [{ ...refund, quantity: 7 }] }),
  ]);
  assert.deepEqual(response.json().warnings, [
    { order_id: 'beyond', loc: 'body/1/refunds/0/quantity', msg: 'Refunds more units than were ordered (6)' },
  ]);
});

describe('listing', () => {
  async function clientWithOrders(count: number) {
    const client = await service.createClient();
    const orders = Array.from({ length: count }, (_, i) =>
      minimalOrder(`o-${String(i).padStart(2, '0')}`, { time_of_purchase: `2024-03-${String(1 + (i % 3)).padStart(2, '0')}T10:00:00Z` }),
    );
    if (count > 0) assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
    return client;
  }

  test('orders by time of purchase, then order_id, with the page arithmetic', async () => {
    const client = await clientWithOrders(5);
    const pages = [];
    for (const page of [1, 2, 3, 4]) pages.push(await storedOrders(client, { ...WHOLE_RANGE, page, page_size: 2 }));
    assert.deepEqual(
      pages.map((page) => page.data.map((order) => order.order_id)),
      [['o-00', 'o-03'], ['o-01', 'o-04'], ['o-02'], []],
    );
    for (const [index, page] of pages.entries()) {
      assert.deepEqual(
        { page: page.page, page_size: page.page_size, total_pages: page.total_pages, total_count: page.total_count },
        { page: index + 1, page_size: 2, total_pages: 3, total_count: 5 },
      );
    }
  });

  test('an exact multiple of the page size has no empty last page', async () => {
    const client = await clientWithOrders(4);
    const page = await storedOrders(client, { ...WHOLE_RANGE, page_size: 2 });
    assert.equal(page.total_pages, 2);
  });

  test('an empty range has zero pages and the default page size', async () => {
    const client = await clientWithOrders(0);
    assert.deepEqual(await storedOrders(client, { ...WHOLE_RANGE, page: 1 }), { data: [], page: 1, page_size: 1000, total_pages: 0, total_count: 0 });
    assert.deepEqual(await storedOrders(client), { data: [], page: 1, page_size: 0, total_pages: 0, total_count: 0 });
  });

  test('without page and page_size every order of the range comes in one answer, as the pages have them', async () => {
    const client = await service.createClient();
    const day = (n: number) => `2024-03-${String(n).padStart(2, '0')}`;
    // 2,500 orders on 2 to 4 March, and some on the days around them that the range leaves out.
    const orders = Array.from({ length: 2_600 }, (_, i) =>
      minimalOrder(`u-${i}`, { time_of_purchase: `${day(i < 50 ? 1 : i < 100 ? 5 : 2 + (i % 3))}T${String(i % 24).padStart(2, '0')}:00:00Z` }),
    );
    for (let from = 0; from < orders.length; from += 1000) {
      assert.equal((await postOrders(service.production, client, orders.slice(from, from + 1000))).statusCode, 200);
    }
    const other = await service.createClient();
    assert.equal((await postOrders(service.production, other, [minimalOrder('u-7', { time_of_purchase: `${day(3)}T00:00:00Z` })])).statusCode, 200);

    const range = { start_date: day(2), end_date: day(4) };
    const whole = await storedOrders(client, range);
    const paged = [];
    for (const page of [1, 2, 3]) paged.push(...(await storedOrders(client, { ...range, page })).data);
    assert.equal(whole.data.length, 2_500);
    assert.deepEqual(whole.data, paged);
    assert.deepEqual(
      { page: whole.page, page_size: whole.page_size, total_pages: whole.total_pages, total_count: whole.total_count },
      { page: 1, page_size: 2_500, total_pages: 1, total_count: 2_500 },
    );
  });

  test('a client going away mid-answer stops the reading and closes the cursor', async () => {
    const client = await service.createClient();
    // About 10 MB of orders: far more than socket buffers hold, so the answer waits for its reader.
    const products = Array.from({ length: 40 }, (_, i) => ({ id: `p-${i}`, name: 'x'.repeat(200), quantity: 1, price: 10 }));
    const orders = Array.from({ length: 1000 }, (_, i) => minimalOrder(`big-${i}`, { products, purchase_total: 400 }));
    assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
    // The cursor is a held cursor of the embedded store's one session, or a transaction open on PostgreSQL.
    const openCursors = async () => {
      const [row] = await service.db.query<{ open: number }>(
        service.db.kind === 'pglite'
          ? 'SELECT count(*)::int AS open FROM pg_cursors WHERE is_holdable'
          : `SELECT count(*)::int AS open FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`,
      );
      return row!.open;
    };
    const until = async (what: string, done: () => Promise<boolean>) => {
      for (const started = Date.now(); !(await done()); await sleep(20)) {
        assert.ok(Date.now() - started < 10_000, `timed out waiting until ${what}`);
      }
    };

    const address = await service.production.listen({ port: 0, host: '127.0.0.1' });
    const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get(`${address}/v2/orders?start_date=2024-03-08&end_date=2024-03-08`, { headers: client.headers }, resolve).on('error', reject),
    );
    assert.equal(response.statusCode, 200);
    response.pause();
    await until('the cursor is open', async () => (await openCursors()) === 1);
    response.destroy();
    await until('the cursor is closed', async () => (await openCursors()) === 0);
  });

  test('page or page_size alone pages as before, with the other at its default', async () => {
    const client = await clientWithOrders(5);
    const first = await storedOrders(client, { ...WHOLE_RANGE, page_size: 2 });
    assert.deepEqual([first.page, first.page_size, first.total_pages, first.data.length], [1, 2, 3, 2]);
    const second = await storedOrders(client, { ...WHOLE_RANGE, page: 2 });
    assert.deepEqual([second.page, second.page_size, second.total_pages, second.total_count, second.data], [2, 1000, 1, 5, []]);
  });

  test('the UAT test credentials get an empty answer, paged or not', async () => {
    const headers = { headers: { authorization: 'None', 'data-client-id': 'test' } };
    for (const [query, paging] of [
      [WHOLE_RANGE, { page: 1, page_size: 0, total_pages: 0, total_count: 0 }],
      [{ ...WHOLE_RANGE, page_size: 10 }, { page: 1, page_size: 10, total_pages: 0, total_count: 0 }],
    ] as const) {
      const response = await listOrders(service.uat, headers, query);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { data: [], ...paging });
    }
  });

  test('both ends of the date range are inclusive', async () => {
    const client = await clientWithOrders(6);
    const page = await storedOrders(client, { start_date: '2024-03-02', end_date: '2024-03-03' });
    assert.deepEqual(page.data.map((order) => order.order_id), ['o-01', 'o-04', 'o-02', 'o-05']);
  });

  const badQueries: [string, Record<string, string | number>, string][] = [
    ['without start_date', { end_date: '2024-01-01' }, 'query/start_date'],
    ['without end_date', { start_date: '2024-01-01' }, 'query/end_date'],
    ['with an impossible date', { start_date: '2024-02-30', end_date: '2024-03-01' }, 'query/start_date'],
    ['with a date-time', { start_date: '2024-01-01T00:00:00Z', end_date: '2024-03-01' }, 'query/start_date'],
    ['ending before it starts', { start_date: '2024-03-02', end_date: '2024-03-01' }, 'query/end_date'],
    ['with page 0', { ...WHOLE_RANGE, page: 0 }, 'query/page'],
    ['with page_size 1001', { ...WHOLE_RANGE, page_size: 1001 }, 'query/page_size'],
    ['with page_size 0', { ...WHOLE_RANGE, page_size: 0 }, 'query/page_size'],
    ['with a page that is not a number', { ...WHOLE_RANGE, page: 'two' }, 'query/page'],
    ['with an unknown parameter', { ...WHOLE_RANGE, limit: 5 }, 'query/limit'],
  ];
  for (const [name, query, loc] of badQueries) {
    test(`a query ${name} is a 400 naming ${loc}`, async () => {
      const client = await service.createClient();
      const response = await listOrders(service.production, client, query);
      assert.equal(response.statusCode, 400, response.body);
      assert.deepEqual(response.json().errors.map((error: ErrorItem) => error.loc), [loc]);
    });
  }
});
