import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { MODELS } from '../src/attribution/models.js';
import { BREAKDOWN_KEYS, METRICS, isOrderMetric } from '../src/attribution/catalog.js';
import { DIMENSION_COLUMNS } from '../src/attribution/rows.js';
import { MAX_DAY_COMBINATIONS } from '../src/exports/plan.js';
import { ExportRequest, PERIOD_TYPES } from '../src/exports/schema.js';
import { AMOUNT_BOUNDS, OrderBatch } from '../src/orders/schema.js';
import { COUNTRY_CODES, CURRENCY_CODES } from '../src/reference-codes.js';
import { daily, hourly, type SpendCollection } from '../src/spend/collection.js';
import { KEY_FIELDS, MEASURE_BOUNDS, spendSchemas } from '../src/spend/schema.js';
import { assertErrorEnvelope, startService, type TestClient } from './helpers.js';

/*
 * Properties of the write endpoints over generated requests: a valid request is accepted and
 * read back as sent; the same request with one rule broken (of its schema, or one the handler
 * checks) is refused with a 4xx naming the place, and stores nothing; no request is ever
 * answered with a 5xx.
 */

const service = await startService();
after(() => service.close());

const RUNS = 100;
const check = <T>(arbitrary: fc.Arbitrary<T>, property: (value: T) => Promise<void>) =>
  fc.assert(fc.asyncProperty(arbitrary, property), { numRuns: RUNS });

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

// ---------------------------------------------------------------------------------------------
// Talking to the service

/** A number written as given, such as one a double cannot hold (100000000000000.001, -1e-400). */
class RawNumber {
  constructor(readonly text: string) {}
}

/** JSON text of `value`, with its RawNumbers written as they are. */
function jsonText(value: unknown): string {
  const mark = randomUUID();
  const json = JSON.stringify(value, (_key, item: unknown) => (item instanceof RawNumber ? `${mark}${item.text}${mark}` : item));
  return json.replaceAll(new RegExp(`"${mark}(.*?)${mark}"`, 'g'), '$1');
}

/** Every request of these properties goes through here: whatever is sent, never a 5xx. */
async function call(client: TestClient, method: 'GET' | 'POST', url: string, body?: unknown): Promise<LightMyRequestResponse> {
  const response = await service.production.inject({
    method,
    url,
    headers: { ...client.headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { payload: jsonText(body) }),
  });
  assert.ok(response.statusCode < 500, `${method} ${url} answered ${response.statusCode}: ${response.body}`);
  return response;
}

const withQuery = (path: string, query: Record<string, string>) => `${path}?${new URLSearchParams(query)}`;

/** Rows the client has in any table: 0 after a refused request of a new client. */
async function storedRows(client: TestClient): Promise<number> {
  const tables = ['orders', 'order_aliases', 'spend_hourly', 'spend_daily', 'ad_accounts', 'exports'];
  const [row] = await service.db.query<{ rows: number }>(
    `SELECT (${tables.map((table) => `(SELECT count(*) FROM ${table} WHERE client_id = $1)`).join(' + ')})::int AS rows`,
    [client.client_id],
  );
  return row!.rows;
}

/** Strings compared as PostgreSQL's COLLATE "C" compares them: by their UTF-8 bytes. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const byFields = (fields: readonly string[]) => (a: Json, b: Json) =>
  fields.reduce((order, field) => order || byBytes(String(a[field]), String(b[field])), 0);

/** The value as the service receives it: JSON has no -0, no undefined. */
const asSent = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const UTC_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
function withoutTimestamps({ created_at, updated_at, ...rest }: Json): Json {
  assert.match(String(created_at), UTC_TIMESTAMP);
  assert.match(String(updated_at), UTC_TIMESTAMP);
  return rest;
}

// ---------------------------------------------------------------------------------------------
// The schemas, read as the JSON Schema they are

/** The JSON Schema keywords (and our x- extensions) the request schemas use. */
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  default?: unknown;
  enum?: string[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  uniqueItems?: boolean;
  'x-unique-by'?: string[];
  'x-exclusive'?: [string, string][];
  'x-distinct'?: [string, string];
}
const schemaOf = (schema: object) => schema as Schema;

