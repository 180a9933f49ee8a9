import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { OrderBatch } from '../src/orders/schema.js';
import { daily, hourly, type SpendCollection } from '../src/spend/collection.js';
import { ADMIN_TOKEN, assertErrorEnvelope, parseCsv, startExportingService, type TestClient } from './helpers.js';

/*
 * Every SQL statement takes client text as a parameter, never pasted into it: text that would
 * end a string literal, comment out the rest, name a placeholder or match as a LIKE pattern is
 * stored and read back unchanged, matches only itself, and leaves every table in place.
 */

const service = await startExportingService({ maxAttempts: 1 });
after(() => service.close());

/** SQL and JSON metacharacters; no U+0000, which PostgreSQL cannot store (and the API refuses). */
const TEXTS = [
  "'; DROP TABLE orders; --",
  "' OR '1'='1",
  '" OR 1=1 --',
  "Robert'); DROP TABLE spend_hourly; --",
  "''",
  '\\',
  "\\'; SELECT 1; --",
  'C:\\new\\table\\',
  '$1',
  '$2::text || $1',
  '$$; DROP TABLE exports; $$',
  '$tag$ x $tag$',
  '%',
  '_',
  '100%_off',
  "E'\\x00'",
  '\\u0000',
  '‘single’ “double” ＇fullwidth＇ ʼmodifierʼ',
  '/* comment */ SELECT',
  '-- ',
  ':name ?param @p1 {0}',
  '{"a": 1} ->> \'a\' #>> \'{a}\'',
  'line\nbreak\r\ttab\u2028',
  '😀 ﬁ e\u0301',
];
/** An e-mail address with metacharacters, as its format allows. */
const EMAIL = 'o\'hara";--\\%_$1@ex\'ample.c"om';
const TABLES = ['clients', 'api_keys', 'orders', 'order_aliases', 'spend_hourly', 'spend_daily', 'ad_accounts', 'exports'];

type Json = Record<string, unknown>;

/** Every request of this file: whatever it holds, never a 5xx. */
async function send(client: TestClient, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object): Promise<LightMyRequestResponse> {
  const response = await service.production.inject({ method, url, headers: client.headers, ...(payload && { payload }) });
  assert.ok(response.statusCode < 500, `${method} ${url} answered ${response.statusCode}: ${response.body}`);
  return response;
}

const withQuery = (path: string, query: Record<string, string>) => `${path}?${new URLSearchParams(query)}`;

/** The JSON body of `response`, which must be a `status`. */
async function ok(response: Promise<LightMyRequestResponse>, status = 200): Promise<Json> {
  const answer = await response;
  assert.equal(answer.statusCode, status, answer.body);
  return answer.json() as Json;
}

/** A name as one step of a JSON Pointer (an error's `loc`). */
const pointerEscaped = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

/** Asserts that `response` is a `status` with an error at `loc`. */
function assertRefusedAt(response: LightMyRequestResponse, status: number, loc: string) {
  const { errors } = assertErrorEnvelope(response, status);
  assert.ok(errors?.some((error) => error.loc === loc), `expected an error at ${loc}: ${response.body}`);
}

/** Sorted by `field` as PostgreSQL's COLLATE "C" sorts: by UTF-8 bytes. */
const sortedBy = (field: string) => (items: Json[]) =>
  [...items].sort((a, b) => Buffer.compare(Buffer.from(String(a[field])), Buffer.from(String(b[field]))));

// ---------------------------------------------------------------------------------------------
// Orders and aliases

/** An order whose every free-text field, at every level, holds `text`. */
function orderOf(text: string, index: number): Json {
  return {
    order_id: text,
    customer_id: `${text} (customer)`,
    time_of_purchase: '2024-03-08T09:00:00Z',
    // Each of the two exclusive pairs, one way or the other.
    ...(index % 2 === 0
      ? { customer_email: EMAIL, hashed_customer_phone_number: text }
      : { hashed_customer_email: text, customer_phone_number: text }),
    customer_name: text,
    customer_ip_address: '2001:db8::1',
    discount_codes: [text, `${text} (2)`],
    discount_amount: 0,
    order_tags: [text],
    tax: 0,
    is_recurring_order: false,
    currency: 'USD',
    purchase_total: 1,
    products: [{ id: text, name: text, quantity: 1, price: 1, variant_id: text, variant_name: text }],
    refunds: [{ product_id: text, variant_id: text, quantity: 1, refund_amount: 1, refund_cost: 0, refund_made_at: '2024-03-09T00:00:00Z' }],
    customer_shipping_address: { address1: text, address2: text, city: text, state: text, zip: text, country_code: 'USA' },
    shipping_cost: 0,
    alternate_order_ids: [{ type: text, id: text }],
  };
}

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  format?: string;
}

/** Paths of a schema's free-text strings (no list, no format); array items as `*`. */
function textPaths(schema: Schema, path = ''): string[] {
  if (schema.type === 'string') return schema.enum || schema.format ? [] : [path];
  if (schema.items) return textPaths(schema.items, `${path}/*`);
  return Object.entries(schema.properties ?? {}).flatMap(([key, property]) => textPaths(property, `${path}/${key}`));
}

