import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { AMOUNT_BOUNDS } from '../src/orders/schema.js';
import { MEASURE_BOUNDS } from '../src/spend/schema.js';
import { assertErrorEnvelope, makeOrder, minimalOrder, startService, type TestApp, type TestClient } from './helpers.js';

/*
 * Amounts with more decimal places than are stored (12), as the JSON encoders of JavaScript and
 * PHP write a computed price, are taken by every write that carries numbers, stored rounded to
 * 12 places (half away from zero) with a warning naming the field, and read back rounded; the
 * bounds are still checked exactly, on the number as sent.
 */

const service = await startService();
after(() => service.close());

const UAT_TEST_CREDENTIALS = { headers: { authorization: 'None', 'data-client-id': 'test' } };
type Caller = Pick<TestClient, 'headers'>;
type Json = Record<string, unknown>;

/** Numbers as a client sends them, and what is stored of each. */
const SENT: { text: string; stored: string; what: string }[] = [
  { text: '16.990000000000002', stored: '16.99', what: '9.99 + 7 in a double' },
  { text: '0.30000000000000004', stored: '0.3', what: '0.1 + 0.2 in a double' },
  { text: '1.2345678901234567e-7', stored: '0.000000123457', what: 'an exponent, and 23 decimal places' },
  { text: '1e-16383', stored: '0', what: 'a 1 at the 16,383rd decimal place' },
  { text: '3.14159265358979323846', stored: '3.14159265359', what: '20 decimal places' },
];

const rounding = (loc: string, stored: string) => ({ loc, msg: `Rounded to 12 decimal places: stored as ${stored}` });

/** `value` as JSON text, each string "<name>" replaced by `numbers[name]`, written as it is. */
function jsonWith(value: unknown, numbers: Record<string, string>): string {
  return JSON.stringify(value).replace(/"<([^">]+)>"/g, (whole, name: string) => numbers[name] ?? whole);
}

/** The texts of the numbers of property `field` in a JSON text, in order, as written. */
const numbersIn = (body: string, field: string) => [...body.matchAll(new RegExp(`"${field}"\\s*:\\s*([-+.\\deE]+)`, 'g'))].map((match) => match[1]!);

function send(app: TestApp, method: 'POST' | 'PATCH', url: string, caller: Caller, payload: string) {
  return app.inject({ method, url, headers: { ...caller.headers, 'content-type': 'application/json' }, payload });
}

function okJson<T = Json>(response: LightMyRequestResponse, status: number): T {
  assert.equal(response.statusCode, status, response.body);
  return response.json() as T;
}

// ---------------------------------------------------------------------------------------------
// Orders

/** Every amount of an order, as a path from the order, in the order orderOf writes them (warnings come in document order). */
const ORDER_AMOUNTS = [
  'discount_amount',
  'tax',
  'purchase_total',
  'products/0/quantity',
  'products/0/price',
  'refunds/0/quantity',
  'refunds/0/refund_amount',
  'refunds/0/refund_cost',
  'shipping_cost',
];
/** The amounts a patch may change: the lines are not patched. */
const PATCHED_AMOUNTS = ['tax', 'purchase_total', 'shipping_cost', 'discount_amount'];

/** An order of `time` whose every amount is "<path>", to be written by jsonWith. */
function orderOf(orderId: string, time = '2024-05-01T10:00:00Z'): Json {
  const placeholders = Object.fromEntries(ORDER_AMOUNTS.map((path) => [path, `<${path}>`]));
  return makeOrder(orderId, {
    time_of_purchase: time,
    tax: placeholders.tax,
    purchase_total: placeholders.purchase_total,
    shipping_cost: placeholders.shipping_cost,
    discount_amount: placeholders.discount_amount,
    products: [{ id: 'shirt', name: 'Shirt', quantity: placeholders['products/0/quantity'], price: placeholders['products/0/price'] }],
    refunds: [
      {
        product_id: 'shirt',
        quantity: placeholders['refunds/0/quantity'],
        refund_amount: placeholders['refunds/0/refund_amount'],
        refund_cost: placeholders['refunds/0/refund_cost'],
        refund_made_at: '2024-05-02T10:00:00Z',
      },
    ],
  });
}