/** `value` with the defaults its schema gives to absent properties, as the validator fills them in. */
function withDefaults(schema: Schema, value: unknown): unknown {
  if (Array.isArray(value) && schema.items) return value.map((item) => withDefaults(schema.items!, item));
  if (!isObject(value) || !schema.properties) return value;
  return Object.fromEntries(
    Object.entries(schema.properties).flatMap(([key, property]): [string, unknown][] => {
      if (key in value) return [[key, withDefaults(property, value[key])]];
      return 'default' in property ? [[key, property.default]] : [];
    }),
  );
}

/** One rule broken: `value` is the request, `loc` where the error must point. */
interface Mutation {
  change: string;
  loc: string;
  value: unknown;
}

type Path = readonly (string | number)[];

/** `root` with the value at `path` replaced (or added); `below` locates the error under `path`. */
function mutationAt(root: unknown, path: Path, replacement: unknown, change: string, below = ''): Mutation {
  const value = path.length === 0 ? replacement : structuredClone(root);
  if (path.length > 0) {
    const parent = path.slice(0, -1).reduce((node, key) => (node as Record<string | number, unknown>)[key], value);
    (parent as Record<string | number, unknown>)[path.at(-1)!] = replacement;
  }
  const pointer = path.map((key) => `/${key}`).join('');
  return { change: `${pointer || 'the body'}: ${change}`, loc: `body${pointer}${below}`, value };
}

const BAD_FORMATS: Record<string, string> = {
  'date-time': '2024-03-08 09:00:00',
  'whole-hour': '2024-03-08T09:30:00Z',
  date: '2024-02-30',
  'date-or-date-time': '2024-03-08 09:00:00',
  email: 'jane.example.com',
  'ip-or-empty': '256.0.0.1',
};

/** A value of each JSON type, to send where another is expected. */
const VALUE_OF_TYPE: [string, unknown][] = [['boolean', true], ['number', 42], ['string', 'text'], ['array', []], ['object', {}]];

interface Change {
  change: string;
  /** The new value of the place. */
  replacement: unknown;
  /** Where the error is, below the place (a property added or removed). */
  below?: string;
}

/** Changes to `value` that its own schema forbids, at its own level. */
function changesHere(schema: Schema, value: unknown): Change[] {
  const types = [schema.type ?? []].flat();
  const changes: Change[] = [];
  const wrongType = VALUE_OF_TYPE.find(([type]) => types.length > 0 && !types.includes(type));
  if (wrongType) changes.push({ change: `a ${wrongType[0]}`, replacement: wrongType[1] });
  if (types.includes('string')) {
    if (schema.maxLength !== undefined) changes.push({ change: 'too long', replacement: 'x'.repeat(schema.maxLength + 1) });
    if (schema.minLength) changes.push({ change: 'too short', replacement: 'x'.repeat(schema.minLength - 1) });
    if (schema.enum) changes.push({ change: 'not a listed value', replacement: 'NOT-LISTED' });
    if (schema.pattern) changes.push({ change: 'not matching the pattern', replacement: '!!!' });
    if (schema.format) changes.push({ change: `not a ${schema.format}`, replacement: BAD_FORMATS[schema.format] ?? assert.fail(schema.format) });
    if (typeof value === 'string') {
      changes.push({ change: 'with a NUL', replacement: `${value}\u0000` }, { change: 'with half a surrogate pair', replacement: `${value}\ud800` });
    }
  }
  if (types.includes('number')) {
    if (schema.maximum !== undefined) changes.push({ change: 'above the maximum', replacement: schema.maximum * 10 });
    if (schema.minimum !== undefined) changes.push({ change: 'below the minimum', replacement: schema.minimum - 1 });
  }
  if (isObject(value)) {
    if (schema.additionalProperties === false) {
      changes.push({ change: 'an unknown property', replacement: { ...value, unknown_property: 1 }, below: '/unknown_property' });
    }
    for (const key of schema.required ?? []) {
      const { [key]: _dropped, ...rest } = value;
      changes.push({ change: `no ${key}`, replacement: rest, below: `/${key}` });
    }
    for (const [a, b] of schema['x-exclusive'] ?? []) {
      if (value[a] === undefined && value[b] === undefined) continue;
      changes.push({ change: `both ${a} and ${b}`, replacement: { ...value, [a]: value[a] ?? value[b], [b]: value[b] ?? value[a] }, below: `/${b}` });
    }
    const [a, b] = schema['x-distinct'] ?? [];
    if (a && b) changes.push({ change: `${b} equal to ${a}`, replacement: { ...value, [b]: value[a] }, below: `/${b}` });
  }
  if (Array.isArray(value)) {
    if (schema.minItems) changes.push({ change: 'too few items', replacement: value.slice(0, schema.minItems - 1) });
    if ((schema.uniqueItems || schema['x-unique-by']) && value.length > 0) {
      changes.push({ change: 'an item repeated', replacement: [...value, value[0]] });
    }
  }
  return changes;
}