/** Paths of `value` holding one of TEXTS, in `textPaths` form. */
function pathsWithText(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return TEXTS.some((text) => value.includes(text)) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((item) => pathsWithText(item, `${path}/*`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => pathsWithText(item, `${path}/${key}`));
}

const orders = TEXTS.map(orderOf);
const byOrderId = sortedBy('order_id');
/** Orders with their aliases in one order, as the API promises no order of them. */
const withAliasSets = (list: Json[]) =>
  list.map((order) => ({ ...order, alternate_order_ids: sortedBy('type')(order.alternate_order_ids as Json[]) }));

async function storedOrders(client: TestClient): Promise<Json[]> {
  const page = await ok(send(client, 'GET', withQuery('/v2/orders', { start_date: '2024-03-08', end_date: '2024-03-08' })));
  assert.equal(page.total_count, orders.length);
  return byOrderId((page.data as Json[]).map(({ created_at: _c, updated_at: _u, ...order }) => order));
}

describe('orders', () => {
  test('the orders sent fill every free-text field of the order schema', () => {
    const filled = new Set(pathsWithText(orders));
    assert.deepEqual(textPaths(OrderBatch as Schema).filter((path) => !filled.has(path)), []);
  });

  test('are stored and read back unchanged, twice, and their aliases too', async () => {
    const client = await service.createClient();
    assert.equal((await ok(send(client, 'POST', '/v2/orders', orders))).inserted, orders.length);
    assert.deepEqual(await storedOrders(client), byOrderId(orders));

    const added = TEXTS.map((text) => ({ type: `custom:${text}`, id: text }));
    const aliases = added.map((alias, index) => ({ order_id: TEXTS[index], ...alias }));
    assert.equal((await ok(send(client, 'POST', '/v2/orders/aliases', { aliases }))).added, TEXTS.length);
    const expected = withAliasSets(
      byOrderId(orders.map((order, index) => ({ ...order, alternate_order_ids: [...(order.alternate_order_ids as Json[]), added[index]!] }))),
    );
    assert.deepEqual(withAliasSets(await storedOrders(client)), expected);

    // The same batch again replaces each order with itself, and keeps its aliases.
    const again = await ok(send(client, 'POST', '/v2/orders', orders));
    assert.deepEqual([again.inserted, again.updated], [0, orders.length]);
    assert.deepEqual(withAliasSets(await storedOrders(client)), expected);
  });

  test('an alias of an unknown order is a 404 that names it unchanged', async () => {
    const client = await service.createClient();
    const unknown = TEXTS.map((text) => `${text} (unknown)`);
    const aliases = unknown.map((order_id) => ({ order_id, type: 't', id: order_id }));
    const response = await send(client, 'POST', '/v2/orders/aliases', { aliases });
    const { errors } = assertErrorEnvelope(response, 404);
    assert.deepEqual(errors?.map((error) => error.order_id), unknown);
  });

  test('list parameters holding SQL are a 400 naming them', async () => {
    const client = await service.createClient();
    const valid = { start_date: '2024-03-08', end_date: '2024-03-08' };
    for (const text of TEXTS) {
      for (const name of ['start_date', 'end_date', 'page', 'page_size']) {
        assertRefusedAt(await send(client, 'GET', withQuery('/v2/orders', { ...valid, [name]: text })), 400, `query/${name}`);
      }
      assertRefusedAt(await send(client, 'GET', withQuery('/v2/orders', { ...valid, [text]: '1' })), 400, `query/${pointerEscaped(text)}`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Spend

const DAY = '2024-03-08';
const periodOf = (collection: SpendCollection) => (collection === hourly ? `${DAY}T09:00:00Z` : DAY);

const SPEND_TEXT_FIELDS = ['platform_name', 'platform_account_id', 'campaign_id', 'campaign_name', 'adset_id', 'adset_name', 'ad_id', 'ad_name'];

/** A record whose every id and name is `text`. */
function recordOf(collection: SpendCollection, text: string): Json {
  return {
    [collection.timeField]: periodOf(collection),
    ...Object.fromEntries(SPEND_TEXT_FIELDS.map((field) => [field, text])),
    spend: 1.5,
    spend_currency: 'USD',
    impressions: 10,
    clicks: 1,
  };
}

const withoutTimestamps = (records: unknown) => (records as Json[]).map(({ created_at: _c, updated_at: _u, ...record }) => record);

async function postSpend(client: TestClient, collection: SpendCollection) {
  const records = TEXTS.map((text) => recordOf(collection, text));
  assert.deepEqual(withoutTimestamps((await ok(send(client, 'POST', collection.prefix, { data: records }), 201)).data), records);
  return records;
}

for (const collection of [hourly, daily]) {
  describe(`spend ${collection.prefix}`, () => {
    test('records are stored, filtered and deleted by their exact ids, and read back unchanged', async () => {
      const client = await service.createClient();
      const records = await postSpend(client, collection);
      const listed = async (text: string) => {
        const query = { platform_account_id: text, date: DAY, campaign_id: text, adset_id: text, ad_id: text };
        return withoutTimestamps((await ok(send(client, 'GET', withQuery(collection.prefix, query)))).data);
      };
      // Each filter matches its own record only: '%' and '_' are no wildcards.
      for (const [index, text] of TEXTS.entries()) assert.deepEqual(await listed(text), [records[index]]);

      for (const [index, text] of TEXTS.entries()) {
        const match = { [collection.timeField]: periodOf(collection), platform_account_id: text, campaign_id: text, adset_id: text, ad_id: text };
        const deleted = await ok(send(client, 'DELETE', collection.prefix, { data: match }));
        assert.deepEqual(withoutTimestamps(deleted.data), [records[index]]);
        assert.deepEqual(await listed(text), []);
      }
    });

    test('list parameters holding SQL are a 422 naming them, or match nothing', async () => {
      const client = await service.createClient();
      await postSpend(client, collection);
      const [start, end] = collection.rangeParams;
      const range = { [start]: periodOf(collection), [end]: periodOf(collection) };
      for (const text of TEXTS) {
        for (const [name, query] of [
          ['date', { date: text }],
          [start, { ...range, [start]: text }],
          [end, { ...range, [end]: text }],
          ['page', { date: DAY, page: text }],
          ['page_size', { date: DAY, page_size: text }],
          [pointerEscaped(text), { date: DAY, [text]: '1' }],
        ] as const) {
          assertRefusedAt(await send(client, 'GET', withQuery(collection.prefix, { platform_account_id: 'act_1', ...query })), 422, `query/${name}`);
        }
        // Someone else's text as a filter of this account's records: nothing.
        const other = `${text}x`;
        const page = await ok(send(client, 'GET', withQuery(collection.prefix, { platform_account_id: text, date: DAY, campaign_id: other })));
        assert.deepEqual(page.data, []);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Exports, breakdowns, clients

async function finishedExport(client: TestClient, id: string): Promise<Json> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const result = await ok(send(client, 'GET', `/v1/exports/data-export/result/${id}`));
    if (result.status !== 'PENDING') return result;
  }
  assert.fail('the export stayed PENDING');
}

describe('exports', () => {
  test('breakdown values and ad names holding SQL are listed, filtered and exported unchanged', async () => {
    const client = await service.createClient();
    await postSpend(client, hourly);
    const catalog = await ok(send(client, 'GET', '/v1/exports/breakdowns'));
    for (const { values } of catalog.breakdowns as { values: string[] }[]) assert.deepEqual([...values].sort(), [...TEXTS].sort());

    const created = await ok(
      send(client, 'POST', '/v1/exports/data-export', {
        level: 'ad',
        time_granularity: 'DAILY',
        period_type: 'FIXED',
        period_options: { period_starting_at: `${DAY}T00:00:00Z`, period_ending_at: `${DAY}T23:59:59Z` },
        // Cells as stored: `-- ` would otherwise be written as text for spreadsheets (export-safety.test.ts).
        options: { include_ids: true, escape_formulas: false },
        breakdowns: [
          { key: 'platform', values: TEXTS },
          { key: 'account', values: [...TEXTS, "' OR ''='"] },
        ],
        metrics: [{ id: 'spend' }],
      }),
      201,
    );
    const result = await finishedExport(client, String(created.id));
    assert.equal(result.status, 'SUCCESS', JSON.stringify(result.warn));
    const links = result.result as string[];
    assert.equal(links.length, 1);
    const link = new URL(links[0]!);
    const file = await service.production.inject({ method: 'GET', url: link.pathname + link.search });
    assert.equal(file.statusCode, 200, file.body);
    const [header, ...rows] = parseCsv(file.body);
    const columns = ['platform', 'account', 'campaign', 'campaign_id', 'adset', 'adset_id', 'ad', 'ad_id'];
    const cells = rows.map((row) => columns.map((column) => row[header!.indexOf(column)]));
    assert.deepEqual(cells.sort(), TEXTS.map((text) => columns.map(() => text)).sort());
  });

  test('an export id holding SQL is refused', async () => {
    const client = await service.createClient();
    for (const text of TEXTS) {
      const response = await send(client, 'GET', `/v1/exports/data-export/result/${encodeURIComponent(text)}`);
      assertRefusedAt(response, 422, 'path/export_id');
    }
  });
});

describe('clients', () => {
  test('a client name holding SQL is kept unchanged; such a time zone is refused', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const text of TEXTS) {
      const client = await service.createClient(text);
      const url = `/admin/v1/clients/${client.client_id}`;
      const shown = await service.production.inject({ method: 'GET', url, headers: admin });
      assert.equal(shown.statusCode, 200, shown.body);
      assert.equal(shown.json().name, text);
      const patched = await service.production.inject({ method: 'PATCH', url, headers: admin, payload: { time_zone: text } });
      assertRefusedAt(patched, 400, 'body/time_zone');
    }
  });
});

test('every table is still there, and a second read answers the same', async () => {
  for (const table of TABLES) {
    const [row] = await service.db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [table]);
    assert.equal(row!.found, table);
  }
  const client = await service.createClient();
  await send(client, 'POST', '/v2/orders', orders);
  assert.deepEqual(await storedOrders(client), await storedOrders(client));
});