const every = (paths: readonly string[], text: string) => Object.fromEntries(paths.map((path) => [path, text]));

/** The value at `path` (a/b/0/c) of `value`. */
const at = (value: unknown, path: string) => path.split('/').reduce<unknown>((node, key) => (node as Json | undefined)?.[key], value);

/** The stored texts of the amounts at `paths` of the client's order, as the database holds them. */
async function storedAmounts(client: TestClient, orderId: string, paths: readonly string[]): Promise<string[]> {
  const [row] = await service.db.query<{ amounts: string[] }>(
    `SELECT ARRAY(SELECT o.body #>> string_to_array(p, '/') FROM unnest($3::text[]) WITH ORDINALITY AS u(p, n) ORDER BY n) AS amounts
       FROM orders o WHERE client_id = $1 AND environment = 'production' AND order_id = $2`,
    [client.client_id, orderId, paths],
  );
  assert.ok(row, `order ${orderId} stored`);
  return row.amounts;
}

/** The order as the API reads it back: listed whole, listed a page at a time (the same), and its explanation's purchase_total. */
async function readOrder(client: TestClient, orderId: string, day: string): Promise<{ order: Json; explained: number }> {
  const url = `/v2/orders?start_date=${day}&end_date=${day}`;
  const whole = okJson<{ data: Json[] }>(await service.production.inject({ method: 'GET', url, headers: client.headers }), 200);
  const paged = okJson<{ data: Json[] }>(await service.production.inject({ method: 'GET', url: `${url}&page_size=10`, headers: client.headers }), 200);
  const order = whole.data.find((item) => item.order_id === orderId);
  assert.ok(order, `order ${orderId} listed`);
  assert.deepEqual(paged.data.find((item) => item.order_id === orderId), order);
  const explanation = await service.production.inject({ method: 'GET', url: `/v2/orders/${orderId}/attribution`, headers: client.headers });
  return { order, explained: okJson<{ purchase_total: number }>(explanation, 200).purchase_total };
}

/** The answer's warnings: the amounts at `paths` of order 0, rounded to `stored`, and nothing else. */
function assertRoundedWarnings(answer: { warnings: Json[] }, orderId: string, paths: readonly string[], stored: string) {
  assert.deepEqual(
    answer.warnings,
    paths.map((path) => ({ order_id: orderId, ...rounding(`body/0/${path}`, stored) })),
  );
}