/** Every way to break one rule of `schema` in `value`, at any depth, in `root` at `path`. */
function mutations(schema: Schema, value: unknown, root = value, path: Path = []): Mutation[] {
  const here = changesHere(schema, value).map(({ change, replacement, below }) => mutationAt(root, path, replacement, change, below));
  const children: [string | number, Schema | undefined, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, schema.items, item])
    : isObject(value)
      ? Object.entries(value).map(([key, item]) => [key, schema.properties?.[key], item])
      : [];
  return here.concat(children.flatMap(([key, child, item]) => (child ? mutations(child, item, root, [...path, key]) : [])));
}

/**
 * A valid request with one rule broken: half the time a rule of its schema (a required field
 * left out, a wrong type, a number out of range, a string too long or too short or off its
 * list, format or pattern, an unknown property, a repeated item, a NUL...), half the time
 * one of the `rules` the schema cannot hold.
 */
const invalid = <T>(schema: Schema, valid: fc.Arbitrary<T>, rules: (value: T) => Mutation[]): fc.Arbitrary<Mutation> =>
  fc.oneof(
    valid.chain((value) => fc.constantFrom(...mutations(schema, value))),
    valid.chain((value) => fc.constantFrom(...rules(value))),
  );

// ---------------------------------------------------------------------------------------------
// Strings and times

/**
 * One character: printable ASCII, SQL and JSON metacharacters, or any code point but U+0000
 * (which PostgreSQL cannot store, and the API refuses).
 */
const character = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
  fc.constantFrom("'", '"', '\\', '%', '_', '$', ';', '\n', '\u2028', '’', '😀'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((char) => char !== '\u0000'),
);
const text = ({ minLength = 0, maxLength = 10 } = {}) => fc.string({ unit: character, minLength, maxLength });
/** A string of at most `max` characters, often exactly `max` (up to four UTF-8 bytes each). */
const bounded = (max: number, minLength = 0) =>
  fc.oneof(text({ minLength, maxLength: Math.min(max, 10) }), text({ minLength: max, maxLength: max }));
const nonEmpty = text({ minLength: 1 });
const identifier = bounded(255, 1);
const currency = fc.constantFrom(...CURRENCY_CODES);

/**
 * Instants (ms since the epoch) from year 1 to `last`, multiples of `stepMs`; often one of a
 * few, so that values share them.
 */
const instant = (stepMs: number, last = '9999-12-30') =>
  fc.oneof(
    fc.constantFrom(Date.parse('2024-03-08T09:00:00Z'), Date.parse('2024-03-09T00:00:00Z')),
    fc
      .date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date(`${last}T00:00:00Z`), noInvalidDate: true })
      .map((date) => Math.floor(date.getTime() / stepMs) * stepMs),
  );

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * An ISO-8601 date-time of an instant of `at`, as clients write them: Z or an offset up to
 * ±15:59 (whole hours only for a `wholeHour`), with or without its colon, in either case, with
 * or without a fraction of a second. Fractions have at most 6 digits: a finer one is rounded to
 * the microsecond when stored, which can move it into the next day (orders.test.ts tests that).
 */
function dateTime({ at = instant(1000), wholeHour = false } = {}): fc.Arbitrary<string> {
  const hours = fc.integer({ min: -15, max: 15 }).map((h) => h * 60);
  return fc
    .record({
      ms: at,
      offsetMinutes: wholeHour ? fc.oneof(fc.constant(0), hours) : fc.oneof(fc.constant(0), hours, fc.integer({ min: -959, max: 959 })),
      utcAsZ: fc.boolean(),
      colon: fc.boolean(),
      lowerCase: fc.boolean(),
      fraction: wholeHour ? fc.constantFrom('', '.0', '.000000') : fc.constantFrom('', '.5', '.123', '.000001', '.999999'),
    })
    .map(({ ms, offsetMinutes, utcAsZ, colon, lowerCase, fraction }) => {
      const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 19);
      const offset = Math.abs(offsetMinutes);
      const sign = offsetMinutes < 0 ? '-' : '+';
      const zone = offsetMinutes === 0 && utcAsZ ? 'Z' : `${sign}${pad(Math.floor(offset / 60))}${colon ? ':' : ''}${pad(offset % 60)}`;
      const written = `${local}${fraction}${zone}`;
      return lowerCase ? written.toLowerCase() : written;
    });
}

/**
 * The instant of a date-time written by `dateTime`: in ms since the epoch less the fraction of a
 * second, and exactly in microseconds (past 2255 there are more than a double holds exactly).
 */
function readInstant(written: string): { ms: number; micros: bigint } {
  const [, local, fraction = '', zone] = /^(.{19})(?:\.(\d+))?(.*)$/.exec(written.toUpperCase())!;
  const [, sign, hours, minutes] = /^([+-])(\d{2}):?(\d{2})$/.exec(zone!) ?? ['', '+', '0', '0'];
  const ms = Date.parse(`${local}Z`) - (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes)) * 60_000;
  return { ms, micros: BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, '0')) };
}
const utcIso = (written: string) => new Date(readInstant(written).ms).toISOString();

/** Arrays whose items do not repeat these fields together, as the schemas' x-unique-by asks. */
const uniqueBy = <T extends Json>(item: fc.Arbitrary<T>, fields: readonly string[], constraints: { minLength?: number; maxLength: number }) =>
  fc.uniqueArray(item, { selector: (value) => JSON.stringify(fields.map((field) => value[field] ?? null)), ...constraints });

/** At most one of two fields that must not be sent together. */
const atMostOneOf = (a: string, aValue: fc.Arbitrary<string>, b: string, bValue: fc.Arbitrary<string>) =>
  fc.oneof(fc.constant({}), aValue.map((value) => ({ [a]: value })), bValue.map((value) => ({ [b]: value })));

// ---------------------------------------------------------------------------------------------
// Orders (specification 2.1 to 2.4)

const amount = fc.oneof(
  fc.integer({ min: -1_000_000, max: 100_000_000 }).map((cents) => cents / 100),
  fc
    .double({ min: AMOUNT_BOUNDS.minimum, max: AMOUNT_BOUNDS.maximum, noNaN: true })
    .map((value) => Number(value.toFixed(AMOUNT_BOUNDS.scale))),
  fc.constantFrom(0, 0.1, 12345678901234.56, AMOUNT_BOUNDS.minimum, AMOUNT_BOUNDS.maximum),
);
const hashed = fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), text());

const product = fc.record(
  { id: nonEmpty, name: nonEmpty, quantity: amount, price: amount, variant_id: nonEmpty, variant_name: nonEmpty },
  { requiredKeys: ['id', 'name', 'quantity', 'price'] },
);
const refund = fc.record(
  { product_id: nonEmpty, quantity: amount, refund_amount: amount, refund_cost: amount, refund_made_at: dateTime(), variant_id: nonEmpty },
  { requiredKeys: ['product_id', 'quantity', 'refund_amount', 'refund_cost', 'refund_made_at'] },
);
const address = fc.record(
  { address1: nonEmpty, address2: text(), city: nonEmpty, state: text(), zip: text(), country_code: fc.constantFrom(...COUNTRY_CODES) },
  { requiredKeys: ['zip', 'country_code'] },
);
/** Aliases of one order; one given twice is attached once. */
const aliases = fc
  .tuple(fc.array(fc.record({ type: identifier, id: identifier }), { maxLength: 3 }), fc.boolean())
  .map(([list, repeatFirst]) => (repeatFirst ? [...list, ...list.slice(0, 1)] : list));

const order = fc
  .tuple(
    fc.record(
      {
        order_id: identifier,
        customer_id: nonEmpty,
        time_of_purchase: dateTime(),
        customer_name: text(),
        customer_ip_address: fc.oneof(fc.ipV4(), fc.ipV6()),
        discount_codes: fc.uniqueArray(text(), { maxLength: 3 }),
        discount_amount: amount,
        order_tags: fc.uniqueArray(text(), { maxLength: 3 }),
        tax: amount,
        is_recurring_order: fc.boolean(),
        currency,
        purchase_total: amount,
        products: uniqueBy(product, ['id', 'variant_id'], { minLength: 1, maxLength: 3 }),
        refunds: uniqueBy(refund, ['product_id', 'variant_id'], { maxLength: 2 }),
        customer_shipping_address: address,
        shipping_cost: amount,
        alternate_order_ids: aliases,
      },
      { requiredKeys: ['order_id', 'customer_id', 'time_of_purchase', 'tax', 'currency', 'purchase_total', 'products', 'shipping_cost'] },
    ),
    atMostOneOf('customer_email', fc.oneof(fc.emailAddress(), fc.constant('müller@exämple.de')), 'hashed_customer_email', hashed),
    atMostOneOf('customer_phone_number', text(), 'hashed_customer_phone_number', hashed),
  )
  .map(([fields, email, phone]): Json => ({ ...fields, ...email, ...phone }))
  .filter((value) => value.order_id !== value.customer_id);