describe('order amounts past 12 decimal places', () => {
  for (const [url, label] of [
    ['/v2/orders', 'POST /v2/orders'],
    ['/v1/orders', 'POST /v1/orders (the old path)'],
  ] as const) {
    test(`${label}: every amount is taken, stored and read back rounded to 12 places, each with a warning`, async () => {
      const client = await service.createClient();
      for (const { text, stored, what } of SENT) {
        const orderId = `o-${stored}`;
        const answer = okJson<{ warnings: Json[] }>(await send(service.production, 'POST', url, client, `[${jsonWith(orderOf(orderId), every(ORDER_AMOUNTS, text))}]`), 200);
        assertRoundedWarnings(answer, orderId, ORDER_AMOUNTS, stored);

        assert.deepEqual(await storedAmounts(client, orderId, ORDER_AMOUNTS), ORDER_AMOUNTS.map(() => stored), what);
        const { order, explained } = await readOrder(client, orderId, '2024-05-01');
        for (const path of ORDER_AMOUNTS) assert.equal(at(order, path), Number(stored), `${what}: ${path}`);
        assert.equal(explained, Number(stored), `${what}: the explanation's purchase_total`);
      }
      // A stored amount reads back in at most 29 characters: a page of them is small.
      const listed = await service.production.inject({ method: 'GET', url: '/v2/orders?start_date=2024-05-01&end_date=2024-05-01', headers: client.headers });
      assert.ok(listed.body.length < 20_000, `${listed.body.length} characters read`);
    });
  }

  test('the UAT test credentials are answered the same warnings, nothing stored', async () => {
    const { text, stored } = SENT[0]!;
    const answer = okJson<{ warnings: Json[] }>(
      await send(service.uat, 'POST', '/v2/orders', UAT_TEST_CREDENTIALS, `[${jsonWith(orderOf('uat-order'), every(ORDER_AMOUNTS, text))}]`),
      200,
    );
    assertRoundedWarnings(answer, 'uat-order', ORDER_AMOUNTS, stored);
  });

  test('PATCH /v2/orders: every patched amount is taken, stored and read back rounded, each with a warning', async () => {
    const client = await service.createClient();
    for (const { text, stored, what } of SENT) {
      const orderId = `p-${stored}`;
      okJson(await send(service.production, 'POST', '/v2/orders', client, `[${jsonWith(orderOf(orderId), every(ORDER_AMOUNTS, '1'))}]`), 200);
      const patch = jsonWith({ order_id: orderId, ...Object.fromEntries(PATCHED_AMOUNTS.map((path) => [path, `<${path}>`])) }, every(PATCHED_AMOUNTS, text));
      const answer = okJson<{ warnings: Json[] }>(await send(service.production, 'PATCH', '/v2/orders', client, `[${patch}]`), 200);
      assertRoundedWarnings(answer, orderId, PATCHED_AMOUNTS, stored);

      assert.deepEqual(await storedAmounts(client, orderId, ORDER_AMOUNTS), ORDER_AMOUNTS.map((path) => (PATCHED_AMOUNTS.includes(path) ? stored : '1')), what);
      const { order, explained } = await readOrder(client, orderId, '2024-05-01');
      for (const path of PATCHED_AMOUNTS) assert.equal(at(order, path), Number(stored), `${what}: ${path}`);
      assert.equal(explained, Number(stored), `${what}: the explanation's purchase_total`);
    }
  });

  test('warnings of rounded amounts sit with the other warnings of their order, in the batch order', async () => {
    const client = await service.createClient();
    const first = { ...minimalOrder('first'), customer_id: 'jane@example.com', tax: '<tax>' };
    const second = { ...minimalOrder('second'), shipping_cost: '<shipping>' };
    const answer = okJson<{ warnings: Json[] }>(
      await send(service.production, 'POST', '/v2/orders', client, jsonWith([first, second], { tax: '0.30000000000000004', shipping: '-0.0000000000005' })),
      200,
    );
    assert.deepEqual(answer.warnings, [
      { order_id: 'first', ...rounding('body/0/tax', '0.3') },
      { order_id: 'first', loc: 'body/0/customer_id', msg: "Looks like an e-mail address; send the shop's internal customer id instead" },
      // Half away from zero, as exports round money.
      { order_id: 'second', ...rounding('body/1/shipping_cost', '-0.000000000001') },
    ]);
  });

  test('an amount within 12 places, or written with an exponent to the same value, is stored as it is and not warned about', async () => {
    const client = await service.createClient();
    const amounts = { tax: '1e-12', purchase_total: '12345678901234.56', shipping_cost: '1.5E+3', discount_amount: '0.100000000000000000' };
    const order = { ...minimalOrder('plain'), ...Object.fromEntries(Object.keys(amounts).map((field) => [field, `<${field}>`])) };
    const answer = okJson<{ warnings: Json[] }>(await send(service.production, 'POST', '/v2/orders', client, `[${jsonWith(order, amounts)}]`), 200);
    assert.deepEqual(answer.warnings, []);
    assert.deepEqual(await storedAmounts(client, 'plain', Object.keys(amounts)), ['0.000000000001', '12345678901234.56', '1500', '0.1']);
  });
});

describe('a key given twice', () => {
  test('the last one counts, for the bounds and the rounding as for the rest', async () => {
    const client = await service.createClient();
    const cases: [string, string, string[]][] = [
      ['"tax":100000000000000.001,"tax":1', '1', []],
      ['"tax":1e99999999,"tax":2', '2', []],
      ['"tax":16.990000000000002,"tax":3', '3', []],
      ['"tax":1e-99999999,"tax":4', '4', []],
      ['"tax":5,"tax":16.990000000000002', '16.99', ['16.99']],
    ];
    for (const [tax, stored, rounded] of cases) {
      const order = JSON.stringify(minimalOrder('twice', { tax: '<tax>' })).replace('"tax":"<tax>"', tax);
      const answer = okJson<{ warnings: Json[] }>(await send(service.production, 'POST', '/v2/orders', client, `[${order}]`), 200);
      assert.deepEqual(answer.warnings, rounded.map((text) => ({ order_id: 'twice', ...rounding('body/0/tax', text) })), tax);
      assert.deepEqual(await storedAmounts(client, 'twice', ['tax']), [stored], tax);
    }
    const refused = JSON.stringify(minimalOrder('twice', { tax: '<tax>' })).replace('"tax":"<tax>"', '"tax":1,"tax":100000000000000.001');
    const { errors } = assertErrorEnvelope(await send(service.production, 'POST', '/v2/orders', client, `[${refused}]`), 400);
    assert.deepEqual(errors, [{ loc: 'body/0/tax', msg: `Must be at most ${AMOUNT_BOUNDS.maximum}`, type: 'maximum', order_id: 'twice' }]);
  });
});