interface Alias {
  type: string;
  id: string;
}
const aliasKey = ({ type, id }: Alias) => JSON.stringify([type, id]);
const aliasesOf = (value: Json) => (value.alternate_order_ids ?? []) as Alias[];

/** 1 to 4 orders, in which no alias is given for two different orders. */
const orderBatch = uniqueBy(order, ['order_id'], { minLength: 1, maxLength: 4 }).filter((batch) => {
  const owners = new Map(batch.flatMap((value) => aliasesOf(value).map((alias) => [aliasKey(alias), value.order_id])));
  return batch.every((value) => aliasesOf(value).every((alias) => owners.get(aliasKey(alias)) === value.order_id));
});

/** An order with its aliases as a set: each once, in a fixed order. */
function withAliasSet(value: Json): Json {
  const distinct = new Map(aliasesOf(value).map((alias) => [aliasKey(alias), alias]));
  return { ...value, alternate_order_ids: [...distinct].sort(([a], [b]) => byBytes(a, b)).map(([, alias]) => alias) };
}

/** The batch, listed by the UTC days of its times of purchase: as sent, by time of purchase then order_id. */
async function readOrdersBack(client: TestClient, batch: Json[]) {
  const sent = asSent(batch).map((value) => ({ value, time: String(value.time_of_purchase) }));
  const days = sent.map(({ time }) => utcIso(time).slice(0, 10)).sort();
  const response = await call(client, 'GET', withQuery('/v2/orders', { start_date: days[0]!, end_date: days.at(-1)! }));
  assert.equal(response.statusCode, 200, response.body);
  const { data, total_count } = response.json() as { data: Json[]; total_count: number };
  assert.equal(total_count, batch.length);
  const expected = sent
    .map(({ value, time }) => ({ value, micros: readInstant(time).micros }))
    .sort((a, b) => (a.micros < b.micros ? -1 : a.micros > b.micros ? 1 : byBytes(String(a.value.order_id), String(b.value.order_id))))
    .map(({ value }) => withAliasSet(value));
  assert.deepEqual(data.map((value) => withAliasSet(withoutTimestamps(value))), expected);
}

const ABOVE_MAXIMUM = new RawNumber('100000000000000.000001');

/** Rules of a batch beyond its schema. */
function orderRules(batch: Json[]): Mutation[] {
  const last = batch.length - 1;
  const rules = [
    mutationAt(batch, [last, 'tax'], ABOVE_MAXIMUM, 'above the maximum by less than a double can tell'),
    mutationAt(batch, [0, 'products', 0, 'price'], ABOVE_MAXIMUM, 'above the maximum by less than a double can tell'),
  ];
  if (batch.length > 1) {
    const shared = { type: 'shared', id: 'alias' };
    const withShared = mutationAt(batch, [0, 'alternate_order_ids'], [...aliasesOf(batch[0]!), shared], '').value;
    const others = aliasesOf(batch[1]!);
    rules.push(mutationAt(withShared, [1, 'alternate_order_ids'], [...others, shared], 'an alias of order 0 given again', `/${others.length}`));
  }
  return rules;
}

// ---------------------------------------------------------------------------------------------
// Spend (specification 2.6; daily records are keyed by a date instead of hour_start_iso)

/** Spend, impressions and clicks: from 0 to the maximum, at most 12 decimals; "" and null mean 0. */
const measure = fc.oneof(
  fc.nat({ max: 100_000_000 }).map((cents) => cents / 100),
  fc.nat({ max: 1_000_000_000 }).map((n) => n * 100_000),
  fc.nat().map((n) => n / 1e12),
  fc.constantFrom(0, MEASURE_BOUNDS.maximum, '', null),
);

const periodOf: Record<SpendCollection['timeField'], fc.Arbitrary<string>> = {
  hour_start_iso: dateTime({ at: instant(3_600_000), wholeHour: true }),
  date: instant(86_400_000).map((at) => new Date(at).toISOString().slice(0, 10)),
};