// ---------------------------------------------------------------------------------------------
// Spend

const MEASURES = ['spend', 'impressions', 'clicks'];
const COLLECTIONS = [
  { path: '/v1/spend_hourly', table: 'spend_hourly', period: { hour_start_iso: '2024-05-01T10:00:00Z' }, list: 'hour_start_iso_begin=2024-05-01T10:00:00Z&hour_start_iso_end=2024-05-01T10:00:00Z' },
  { path: '/v1/spend', table: 'spend_daily', period: { date: '2024-05-01' }, list: 'date=2024-05-01' },
] as const;

const spendRecord = (period: Json, campaignId: string): Json => ({
  ...period,
  platform_name: 'meta',
  platform_account_id: 'act_1',
  campaign_id: campaignId,
  campaign_name: campaignId,
  spend: '<spend>',
  spend_currency: 'USD',
  impressions: '<impressions>',
  clicks: '<clicks>',
});

describe('spend measures past 12 decimal places', () => {
  for (const collection of COLLECTIONS) {
    test(`${collection.path}: every measure is taken, stored and read back rounded to 12 places, each with a warning`, async () => {
      const client = await service.createClient();
      for (const { text, stored, what } of SENT) {
        const campaignId = `c-${stored}`;
        const body = `{"data":[${jsonWith(spendRecord(collection.period, campaignId), every(MEASURES, text))}]}`;
        for (const [app, caller] of [
          [service.production, client],
          [service.uat, UAT_TEST_CREDENTIALS],
        ] as const) {
          const response = await send(app, 'POST', collection.path, caller, body);
          const answer = okJson<{ data: Json[]; warnings: Json[] }>(response, 201);
          assert.deepEqual(answer.warnings, MEASURES.map((measure) => rounding(`body/data/0/${measure}`, stored)), what);
          for (const measure of MEASURES) assert.deepEqual(numbersIn(response.body, measure), [stored], `${what}: the answer's ${measure}`);
        }

        const [row] = await service.db.query<{ measures: string[] }>(
          `SELECT ARRAY[spend::text, impressions::text, clicks::text] AS measures FROM ${collection.table} WHERE client_id = $1 AND campaign_id = $2`,
          [client.client_id, campaignId],
        );
        assert.deepEqual(row?.measures, MEASURES.map(() => stored), what);
      }
      const listed = await service.production.inject({ method: 'GET', url: `${collection.path}?platform_account_id=act_1&${collection.list}`, headers: client.headers });
      assert.equal(listed.statusCode, 200, listed.body);
      const byCampaign = new Map((listed.json() as { data: Json[] }).data.map((record) => [record.campaign_id, record]));
      for (const { stored, what } of SENT) {
        for (const measure of MEASURES) assert.equal(byCampaign.get(`c-${stored}`)?.[measure], Number(stored), `${what}: ${measure} listed`);
      }
      for (const measure of MEASURES) assert.deepEqual(numbersIn(listed.body, measure).sort(), SENT.map(({ stored }) => stored).sort());
    });
  }

  test('an answer with nothing rounded is the records alone, as the hosted API answers', async () => {
    const client = await service.createClient();
    const response = await send(service.production, 'POST', '/v1/spend', client, `{"data":[${jsonWith(spendRecord({ date: '2024-05-02' }, 'plain'), every(MEASURES, '0.1'))}]}`);
    assert.deepEqual(Object.keys(okJson(response, 201)), ['data']);
  });
});