const spendRecord = (collection: SpendCollection): fc.Arbitrary<Json> =>
  fc.record(
    {
      [collection.timeField]: periodOf[collection.timeField],
      platform_name: bounded(64),
      platform_account_id: fc.oneof(fc.constantFrom('act_1', ''), bounded(128)),
      campaign_id: bounded(140),
      campaign_name: text(),
      adset_id: bounded(140),
      adset_name: text(),
      ad_id: bounded(140),
      ad_name: text(),
      spend: measure,
      spend_currency: currency,
      impressions: measure,
      clicks: measure,
    },
    { requiredKeys: [collection.timeField, 'platform_name', 'campaign_id', 'campaign_name', 'spend', 'spend_currency'] },
  );

const upsertSchemas = new Map([hourly, daily].map((collection) => [collection, schemaOf(spendSchemas(collection).UpsertBody)]));

/** A record as stored: defaults filled in, empty measures 0, an hour shown in UTC. */
function storedRecord(collection: SpendCollection, record: Json): Json {
  const stored = withDefaults(upsertSchemas.get(collection)!, { data: [asSent(record)] }) as { data: [Json] };
  const { [collection.timeField]: period, spend, impressions, clicks, ...rest } = stored.data[0];
  const number = (value: unknown) => (value === null || value === '' ? 0 : value);
  return {
    ...rest,
    [collection.timeField]: collection.timeField === 'hour_start_iso' ? utcIso(String(period)).replace('.000Z', 'Z') : period,
    spend: number(spend),
    impressions: number(impressions),
    clicks: number(clicks),
  };
}

/** 1 to 4 records of distinct keys. */
const spendBody = (collection: SpendCollection) =>
  fc
    .uniqueArray(spendRecord(collection), {
      minLength: 1,
      maxLength: 4,
      selector: (record) => {
        const stored = storedRecord(collection, record);
        return JSON.stringify([collection.timeField, ...KEY_FIELDS].map((field) => stored[field]));
      },
    })
    .map((data) => ({ data }));

/** The upsert answers the records as stored; each account's list has them by period, platform, campaign, adset, ad. */
async function readSpendBack(collection: SpendCollection, client: TestClient, body: { data: Json[] }, response: LightMyRequestResponse) {
  const stored = body.data.map((record) => storedRecord(collection, record));
  assert.deepEqual((response.json() as { data: Json[] }).data.map(withoutTimestamps), stored);
  const periods = stored.map((record) => String(record[collection.timeField])).sort();
  const [startParam, endParam] = collection.rangeParams;
  for (const account of new Set(stored.map((record) => String(record.platform_account_id)))) {
    const query = { platform_account_id: account, [startParam]: periods[0]!, [endParam]: periods.at(-1)! };
    const list = await call(client, 'GET', withQuery(collection.prefix, query));
    assert.equal(list.statusCode, 200, list.body);
    const expected = stored
      .filter((record) => record.platform_account_id === account)
      .sort(byFields([collection.timeField, 'platform_name', 'campaign_id', 'adset_id', 'ad_id']));
    assert.deepEqual((list.json() as { data: Json[] }).data.map(withoutTimestamps), expected);
  }
}

/** Rules of spend records beyond their schema: exact bounds of the measures, one record per key. */
function spendRules(body: { data: Json[] }): Mutation[] {
  const { data } = body;
  return [
    mutationAt(body, ['data', data.length], data[0], 'a record whose key is in the request already'),
    mutationAt(body, ['data', data.length - 1, 'spend'], ABOVE_MAXIMUM, 'above the maximum by less than a double can tell'),
    mutationAt(body, ['data', 0, 'impressions'], new RawNumber('-1e-400'), 'below 0 by less than a double can tell'),
  ];
}

// ---------------------------------------------------------------------------------------------
// Exports (docs/api.md, "Data exports")

const exportSchema = schemaOf(ExportRequest);
/** The values a string property of an export request (or of its `options`) may take. */
const listed = (schema: Schema | undefined) => fc.constantFrom(...(schema?.enum ?? schema?.items?.enum ?? assert.fail('no enum')));
const exportProperty = (name: string) => exportSchema.properties![name];
const optionProperty = (name: string) => exportProperty('options')!.properties![name];
const attributionProperty = (name: string) => exportProperty('attribution_options')!.properties![name];