// ---------------------------------------------------------------------------------------------
// Where numbers are written

describe('every write that takes numbers', () => {
  test('is one of those above: no other request body has a number (the OpenAPI document)', async () => {
    const document = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json();
    const hasNumber = (schema: unknown): boolean => {
      if (typeof schema !== 'object' || schema === null) return false;
      const { type } = schema as { type?: unknown };
      if (type === 'number' || (Array.isArray(type) && type.includes('number'))) return true;
      return Object.values(schema).some((child) => hasNumber(child));
    };
    const withNumbers: string[] = [];
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (Object.values(operation.requestBody?.content ?? {}).some(({ schema }) => hasNumber(schema))) withNumbers.push(`${method.toUpperCase()} ${path}`);
      }
    }
    // Exchange rates are read by the same rule, to their own bounds and scale: test/exchange-rates.test.ts.
    assert.deepEqual(withNumbers.sort(), ['PATCH /v2/orders', 'POST /v1/exchange-rates', 'POST /v1/orders', 'POST /v1/spend', 'POST /v1/spend_hourly', 'POST /v2/orders']);
  });

  test("Segment events' numbers, which are not stored, are taken whatever their decimals", async () => {
    const client = await service.createClient();
    const numbers = Object.fromEntries(SENT.map(({ text }, n) => [String(n), text]));
    const event = {
      type: 'track',
      event: 'Order Completed',
      messageId: 'track-1',
      anonymousId: 'visitor-1',
      timestamp: '2024-05-01T10:00:00Z',
      properties: { order_id: 'o-1', revenue: '<0>', tax: '<1>', discount: '<2>', total: '<3>', products: [{ product_id: 'p', price: '<4>', quantity: 1 }] },
    };
    const answer = okJson(await send(service.production, 'POST', '/v1/events/segment', client, jsonWith({ batch: [event] }, numbers)), 200);
    assert.equal(answer.links, 1);
  });
});

// ---------------------------------------------------------------------------------------------
// What is still refused

describe('numbers that are still refused', () => {
  test('past the bounds as sent, not numbers, or not JSON: a 400 (422 on spend) naming the field where there is one', async () => {
    const client = await service.createClient();
    const order = (tax: string) => `[${JSON.stringify(minimalOrder('refused', { tax: '<tax>' })).replace('"<tax>"', tax)}]`;
    const record = (spend: string) => `{"data":[${jsonWith(spendRecord({ date: '2024-05-03' }, 'refused'), { spend, impressions: '1', clicks: '1' })}]}`;
    const cases: [string, string, string][] = [
      ['100000000000000.0000000000001', 'maximum', `Must be at most ${AMOUNT_BOUNDS.maximum}`],
      // A JSON parser reads it as Infinity, which the schema does not count as a number.
      ['1e400', 'type', 'Must be a number'],
      ['"16.990000000000002"', 'type', 'Must be a number'],
      ['"NaN"', 'type', 'Must be a number'],
    ];
    for (const [tax, type, msg] of cases) {
      const { errors } = assertErrorEnvelope(await send(service.production, 'POST', '/v2/orders', client, order(tax)), 400);
      assert.deepEqual(errors, [{ loc: 'body/0/tax', msg, type, order_id: 'refused' }], tax);
    }
    const spendCases: [string, string, string][] = [
      ['100000000000000.0000000000001', 'maximum', `Must be at most ${MEASURE_BOUNDS.maximum}`],
      ['-1e-16383', 'minimum', 'Must be at least 0'],
      ['"NaN"', 'type', 'Must be a number of at least 0, or empty for 0'],
    ];
    for (const [spend, type, msg] of spendCases) {
      const { errors } = assertErrorEnvelope(await send(service.production, 'POST', '/v1/spend', client, record(spend)), 422);
      assert.deepEqual(errors?.map(({ loc, msg, type }) => ({ loc, msg, type })), [{ loc: 'body/data/0/spend', msg, type }], spend);
    }
    // NaN is not JSON: no field can be named.
    const notJson = assertErrorEnvelope(await send(service.production, 'POST', '/v2/orders', client, order('NaN')), 400);
    assert.match(notJson.message, /^Request body is not valid JSON/);
    const [row] = await service.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM orders WHERE client_id = $1) + (SELECT count(*) FROM spend_daily WHERE client_id = $1) AS n',
      [client.client_id],
    );
    assert.equal(Number(row!.n), 0, 'nothing stored');
  });
});