const MAX_FIXED_MS = 729 * 86_400_000; // within two years, whatever the leap days
/** A FIXED period: start before end, at most two years apart, each written with its own offset. */
const fixedPeriod = fc
  .tuple(instant(1000, '9997-12-31'), fc.integer({ min: 1, max: MAX_FIXED_MS / 1000 }))
  .chain(([start, seconds]) =>
    fc.record({ period_starting_at: dateTime({ at: fc.constant(start) }), period_ending_at: dateTime({ at: fc.constant(start + seconds * 1000) }) }),
  );
const relativePeriod = fc.constantFrom(...PERIOD_TYPES.filter((type) => type !== 'FIXED'));
const period = fc.oneof(
  fc.record({ period_type: relativePeriod }, { requiredKeys: [] }),
  fc.record({ period_type: fc.constant('FIXED'), period_options: fixedPeriod }),
  // period_options beside a relative period are ignored (and said so in warn).
  fc.record({ period_type: relativePeriod, period_options: fixedPeriod }, { requiredKeys: ['period_options'] }),
);

const defaultLabel = (id: string) => METRICS.find((metric) => metric.id === id)!.label;
/** Metrics of distinct ids and column headers; order metrics only where the options allow them. */
const metrics = (orderMetricsAllowed: boolean) =>
  uniqueBy(
    fc.record(
      {
        id: fc.constantFrom(...METRICS.map(({ id }) => id).filter((id) => orderMetricsAllowed || !isOrderMetric(id))),
        label: fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9_]+[a-zA-Z0-9]$/),
      },
      { requiredKeys: ['id'] },
    ),
    ['id'],
    { minLength: 1, maxLength: 4 },
  ).filter((list) => {
    const headers = [...DIMENSION_COLUMNS, ...list.map((metric) => metric.label ?? defaultLabel(metric.id))];
    return new Set(headers).size === headers.length;
  });

const breakdown = fc.record({ key: fc.constantFrom(...BREAKDOWN_KEYS), values: fc.array(identifier, { maxLength: 3 }) });