// ---------------------------------------------------------------------------------------------
// Any double a client's encoder writes

/** Any double from 0 to the maximum, and often a price computed as a client computes one: a sum of two in cents. */
const anyDouble = fc.oneof(
  fc.double({ min: 0, max: 1e14, noNaN: true }),
  fc.tuple(fc.nat({ max: 1_000_000_000 }), fc.nat({ max: 1_000_000_000 })).map(([a, b]) => a / 100 + b / 100),
);

describe('any double within the bounds', () => {
  test('as JSON.stringify writes it, is taken by orders and spend, and reads back within half a unit of the 12th decimal place', async () => {
    const client = await service.createClient();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(anyDouble, { minLength: 1, maxLength: 6 }), async (values) => {
        const day = new Date(Date.UTC(2001, 0, 1) + run++ * 86_400_000).toISOString().slice(0, 10);
        const texts = values.map((value) => JSON.stringify(value));

        // Orders: each value as a product's quantity and price.
        const products = texts.map((_, n) => ({ id: `p${n}`, name: 'P', quantity: `<${n}>`, price: `<${n}>` }));
        const orderId = `run-${day}`;
        const order = { ...minimalOrder(orderId), time_of_purchase: `${day}T12:00:00Z`, products };
        const numbers = Object.fromEntries(texts.map((text, n) => [String(n), text]));
        const upsert = okJson<{ warnings: Json[] }>(await send(service.production, 'POST', '/v2/orders', client, `[${jsonWith(order, numbers)}]`), 200);
        const listed = await service.production.inject({ method: 'GET', url: `/v2/orders?start_date=${day}&end_date=${day}`, headers: client.headers });
        assert.equal(listed.statusCode, 200, listed.body);
        const readPrices = numbersIn(listed.body, 'price');
        assert.deepEqual(numbersIn(listed.body, 'quantity'), readPrices);

        // Spend: each value as a daily record's spend.
        const records = texts.map((text, n) => jsonWith({ ...spendRecord({ date: day }, `c${n}`), impressions: 0, clicks: 0 }, { spend: text }));
        const spend = okJson<{ warnings?: Json[] }>(await send(service.production, 'POST', '/v1/spend', client, `{"data":[${records.join(',')}]}`), 201);
        const spendList = await service.production.inject({ method: 'GET', url: `/v1/spend?platform_account_id=act_1&date=${day}`, headers: client.headers });
        assert.equal(spendList.statusCode, 200, spendList.body);
        // Listed by campaign: c0, c1, … (at most 6, so in the order sent).
        const readSpend = numbersIn(spendList.body, 'spend');

        // Read back as exact decimals: within half a unit of the 12th place, at most 12 places.
        const [check] = await service.db.query<{ near: boolean[]; changed: boolean[] }>(
          `SELECT array_agg(abs(r::numeric - s::numeric) <= 0.5e-12 AND scale(r::numeric) <= 12 ORDER BY n) AS near,
                  array_agg(r::numeric <> s::numeric ORDER BY n) AS changed
             FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(r, s, n)`,
          [[...readPrices, ...readSpend], [...texts, ...texts]],
        );
        assert.deepEqual(check!.near, [...texts, ...texts].map(() => true), `${texts.join(', ')} read back as ${[...readPrices, ...readSpend].join(', ')}`);

        // Warned where the value stored is not the value sent, and only there.
        const changed = check!.changed;
        const expectedOrderWarnings = texts.flatMap((_, n) =>
          changed[n] ? ['quantity', 'price'].map((field) => ({ order_id: orderId, ...rounding(`body/0/products/${n}/${field}`, readPrices[n]!) })) : [],
        );
        assert.deepEqual(upsert.warnings, expectedOrderWarnings);
        const expectedSpendWarnings = texts.flatMap((_, n) => (changed[texts.length + n] ? [rounding(`body/data/${n}/spend`, readSpend[n]!)] : []));
        assert.deepEqual(spend.warnings ?? [], expectedSpendWarnings);
      }),
      { numRuns: 60 },
    );
  });
});