const exportRequest = fc
  .record(
    {
      level: listed(exportProperty('level')),
      time_granularity: listed(exportProperty('time_granularity')),
      breakdowns: uniqueBy(breakdown, ['key'], { maxLength: 2 }),
      options: fc.record(
        {
          export_aggregation: listed(optionProperty('export_aggregation')),
          remove_zero_spend: fc.boolean(),
          aggregate_data: fc.boolean(),
          include_ids: fc.boolean(),
          include_kind_and_platform: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      attribution_options: fc.record(
        {
          attribution_models: fc.uniqueArray(fc.constantFrom(...MODELS.map((model) => model.id)), { maxLength: 2 }),
          attribution_windows: fc.array(listed(attributionProperty('attribution_windows')), { maxLength: 3 }),
          accounting_modes: fc.array(listed(attributionProperty('accounting_modes')), { maxLength: 2 }),
        },
        { requiredKeys: [] },
      ),
      export_file_name: fc.stringMatching(/^[A-Za-z0-9_-]{3,100}$/),
    },
    { requiredKeys: [] },
  )
  .chain((fields) => {
    const orderMetricsAllowed = fields.options?.aggregate_data === true || fields.options?.export_aggregation === 'DATE';
    return fc.tuple(period, metrics(orderMetricsAllowed)).map(([periodFields, list]): Json => ({ ...fields, ...periodFields, metrics: list }));
  })
  .filter(withinDayCombinations);

/** Periods that may hold more days than a FIXED one (two years), with the most days they may hold. */
const LONGEST_PERIOD_DAYS: Record<string, number> = { LAST_3_YEARS: 3 * 366, LAST_5_YEARS: 5 * 366 };

/** Whether the period's days × attribution combinations (counted as if every metric were attributed) stay within the limit. */
function withinDayCombinations(request: Json): boolean {
  const days = LONGEST_PERIOD_DAYS[request.period_type as string] ?? 2 * 366;
  const options = (request.attribution_options ?? {}) as Record<string, unknown[] | undefined>;
  const lists = [options.attribution_models, options.attribution_windows, options.accounting_modes];
  const combinations = lists.reduce((product, list = []) => product * Math.max(new Set(list).size, 1), 1);
  return days * combinations <= MAX_DAY_COMBINATIONS;
}

/** The export can be polled, and keeps the request as sent, with the schema's defaults. */
async function readExportBack(client: TestClient, request: Json, response: LightMyRequestResponse) {
  const { id } = response.json() as { id: string };
  const result = await call(client, 'GET', `/v1/exports/data-export/result/${id}`);
  assert.equal(result.statusCode, 200, result.body);
  const { data_export_id, status } = result.json() as { data_export_id: string; status: string };
  assert.equal(data_export_id, id);
  assert.ok(['PENDING', 'SUCCESS', 'ERROR'].includes(status), status);
  const [stored] = await service.db.query<{ request: unknown }>('SELECT request FROM exports WHERE export_id = $1', [id]);
  assert.deepEqual(stored!.request, withDefaults(exportSchema, asSent(request)));
}

/** Rules of an export request beyond its schema. */
function exportRules(request: Json): Mutation[] {
  const list = request.metrics as { id: string; label?: string }[];
  const fixed = (period_starting_at: string, period_ending_at: string) => ({
    ...request,
    period_type: 'FIXED',
    period_options: { period_starting_at, period_ending_at },
  });
  const withoutRevenue = list.filter((metric) => metric.id !== 'revenue');
  const unaggregated = { ...request, options: { ...(request.options as Json), aggregate_data: false, export_aggregation: 'BREAKDOWN' } };
  return [
    mutationAt(request, [], fixed('2024-03-02T00:00:00Z', '2024-03-01T00:00:00Z'), 'a FIXED period ending before it starts', '/period_options'),
    mutationAt(request, [], fixed('2024-03-01T00:00:00Z', '2027-03-01T00:00:00Z'), 'a FIXED period of three years', '/period_options'),
    mutationAt({ ...unaggregated, metrics: withoutRevenue }, ['metrics', withoutRevenue.length], { id: 'revenue' }, 'an order metric, not aggregated', '/id'),
    mutationAt(request, ['metrics', 0, 'label'], 'campaign', 'the header of a dimension column'),
    mutationAt(request, ['attribution_options'], { attribution_models: ['last_click'] }, 'an attribution model', '/attribution_models/0'),
    mutationAt(request, ['bucket_name'], 'my-bucket', 'an external bucket'),
    mutationAt(
      request,
      [],
      {
        ...request,
        period_type: 'LAST_5_YEARS',
        metrics: [{ id: 'roas' }],
        attribution_options: { attribution_models: ['linear', 'first_touch'], attribution_windows: ['1', '7', '30'], accounting_modes: ['cash', 'accrual'] },
      },
      'five years of twelve attribution combinations',
      '/attribution_options',
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// The properties, for each write endpoint

interface Endpoint<T> {
  url: string;
  schema: Schema;
  valid: fc.Arbitrary<T>;
  /** Ways to break the rules the schema does not hold. */
  rules(value: T): Mutation[];
  accepted: number;
  refused: number;
  readBack(client: TestClient, value: T, response: LightMyRequestResponse): Promise<void>;
}

function describeEndpoint<T>({ url, schema, valid, rules, accepted, refused, readBack }: Endpoint<T>) {
  describe(`POST ${url}`, () => {
    test(`a valid request is a ${accepted} and reads back as sent`, () =>
      check(valid, async (value) => {
        const client = await service.createClient();
        const response = await call(client, 'POST', url, value);
        assert.equal(response.statusCode, accepted, response.body);
        await readBack(client, value, response);
      }));

    test(`a request with one rule broken is a ${refused} naming the place, and stores nothing`, () =>
      check(invalid(schema, valid, rules), async ({ change, loc, value }) => {
        const client = await service.createClient();
        const response = await call(client, 'POST', url, value);
        const { errors } = assertErrorEnvelope(response, refused);
        const named = errors?.some((error) => error.loc === loc || error.loc.startsWith(`${loc}/`));
        assert.ok(named, `${change}: expected an error at ${loc}, got ${response.body}`);
        assert.equal(await storedRows(client), 0);
      }));
  });
}

describeEndpoint({
  url: '/v2/orders',
  schema: schemaOf(OrderBatch),
  valid: orderBatch,
  rules: orderRules,
  accepted: 200,
  refused: 400,
  readBack: readOrdersBack,
});
for (const collection of [hourly, daily]) {
  describeEndpoint({
    url: collection.prefix,
    schema: upsertSchemas.get(collection)!,
    valid: spendBody(collection),
    rules: spendRules,
    accepted: 201,
    refused: 422,
    readBack: (client, body, response) => readSpendBack(collection, client, body, response),
  });
}
describeEndpoint({
  url: '/v1/exports/data-export',
  schema: exportSchema,
  valid: exportRequest,
  rules: exportRules,
  accepted: 201,
  refused: 422,
  readBack: readExportBack,
});
