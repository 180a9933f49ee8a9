import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorEnvelope, startService, type TestApp, type TestClient } from './helpers.js';

const service = await startService();
after(() => service.close());

type Json = Record<string, unknown>;
type Query = Record<string, string | number>;
type Caller = Pick<TestClient, 'headers'>;

interface Page {
  data: Json[];
  page: number;
  page_size: number;
  total_pages: number;
  total_count: number;
}

/** What one spend collection looks like from outside; the tests below run for each. */
interface Collection {
  path: '/v1/spend_hourly' | '/v1/spend';
  table: 'spend_hourly' | 'spend_daily';
  time: 'hour_start_iso' | 'date';
  /** The list's inclusive range parameters: start, end. */
  range: readonly [string, string];
  /** The n-th period from 2024-03-08T09:00Z (hourly) or 2024-03-08 (daily), as the API shows it. */
  period(n: number): string;
  /** period(0) written another way the API takes as the same period. */
  alias: string;
  /** A range holding every period the tests use. */
  span: readonly [string, string];
  /** With `date=2024-03-08`: periods just inside that UTC day, in order, and just outside it. */
  day: { inside: string[]; outside: string[] };
  /** Values the time field of a record must not take. */
  badTimes: string[];
  /** Values a range parameter must not take. */
  badBounds: string[];
  /** A well-formed time the database cannot hold. */
  unstorable: string;
}

const hourly: Collection = {
  path: '/v1/spend_hourly',
  table: 'spend_hourly',
  time: 'hour_start_iso',
  range: ['hour_start_iso_begin', 'hour_start_iso_end'],
  period: (n) => new Date(Date.UTC(2024, 2, 8, 9 + n)).toISOString().replace('.000Z', 'Z'),
  alias: '2024-03-08T01:00:00-08:00',
  span: ['1970-01-01T00:00:00Z', '2099-12-31T23:00:00Z'],
  day: {
    inside: ['2024-03-08T00:00:00Z', '2024-03-08T23:00:00Z'],
    outside: ['2024-03-07T23:00:00Z', '2024-03-09T00:00:00Z'],
  },
  badTimes: ['2024-03-08T09:00:00', '2024-03-08', '2024-03-08 09:00:00Z', '2024-02-30T09:00:00Z', '2024-03-08T24:00:00Z', 'today', ''],
  badBounds: ['2024-03-08', '2024-03-08T09:00:00', '2024-02-30T09:00:00Z', 'now'],
  unstorable: '2024-03-08T09:00:00+20:00',
};

const daily: Collection = {
  path: '/v1/spend',
  table: 'spend_daily',
  time: 'date',
  range: ['date_start', 'date_end'],
  period: (n) => new Date(Date.UTC(2024, 2, 8 + n)).toISOString().slice(0, 10),
  alias: '2024-03-08',
  span: ['1970-01-01', '2099-12-31'],
  day: { inside: ['2024-03-08'], outside: ['2024-03-07', '2024-03-09'] },
  badTimes: ['2024-02-30', '2024-03-08T00:00:00Z', '2024-3-8', '20240308', '08/03/2024', ''],
  badBounds: ['2024-03-08T00:00:00Z', '2024-02-30', '2024-3-8', 'today'],
  unstorable: '0000-01-01',
};

const COLLECTIONS = [hourly, daily];

/** The fields of a stored record (section 2.6), less the time field. */
const FIELDS = [
  'platform_account_id', 'platform_name', 'campaign_id', 'campaign_name', 'adset_id', 'adset_name',
  'ad_id', 'ad_name', 'spend', 'spend_currency', 'impressions', 'clicks', 'created_at', 'updated_at',
];
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MEASURE_MESSAGE = 'Must be a number of at least 0, or empty for 0';
const CURRENCY_MESSAGE = 'Currency does not match any known currencies';
/** The public credentials of the UAT API. */
const TEST_CREDENTIALS: Caller = { headers: { authorization: 'None', 'data-client-id': 'test' } };

// ---------------------------------------------------------------------------------------------
// Records

/** A valid record with only the required fields, at period(0); `overrides` adds or replaces fields. */
function record(c: Collection, overrides: Json = {}): Json {
  return {
    [c.time]: c.period(0),
    platform_name: 'meta',
    campaign_id: 'c1',
    campaign_name: 'Campaign 1',
    spend: 12.5,
    spend_currency: 'USD',
    ...overrides,
  };
}

/** A record as the API stores it (less its timestamps): the optional fields at their defaults. */
function withDefaults(input: Json): Json {
  return { platform_account_id: '', adset_id: '', adset_name: '', ad_id: '', ad_name: '', impressions: 0, clicks: 0, ...input };
}

function omit(value: Json, ...fields: string[]): Json {
  return Object.fromEntries(Object.entries(value).filter(([field]) => !fields.includes(field)));
}

/** A list answer less its records. */
const paging = ({ data: _data, ...rest }: Page) => rest;

/** A stored record less created_at and updated_at. */
const content = (stored: Json) => omit(stored, 'created_at', 'updated_at');

/** Records `0..count-1`, one campaign each. */
const campaigns = (c: Collection, count: number) => Array.from({ length: count }, (_, i) => record(c, { campaign_id: `c${i}` }));

const between = (c: Collection, from: string, to: string): Query => ({ [c.range[0]]: from, [c.range[1]]: to });

// ---------------------------------------------------------------------------------------------
// Requests

/** A request; a string payload is sent as it is, as JSON. */
function call(app: TestApp, method: 'GET' | 'POST' | 'DELETE', url: string, caller: Caller, payload?: object | string) {
  const headers = typeof payload === 'string' ? { ...caller.headers, 'content-type': 'application/json' } : caller.headers;
  return app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
}

const postBody = (c: Collection, caller: Caller, body: object | string, app = service.production) => call(app, 'POST', c.path, caller, body);
const post = (c: Collection, caller: Caller, records: unknown[], app = service.production) => postBody(c, caller, { data: records }, app);
const getList = (c: Collection, caller: Caller, query: Query, app = service.production) =>
  call(app, 'GET', `${c.path}?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`, caller);
const deleteBody = (c: Collection, caller: Caller, body: object | string, app = service.production) => call(app, 'DELETE', c.path, caller, body);
const del = (c: Collection, caller: Caller, match: Json, app = service.production) => deleteBody(c, caller, { data: match }, app);

function okJson<T>(response: LightMyRequestResponse, status: number): T {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  return response.json() as T;
}

/** Upserts `records`, expecting a 201; the stored records it answers. */
async function upsert(c: Collection, caller: Caller, records: Json[], app = service.production): Promise<Json[]> {
  const body = okJson<{ data: Json[] }>(await post(c, caller, records, app), 201);
  assert.deepEqual(Object.keys(body), ['data']);
  return body.data;
}

async function list(c: Collection, caller: Caller, query: Query, app = service.production): Promise<Page> {
  const body = okJson<Page>(await getList(c, caller, query, app), 200);
  assert.deepEqual(Object.keys(body).sort(), ['data', 'page', 'page_size', 'total_count', 'total_pages']);
  return body;
}

/** Every record of one account, over the whole span, in one page. */
async function stored(c: Collection, caller: Caller, account = '', app = service.production): Promise<Json[]> {
  const page = await list(c, caller, { platform_account_id: account, ...between(c, ...c.span) }, app);
  assert.equal(page.data.length, page.total_count);
  return page.data;
}

/** Deletes what matches, expecting a 200; the deleted records. */
async function deleted(c: Collection, caller: Caller, match: Json, app = service.production): Promise<Json[]> {
  const body = okJson<{ data: Json[] }>(await del(c, caller, match, app), 200);
  assert.deepEqual(Object.keys(body), ['data']);
  return body.data;
}

/** The error items of a 422 answered with the API's envelope. */
function rejection(response: LightMyRequestResponse) {
  const { errors } = assertErrorEnvelope(response, 422);
  assert.ok(Array.isArray(errors) && errors.length > 0, `a 422 names its problems: ${response.body}`);
  return errors.map(({ loc, msg, type }) => ({ loc, msg, type }));
}

/** Asserts a 422 whose only problem is `expected` (its msg checked when given). */
function assertOnlyError(response: LightMyRequestResponse, expected: { loc: string; type: string; msg?: string | RegExp }) {
  const errors = rejection(response);
  assert.equal(errors.length, 1, response.body);
  const [actual] = errors as [{ loc: string; msg: string; type: string }];
  assert.deepEqual({ loc: actual.loc, type: actual.type }, { loc: expected.loc, type: expected.type }, response.body);
  if (typeof expected.msg === 'string') assert.equal(actual.msg, expected.msg);
  else if (expected.msg) assert.match(actual.msg, expected.msg);
}

/** Row counts of both spend tables, every client and environment. */
async function rowCounts() {
  const [row] = await service.db.query<{ hourly: number; daily: number }>(
    'SELECT (SELECT count(*)::int FROM spend_hourly) AS hourly, (SELECT count(*)::int FROM spend_daily) AS daily',
  );
  return row!;
}

/**
 * Moves the timestamps of a client's records one day back, as if they were written yesterday.
 * Through UTC, so that every function is immutable: Citus refuses a stable one (timestamptz minus
 * interval) applied to a column in an UPDATE.
 */
async function backdate(c: Collection, client: TestClient) {
  const dayBefore = (column: string) => `${column} = (${column} AT TIME ZONE 'UTC' - interval '1 day') AT TIME ZONE 'UTC'`;
  await service.db.query(
    `UPDATE ${c.table} SET ${dayBefore('created_at')}, ${dayBefore('updated_at')} WHERE client_id = $1`,
    [client.client_id],
  );
}

/** The number texts of `field` in a JSON body, exactly as written. */
const numbersIn = (body: string, field: string) => [...body.matchAll(new RegExp(`"${field}"\\s*:\\s*([-+.\\deE]+)`, 'g'))].map((match) => match[1]);

// ---------------------------------------------------------------------------------------------

for (const c of COLLECTIONS) {
  const [start, end] = c.range;

  describe(`${c.path} upsert`, () => {
    test('answers 201 with the stored records in request order, defaults filled in', async () => {
      const client = await service.createClient();
      const full = record(c, {
        [c.time]: c.period(1),
        platform_account_id: 'acc-1',
        platform_name: 'google',
        campaign_id: 'c9',
        campaign_name: 'Campaign 9',
        adset_id: 'as1',
        adset_name: 'Adset 1',
        ad_id: 'ad1',
        ad_name: 'Ad 1',
        spend: 3.25,
        spend_currency: 'EUR',
        impressions: 1000,
        clicks: 17,
      });
      const minimal = record(c);
      const response = await post(c, client, [full, minimal]);
      const { data } = okJson<{ data: Json[] }>(response, 201);

      assert.deepEqual(data.map(content), [full, withDefaults(minimal)]);
      for (const item of data) {
        assert.deepEqual(Object.keys(item).sort(), [c.time, ...FIELDS].sort());
        assert.match(String(item.created_at), TIMESTAMP);
        assert.equal(item.updated_at, item.created_at, 'a first write is created and updated at once');
      }
      assert.deepEqual(await stored(c, client, 'acc-1'), [data[0]]);
      assert.deepEqual(await stored(c, client), [data[1]]);
    });

    test('an empty spend, impressions or clicks ("" or null) is 0', async () => {
      const client = await service.createClient();
      const inputs = [
        record(c, { campaign_id: 'a', spend: '', impressions: null, clicks: '' }),
        record(c, { campaign_id: 'b', spend: null, impressions: '', clicks: null }),
        record(c, { campaign_id: 'c', spend: 0, impressions: 0, clicks: 0 }),
      ];
      const data = await upsert(c, client, inputs);
      assert.deepEqual(
        data.map(content),
        inputs.map((input) => withDefaults({ ...input, spend: 0, impressions: 0, clicks: 0 })),
      );
      assert.deepEqual(await stored(c, client), data);
    });

    test('spend, impressions and clicks below 0 or not numbers are 422, and the valid record before is not stored', async () => {
      const client = await service.createClient();
      const bad: [unknown, string, string?][] = [
        [-1, 'minimum', 'Must be at least 0'],
        [-0.01, 'minimum', 'Must be at least 0'],
        ['abc', 'type', MEASURE_MESSAGE],
        ['5', 'type', MEASURE_MESSAGE],
        [' ', 'type', MEASURE_MESSAGE],
        [true, 'type', MEASURE_MESSAGE],
        [false, 'type', MEASURE_MESSAGE],
        [[], 'type', MEASURE_MESSAGE],
        [{}, 'type', MEASURE_MESSAGE],
      ];
      for (const field of ['spend', 'impressions', 'clicks']) {
        for (const [value, type, msg] of bad) {
          const response = await post(c, client, [record(c), record(c, { campaign_id: 'c2', [field]: value })]);
          assertOnlyError(response, { loc: `body/data/1/${field}`, type, msg });
        }
      }
      assert.deepEqual(await stored(c, client), []);
    });

    test('re-sending a key overwrites names, spend, currency, impressions and clicks; created_at stays', async () => {
      const client = await service.createClient();
      const key = { platform_account_id: 'acc', adset_id: 'as1', ad_id: 'ad1' };
      const [first] = await upsert(c, client, [
        record(c, { ...key, campaign_name: 'Old', adset_name: 'Old adset', ad_name: 'Old ad', spend: 10, impressions: 100, clicks: 10 }),
      ]);
      const changed = { campaign_name: 'New', adset_name: 'New adset', ad_name: 'New ad', spend: 20.25, spend_currency: 'EUR', impressions: 200, clicks: 20 };
      // The same period written another way (for hourly: another offset) is the same key.
      const [second] = await upsert(c, client, [record(c, { ...key, ...changed, [c.time]: c.alias })]);
      assert.deepEqual(content(second!), record(c, { ...key, ...changed }));
      assert.equal(second!.created_at, first!.created_at);
      assert.ok(String(second!.updated_at) >= String(first!.updated_at), 'updated_at moves forward');
      assert.deepEqual(await stored(c, client, 'acc'), [second]);

      // Once the record is a day old, a re-send shows created_at kept and updated_at now.
      await backdate(c, client);
      const [aged] = await stored(c, client, 'acc');
      assert.ok(String(aged!.created_at) < String(second!.created_at));
      // A re-send is the whole record: what it leaves out takes its default again.
      const [third] = await upsert(c, client, [record(c, key)]);
      assert.deepEqual(content(third!), withDefaults(record(c, key)));
      assert.equal(third!.created_at, aged!.created_at);
      assert.ok(String(third!.updated_at) > String(aged!.updated_at), 'updated_at is the time of this write');
      assert.deepEqual(await stored(c, client, 'acc'), [third]);
    });

    test('a record differing in any key field is a separate record', async () => {
      const client = await service.createClient();
      const base = record(c, { platform_account_id: 'acc', adset_id: 'as1', ad_id: 'ad1', spend: 1 });
      const [original] = await upsert(c, client, [base]);
      const variants: Json[] = [
        { platform_name: 'google' },
        { platform_account_id: 'acc-2' },
        { campaign_id: 'c2' },
        { campaign_id: 'C1' },
        { adset_id: 'as2' },
        { adset_id: '' },
        { ad_id: 'ad2' },
        { [c.time]: c.period(1) },
      ];
      const added = await upsert(c, client, variants.map((change, i) => ({ ...base, ...change, spend: i + 2 })));
      for (const item of added) assert.equal(item.created_at, item.updated_at, `${JSON.stringify(item)} is new`);

      const all = [...(await stored(c, client, 'acc')), ...(await stored(c, client, 'acc-2'))];
      assert.deepEqual(all.map((item) => item.spend).sort((a, b) => Number(a) - Number(b)), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.deepEqual(all.find((item) => item.spend === 1), original, 'the first record is untouched');
    });

    test('amounts keep their exact decimals', async () => {
      const client = await service.createClient();
      const amounts = ['12345678901234.56', '0.1', '0.2', '99999999999999.123456789012'];
      // Written into the JSON text as they are: a JavaScript number could not hold the last one.
      const body = JSON.stringify({ data: amounts.map((_, i) => record(c, { campaign_id: `c${i}`, spend: `<${i}>` })) })
        .replace(/"<(\d)>"/g, (_, i: string) => amounts[Number(i)]!);
      const response = await postBody(c, client, body);
      assert.equal(response.statusCode, 201, response.body);
      assert.deepEqual(numbersIn(response.body, 'spend'), amounts);

      const listed = await getList(c, client, { platform_account_id: '', ...between(c, ...c.span) });
      assert.deepEqual(numbersIn(listed.body, 'spend'), amounts);
      const [row] = await service.db.query<{ total: string }>(`SELECT sum(spend)::text AS total FROM ${c.table} WHERE client_id = $1`, [
        client.client_id,
      ]);
      assert.equal(row!.total, '112345678901233.983456789012');
    });

    test('measures are bounded as exact decimals, whatever a binary float makes of them', async () => {
      const client = await service.createClient();
      // What JavaScript reads as -0, as the maximum or as 0 is still out of bounds as written.
      const cases: [string, string, string][] = [
        ['-1e-400', 'minimum', 'Must be at least 0'],
        ['-1e-324', 'minimum', 'Must be at least 0'],
        ['-1e-16383', 'minimum', 'Must be at least 0'],
        ['100000000000000.001', 'maximum', 'Must be at most 100000000000000'],
        ['100000000000001', 'maximum', 'Must be at most 100000000000000'],
      ];
      for (const field of ['spend', 'impressions', 'clicks']) {
        for (const [text, type, msg] of cases) {
          const body = JSON.stringify({ data: [record(c), record(c, { campaign_id: 'c2', [field]: '<n>' })] }).replace('"<n>"', text);
          for (const [app, caller] of [
            [service.production, client],
            [service.uat, TEST_CREDENTIALS],
          ] as const) {
            assertOnlyError(await postBody(c, caller, body, app), { loc: `body/data/1/${field}`, type, msg });
          }
        }
      }
      assert.deepEqual(await stored(c, client), []);
      const edges = JSON.stringify({ data: [record(c, { spend: '<max>', clicks: '<zero>' })] })
        .replace('"<max>"', '100000000000000.000000000000')
        .replace('"<zero>"', '-0.0');
      assert.equal((await postBody(c, client, edges)).statusCode, 201);
    });

    test('measures past 12 decimal places are stored rounded to 12, with a warning naming each', async () => {
      const client = await service.createClient();
      const body = JSON.stringify({ data: [record(c), record(c, { campaign_id: 'c2', spend: '<s>', impressions: '<i>', clicks: '<c>' })] })
        .replace('"<s>"', '0.1234567890125')
        .replace('"<i>"', '1e-16383')
        .replace('"<c>"', '3.00000000000000000001');
      for (const [app, caller] of [
        [service.production, client],
        [service.uat, TEST_CREDENTIALS],
      ] as const) {
        const answer = okJson<{ data: Json[]; warnings: Json[] }>(await postBody(c, caller, body, app), 201);
        assert.deepEqual(answer.warnings, [
          { loc: 'body/data/1/spend', msg: 'Rounded to 12 decimal places: stored as 0.123456789013' },
          { loc: 'body/data/1/impressions', msg: 'Rounded to 12 decimal places: stored as 0' },
          { loc: 'body/data/1/clicks', msg: 'Rounded to 12 decimal places: stored as 3' },
        ]);
        assert.deepEqual(numbersIn(JSON.stringify(answer.data), 'spend'), ['12.5', '0.123456789013']);
      }
      const listed = await getList(c, client, { platform_account_id: '', ...between(c, ...c.span) });
      assert.deepEqual(numbersIn(listed.body, 'spend'), ['12.5', '0.123456789013']);
      assert.deepEqual(numbersIn(listed.body, 'impressions'), ['0', '0']);
      assert.deepEqual(numbersIn(listed.body, 'clicks'), ['0', '3']);
    });

    test('takes 1 to 1000 records per request', async () => {
      const client = await service.createClient();
      assertOnlyError(await post(c, client, []), { loc: 'body/data', type: 'min_items' });
      assertOnlyError(await post(c, client, campaigns(c, 1001)), { loc: 'body/data', type: 'max_items' });
      assert.deepEqual(await stored(c, client), []);

      const thousand = campaigns(c, 1000);
      const data = await upsert(c, client, thousand);
      assert.deepEqual(data.map((item) => item.campaign_id), thousand.map((item) => item.campaign_id));
      const page = await list(c, client, { platform_account_id: '', ...between(c, ...c.span) });
      assert.deepEqual(paging(page), { page: 1, page_size: 1000, total_pages: 1, total_count: 1000 });
    });

    test('a body other than { data: [records] } is 422', async () => {
      const client = await service.createClient();
      const cases: [string, object, string, string][] = [
        ['no data', {}, 'body/data', 'required'],
        ['data not an array', { data: record(c) }, 'body/data', 'type'],
        ['an array', [record(c)], 'body', 'type'],
        ['a record not an object', { data: ['x'] }, 'body/data/0', 'type'],
        ['a null record', { data: [null] }, 'body/data/0', 'type'],
        ['another top-level property', { data: [record(c)], extra: 1 }, 'body/extra', 'additional_property'],
        ['another record property', { data: [record(c, { extra: 1 })] }, 'body/data/0/extra', 'additional_property'],
        ['created_at in a record', { data: [record(c, { created_at: '2024-03-08T09:00:00Z' })] }, 'body/data/0/created_at', 'additional_property'],
      ];
      for (const [name, body, loc, type] of cases) {
        const response = await postBody(c, client, body);
        assert.equal(response.statusCode, 422, name);
        assertOnlyError(response, { loc, type });
      }
      assert.deepEqual(await stored(c, client), []);
    });

    test('a missing required field is 422 naming it', async () => {
      const client = await service.createClient();
      for (const field of [c.time, 'platform_name', 'campaign_id', 'campaign_name', 'spend', 'spend_currency']) {
        assertOnlyError(await post(c, client, [omit(record(c), field)]), {
          loc: `body/data/0/${field}`,
          type: 'required',
          msg: 'Field required',
        });
      }
    });

    test('a spend_currency outside the list is 422 with the specification\'s message', async () => {
      const client = await service.createClient();
      for (const currency of ['usd', 'US', 'XUSDX', 'XXX', '', 'U S']) {
        assertOnlyError(await post(c, client, [record(c, { spend_currency: currency })]), {
          loc: 'body/data/0/spend_currency',
          type: 'enum',
          msg: CURRENCY_MESSAGE,
        });
      }
      const data = await upsert(c, client, ['EUR', 'JPY', 'GBP'].map((currency, i) => record(c, { campaign_id: `c${i}`, spend_currency: currency })));
      assert.deepEqual(data.map((item) => item.spend_currency), ['EUR', 'JPY', 'GBP']);
    });

    test('a number, null or boolean in a string field is 422 type', async () => {
      const client = await service.createClient();
      const strings = FIELDS.filter((field) => !['spend', 'impressions', 'clicks', 'created_at', 'updated_at'].includes(field));
      for (const field of [c.time, ...strings]) {
        for (const value of [5, null, true]) {
          assertOnlyError(await post(c, client, [record(c, { [field]: value })]), { loc: `body/data/0/${field}`, type: 'type' });
        }
      }
    });

    test('each id has a maximum length, and the longest key fits the index even in 4-byte characters', async () => {
      const client = await service.createClient();
      const limits = { platform_name: 64, platform_account_id: 128, campaign_id: 140, adset_id: 140, ad_id: 140 };
      for (const [field, limit] of Object.entries(limits)) {
        assertOnlyError(await post(c, client, [record(c, { [field]: 'x'.repeat(limit + 1) })]), {
          loc: `body/data/0/${field}`,
          type: 'max_length',
          msg: `Must be at most ${limit} characters long`,
        });
      }
      // Varied characters outside the Basic Multilingual Plane: four bytes each, and incompressible.
      let seed = 7;
      const astral = (length: number) =>
        Array.from({ length }, () => String.fromCodePoint(0x10000 + (seed = (seed * 48271) % 2147483647) % 0xf0000)).join('');
      const ids = Object.fromEntries(Object.entries(limits).map(([field, limit]) => [field, astral(limit)]));
      const [stored] = await upsert(c, client, [record(c, ids)]);
      assert.equal(stored!.ad_id, ids.ad_id);
    });

    test(`a malformed ${c.time} is 422`, async () => {
      const client = await service.createClient();
      for (const value of c.badTimes) {
        assertOnlyError(await post(c, client, [record(c, { [c.time]: value })]), { loc: `body/data/0/${c.time}`, type: 'format' });
      }
      assert.deepEqual(await stored(c, client), []);
    });

    test('the same key twice in one request is a 422 and stores nothing', async () => {
      const client = await service.createClient();
      const twice = [record(c), record(c, { campaign_id: 'c2' }), record(c, { [c.time]: c.alias, campaign_name: 'Other', spend: 99 })];
      assertOnlyError(await post(c, client, twice), { loc: 'body/data/2', type: 'unique', msg: /once per request/ });
      // An absent adset_id is its default "": the same key as an explicit "".
      assertOnlyError(await post(c, client, [record(c, { adset_id: '', ad_id: '' }), record(c)]), { loc: 'body/data/1', type: 'unique' });
      assert.deepEqual(await stored(c, client), []);
    });
  });

  describe(`${c.path} list`, () => {
    if (c === hourly) {
      test('platform_account_id is required', async () => {
        const client = await service.createClient();
        assertOnlyError(await getList(c, client, between(c, ...c.span)), { loc: 'query/platform_account_id', type: 'required' });
      });
    }

    test(`${start} and ${end} are both inclusive`, async () => {
      const client = await service.createClient();
      await upsert(c, client, [0, 1, 2, 3, 4].map((n) => record(c, { [c.time]: c.period(n) })));
      const periods = async (from: number, to: number) =>
        (await list(c, client, { platform_account_id: '', ...between(c, c.period(from), c.period(to)) })).data.map((item) => item[c.time]);
      assert.deepEqual(await periods(1, 3), [c.period(1), c.period(2), c.period(3)]);
      assert.deepEqual(await periods(2, 2), [c.period(2)]);
      assert.deepEqual(await periods(5, 9), []);
    });

    test('date lists that whole UTC day and nothing of the days around it', async () => {
      const client = await service.createClient();
      const times = [...c.day.outside, ...c.day.inside];
      await upsert(c, client, times.map((time, i) => record(c, { [c.time]: time, campaign_id: `c${i}` })));
      const page = await list(c, client, { platform_account_id: '', date: '2024-03-08' });
      assert.deepEqual(page.data.map((item) => item[c.time]), c.day.inside);
    });

    test(`a range is date, or both ${start} and ${end}`, async () => {
      const client = await service.createClient();
      const date = '2024-03-08';
      const cases: [string, Query, string][] = [
        ['neither', {}, 'query'],
        [`only ${start}`, { [start]: c.period(0) }, `query/${end}`],
        [`only ${end}`, { [end]: c.period(0) }, `query/${start}`],
        [`date and ${start}`, { date, [start]: c.period(0) }, 'query/date'],
        [`date and ${end}`, { date, [end]: c.period(0) }, 'query/date'],
        ['date and both', { date, ...between(c, c.period(0), c.period(1)) }, 'query/date'],
        [`${end} before ${start}`, between(c, c.period(1), c.period(0)), `query/${end}`],
      ];
      for (const [name, query, loc] of cases) {
        const response = await getList(c, client, { platform_account_id: '', ...query });
        assert.equal(response.statusCode, 422, name);
        assertOnlyError(response, { loc, type: 'range', msg: new RegExp(start) });
      }
    });

    test('malformed dates and bounds are 422', async () => {
      const client = await service.createClient();
      for (const value of c.badBounds) {
        assertOnlyError(await getList(c, client, { platform_account_id: '', ...between(c, value, c.period(0)) }), { loc: `query/${start}`, type: 'format' });
        assertOnlyError(await getList(c, client, { platform_account_id: '', ...between(c, c.period(0), value) }), { loc: `query/${end}`, type: 'format' });
      }
      for (const date of ['2024-02-30', '2024-03-08T00:00:00Z', '2024-3-8', '']) {
        assertOnlyError(await getList(c, client, { platform_account_id: '', date }), { loc: 'query/date', type: 'format' });
      }
    });

    test('campaign_id, adset_id and ad_id filter exactly', async () => {
      const client = await service.createClient();
      const ids = [
        { campaign_id: 'c1', adset_id: '', ad_id: '' },
        { campaign_id: 'c1', adset_id: 'as1', ad_id: 'ad1' },
        { campaign_id: 'c1', adset_id: 'as1', ad_id: 'ad2' },
        { campaign_id: 'c1', adset_id: 'as2', ad_id: 'ad1' },
        { campaign_id: 'c10', adset_id: 'as1', ad_id: 'ad1' },
        { campaign_id: 'C1', adset_id: 'as10', ad_id: 'ad10' },
      ];
      await upsert(c, client, ids.map((id) => record(c, id)));
      const filters: Record<string, string>[] = [
        { campaign_id: 'c1' },
        { adset_id: 'as1' },
        { ad_id: 'ad1' },
        { adset_id: '' },
        { campaign_id: 'c1', adset_id: 'as1' },
        { campaign_id: 'c1', adset_id: 'as1', ad_id: 'ad2' },
        { campaign_id: 'c' },
        { ad_id: 'AD1' },
      ];
      const idOf = (item: Json) => `${item.campaign_id}/${item.adset_id}/${item.ad_id}`;
      for (const filter of filters) {
        const page = await list(c, client, { platform_account_id: '', ...between(c, ...c.span), ...filter });
        const expected = ids.filter((id) => Object.entries(filter).every(([field, value]) => id[field as keyof typeof id] === value));
        assert.deepEqual(page.data.map(idOf).sort(), expected.map(idOf).sort(), JSON.stringify(filter));
        assert.equal(page.total_count, expected.length);
      }
    });

    test('lists only the records of the platform_account_id asked for', async () => {
      const client = await service.createClient();
      const accounts = ['', 'acc-1', 'acc-2', 'ACC-1', 'acc-10'];
      await upsert(c, client, accounts.map((account) => record(c, { platform_account_id: account })));
      for (const account of accounts) {
        assert.deepEqual((await stored(c, client, account)).map((item) => item.platform_account_id), [account]);
      }
      assert.deepEqual(await stored(c, client, 'acc'), []);
    });

    test('records come by period, then platform_name, campaign_id, adset_id, ad_id, on every page', async () => {
      const client = await service.createClient();
      const keys: string[][] = [];
      for (const period of [c.period(1), c.period(0)]) {
        for (const platform of ['meta', 'google']) {
          for (const campaign of ['c2', 'c1']) {
            for (const adset of ['as1', '']) for (const ad of ['ad1', '']) keys.push([period, platform, campaign, adset, ad]);
          }
        }
      }
      // Sent in an order unrelated to the expected one (13 and 32 are coprime).
      const sent = keys.map((_, i) => keys[(i * 13) % keys.length]!);
      await upsert(
        c,
        client,
        sent.map(([time, platform_name, campaign_id, adset_id, ad_id]) => record(c, { [c.time]: time, platform_name, campaign_id, adset_id, ad_id })),
      );

      const byKey = (a: string[], b: string[]) => {
        const i = a.findIndex((part, index) => part !== b[index]);
        return i < 0 ? 0 : a[i]! < b[i]! ? -1 : 1;
      };
      const expected = [...keys].sort(byKey);
      const keyOf = (item: Json) => [c.time, 'platform_name', 'campaign_id', 'adset_id', 'ad_id'].map((field) => item[field]);
      assert.deepEqual((await stored(c, client)).map(keyOf), expected);

      const paged: Json[] = [];
      for (let page = 1; page <= 7; page++) {
        paged.push(...(await list(c, client, { platform_account_id: '', ...between(c, ...c.span), page, page_size: 5 })).data);
      }
      assert.deepEqual(paged.map(keyOf), expected);
    });

    test('5 records at page_size 2 are pages of 2, 2 and 1, and page 4 is empty', async () => {
      const client = await service.createClient();
      const all = await upsert(c, client, [0, 1, 2, 3, 4].map((n) => record(c, { [c.time]: c.period(n) })));
      const pages: Json[][] = [];
      for (const page of [1, 2, 3, 4]) {
        const body = await list(c, client, { platform_account_id: '', ...between(c, c.period(0), c.period(4)), page, page_size: 2 });
        assert.deepEqual(paging(body), { page, page_size: 2, total_pages: 3, total_count: 5 });
        pages.push(body.data);
      }
      assert.deepEqual(pages.map((page) => page.length), [2, 2, 1, 0]);
      assert.deepEqual(pages.flat(), all);
    });

    test('an exact multiple of page_size makes no extra page', async () => {
      const client = await service.createClient();
      await upsert(c, client, campaigns(c, 4));
      const query = { platform_account_id: '', ...between(c, ...c.span), page_size: 2 };
      for (const [page, length] of [[1, 2], [2, 2], [3, 0]] as const) {
        const body = await list(c, client, { ...query, page });
        assert.deepEqual(paging(body), { page, page_size: 2, total_pages: 2, total_count: 4 });
        assert.equal(body.data.length, length);
      }
    });

    test('nothing matched is an empty first page of the default size and 0 pages', async () => {
      const client = await service.createClient();
      assert.deepEqual(await list(c, client, { platform_account_id: '', ...between(c, ...c.span) }), {
        data: [],
        page: 1,
        page_size: 1000,
        total_pages: 0,
        total_count: 0,
      });
    });

    test('page below 1 and page_size outside 1 to 1000 are 422', async () => {
      const client = await service.createClient();
      const cases: [Query, string, string][] = [
        [{ page: 0 }, 'query/page', 'minimum'],
        [{ page: -1 }, 'query/page', 'minimum'],
        [{ page: 1.5 }, 'query/page', 'type'],
        [{ page: 'first' }, 'query/page', 'type'],
        [{ page_size: 0 }, 'query/page_size', 'minimum'],
        [{ page_size: 1001 }, 'query/page_size', 'maximum'],
        [{ page_size: 'all' }, 'query/page_size', 'type'],
      ];
      for (const [paging, loc, type] of cases) {
        assertOnlyError(await getList(c, client, { platform_account_id: '', date: '2024-03-08', ...paging }), { loc, type });
      }
      const largest = await list(c, client, { platform_account_id: '', date: '2024-03-08', page_size: 1000, page: 1 });
      assert.equal(largest.page_size, 1000);
    });

    test('an unknown query parameter is 422', async () => {
      const client = await service.createClient();
      for (const name of ['foo', 'platform_name', c === hourly ? 'date_start' : 'hour_start_iso_begin']) {
        assertOnlyError(await getList(c, client, { platform_account_id: '', date: '2024-03-08', [name]: 'x' }), {
          loc: `query/${name}`,
          type: 'additional_property',
        });
      }
    });
  });

  describe(`${c.path} delete`, () => {
    test('deletes the record of every platform_name with that key, and only those', async () => {
      const client = await service.createClient();
      const key = { platform_account_id: 'acc', campaign_id: 'c1', adset_id: 'as1', ad_id: 'ad1' };
      const [meta, google, tiktok, ...others] = await upsert(c, client, [
        record(c, { ...key, platform_name: 'meta', spend: 1 }),
        record(c, { ...key, platform_name: 'google', spend: 2 }),
        record(c, { ...key, platform_name: 'tiktok', spend: 3 }),
        record(c, { ...key, adset_id: 'as2' }),
        record(c, { ...key, ad_id: 'ad2' }),
        record(c, { ...key, campaign_id: 'c2' }),
        record(c, { ...key, [c.time]: c.period(1) }),
        record(c, { ...key, platform_account_id: 'acc-2' }),
      ]);
      const match = { [c.time]: c.alias, ...key };
      assert.deepEqual(await deleted(c, client, match), [google, meta, tiktok], 'the deleted records, by platform_name');

      const remaining = [...(await stored(c, client, 'acc')), ...(await stored(c, client, 'acc-2'))];
      const idOf = (item: Json) => JSON.stringify(item);
      assert.deepEqual(remaining.map(idOf).sort(), others.map(idOf).sort());
      assert.deepEqual(await deleted(c, client, match), [], 'nothing left to delete');
    });

    test('platform_account_id, adset_id and ad_id default to "" and match exactly', async () => {
      const client = await service.createClient();
      const [bare, withAdset] = await upsert(c, client, [record(c), record(c, { adset_id: 'as1' })]);
      assert.deepEqual(await deleted(c, client, { [c.time]: c.period(0), campaign_id: 'c1' }), [bare]);
      assert.deepEqual(await stored(c, client), [withAdset]);
      const explicit = { [c.time]: c.period(0), platform_account_id: '', campaign_id: 'c1', adset_id: 'as1', ad_id: '' };
      assert.deepEqual(await deleted(c, client, explicit), [withAdset]);
    });

    test('a body other than { data: { key } } is 422 and deletes nothing', async () => {
      const client = await service.createClient();
      const [kept] = await upsert(c, client, [record(c)]);
      const match = { [c.time]: c.period(0), campaign_id: 'c1' };
      const cases: [string, object, string, string][] = [
        ['no data', {}, 'body/data', 'required'],
        ['data an array', { data: [match] }, 'body/data', 'type'],
        ['no campaign_id', { data: omit(match, 'campaign_id') }, 'body/data/campaign_id', 'required'],
        [`no ${c.time}`, { data: omit(match, c.time) }, `body/data/${c.time}`, 'required'],
        [`a malformed ${c.time}`, { data: { ...match, [c.time]: c.badTimes[0] } }, `body/data/${c.time}`, 'format'],
        ['a number for campaign_id', { data: { ...match, campaign_id: 1 } }, 'body/data/campaign_id', 'type'],
        // A delete spans every platform: it does not take platform_name.
        ['platform_name', { data: { ...match, platform_name: 'meta' } }, 'body/data/platform_name', 'additional_property'],
        ['another data property', { data: { ...match, spend: 12.5 } }, 'body/data/spend', 'additional_property'],
        ['another top-level property', { data: match, extra: true }, 'body/extra', 'additional_property'],
      ];
      for (const [name, body, loc, type] of cases) {
        const response = await deleteBody(c, client, body);
        assert.equal(response.statusCode, 422, name);
        assertOnlyError(response, { loc, type });
      }
      assert.deepEqual(await stored(c, client), [kept]);
    });
  });

  describe(`${c.path} clients and environments`, () => {
    test('a client sees, overwrites and deletes only its own records', async () => {
      const a = await service.createClient();
      const b = await service.createClient();
      const [mine] = await upsert(c, a, [record(c, { spend: 1 })]);
      assert.deepEqual(await stored(c, b), []);

      const [theirs] = await upsert(c, b, [record(c, { spend: 2, campaign_name: 'B' })]);
      assert.equal(theirs!.created_at, theirs!.updated_at, "B's record is new");
      assert.deepEqual(await stored(c, a), [mine]);
      assert.deepEqual(await stored(c, b), [theirs]);

      const match = { [c.time]: c.period(0), campaign_id: 'c1' };
      assert.deepEqual(await deleted(c, b, match), [theirs]);
      assert.deepEqual(await deleted(c, b, match), []);
      assert.deepEqual(await stored(c, a), [mine]);
    });

    test('production and UAT records are apart, even under the same key', async () => {
      const client = await service.createClient();
      const [onProduction] = await upsert(c, client, [record(c, { spend: 1 })]);
      const [onUat, uatOnly] = await upsert(c, client, [record(c, { spend: 2 }), record(c, { campaign_id: 'uat' })], service.uat);
      assert.equal(onUat!.created_at, onUat!.updated_at, 'the UAT record is new');
      assert.deepEqual(await stored(c, client), [onProduction]);
      assert.deepEqual(await stored(c, client, '', service.uat), [onUat, uatOnly]);

      const match = { [c.time]: c.period(0), campaign_id: 'c1' };
      assert.deepEqual(await deleted(c, client, match, service.uat), [onUat]);
      assert.deepEqual(await stored(c, client), [onProduction]);
      assert.deepEqual(await deleted(c, client, match), [onProduction]);
      assert.deepEqual(await stored(c, client, '', service.uat), [uatOnly]);
    });

    test('the UAT test credentials are answered as if stored, and nothing is stored or read', async () => {
      const client = await service.createClient();
      await upsert(c, client, [record(c)], service.uat);
      const before = await rowCounts();

      const full = { platform_account_id: 'acc', adset_id: 'as', adset_name: 'Adset', ad_id: 'ad', ad_name: 'Ad', impressions: 3, clicks: 1 };
      const preview = await upsert(c, TEST_CREDENTIALS, [record(c, { [c.time]: c.alias }), record(c, { ...full, spend: '' })], service.uat);
      assert.deepEqual(preview.map(content), [withDefaults(record(c)), record(c, { ...full, spend: 0 })]);
      for (const item of preview) {
        assert.deepEqual(Object.keys(item).sort(), [c.time, ...FIELDS].sort());
        assert.match(String(item.created_at), TIMESTAMP);
        assert.equal(item.updated_at, item.created_at);
      }
      assert.deepEqual(await list(c, TEST_CREDENTIALS, { platform_account_id: '', date: '2024-03-08', page: 2, page_size: 10 }, service.uat), {
        data: [],
        page: 2,
        page_size: 10,
        total_pages: 0,
        total_count: 0,
      });
      assert.deepEqual(await deleted(c, TEST_CREDENTIALS, { [c.time]: c.period(0), campaign_id: 'c1' }, service.uat), []);
      // Still validated like any request.
      assertOnlyError(await post(c, TEST_CREDENTIALS, [record(c), record(c)], service.uat), { loc: 'body/data/1', type: 'unique' });
      assertOnlyError(await getList(c, TEST_CREDENTIALS, { platform_account_id: '' }, service.uat), { loc: 'query', type: 'range' });
      assertOnlyError(await del(c, TEST_CREDENTIALS, { [c.time]: c.period(0) }, service.uat), { loc: 'body/data/campaign_id', type: 'required' });

      assert.deepEqual(await rowCounts(), before);
      assert.equal((await stored(c, client, '', service.uat)).length, 1, "the client's own UAT record is untouched");
    });

    test('every operation is 401 with the envelope without valid credentials', async () => {
      const client = await service.createClient();
      const other = await service.createClient();
      const [kept] = await upsert(c, client, [record(c)]);
      const callers: [string, Caller][] = [
        ['no credentials', { headers: {} }],
        ['no API key', { headers: { 'data-client-id': client.client_id } }],
        ['no client id', { headers: { authorization: client.api_key } }],
        ['a wrong API key', { headers: { ...client.headers, authorization: 'not-the-key' } }],
        ["another client's API key", { headers: { ...client.headers, authorization: other.api_key } }],
        ['an unknown client id', { headers: { ...client.headers, 'data-client-id': '9b2f7c1e-4d3a-4e5b-8c6d-7e8f9a0b1c2d' } }],
        ['the UAT test credentials on production', TEST_CREDENTIALS],
      ];
      const before = await rowCounts();
      const match = { [c.time]: c.period(0), campaign_id: 'c1' };
      for (const [name, caller] of callers) {
        const responses = [
          await post(c, caller, [record(c, { campaign_id: 'intruder' })]),
          await post(c, caller, []), // credentials come before validation
          await getList(c, caller, { platform_account_id: '', date: '2024-03-08' }),
          await del(c, caller, match),
        ];
        for (const response of responses) {
          const { errors } = assertErrorEnvelope(response, 401);
          assert.ok(errors && errors.length > 0, `${name}: ${response.body}`);
        }
      }
      assert.deepEqual(await rowCounts(), before);
      assert.deepEqual(await stored(c, client), [kept]);
    });
  });

  describe(`${c.path} values the service cannot store`, () => {
    test(`a ${c.time} value the database cannot hold is a 422 naming the field`, async () => {
      const client = await service.createClient();
      const loc = (response: LightMyRequestResponse) => rejection(response).map((error) => error.loc);
      assert.deepEqual(loc(await post(c, client, [record(c, { [c.time]: c.unstorable })])), [`body/data/0/${c.time}`]);
      assert.deepEqual(loc(await getList(c, client, { platform_account_id: '', ...between(c, c.unstorable, c.period(0)) })), [`query/${start}`]);
      assert.deepEqual(loc(await del(c, client, { [c.time]: c.unstorable, campaign_id: 'c1' })), [`body/data/${c.time}`]);
    });

    test('a NUL in a query string is a 422 naming the parameter', async () => {
      const client = await service.createClient();
      const response = await getList(c, client, { platform_account_id: 'a\u0000b', date: '2024-03-08' });
      assert.deepEqual(rejection(response), [
        { loc: 'query/platform_account_id', msg: 'Must not contain NUL characters or unpaired surrogates', type: 'invalid_string' },
      ]);
    });

    test('an unreadable or empty body is a 422 here too', async () => {
      const client = await service.createClient();
      for (const body of ['', '{"data": [', '{"__proto__": {"x": 1}}']) {
        for (const method of ['POST', 'DELETE'] as const) {
          const response = await service.production.inject({
            method,
            url: c.path,
            headers: { ...client.headers, 'content-type': 'application/json' },
            payload: body,
          });
          assertErrorEnvelope(response, 422);
        }
      }
    });

    test('a string with NUL or an unpaired surrogate is a 422 here, like every other invalid value', async () => {
      const client = await service.createClient();
      assertOnlyError(await postBody(c, client, JSON.stringify({ data: [record(c, { campaign_name: 'a\u0000b' })] })), {
        loc: 'body/data/0/campaign_name',
        type: 'invalid_string',
      });
      assertOnlyError(await deleteBody(c, client, JSON.stringify({ data: { [c.time]: c.period(0), campaign_id: '\ud800' } })), {
        loc: 'body/data/campaign_id',
        type: 'invalid_string',
      });
      assert.deepEqual(await stored(c, client), []);
    });
  });
}

describe('hourly spend times', () => {
  test('takes any ISO-8601 offset and shows the hour in UTC', async () => {
    const client = await service.createClient();
    const cases: [string, string][] = [
      ['2024-03-08T01:00:00-08:00', '2024-03-08T09:00:00Z'],
      ['2024-03-08T01:00:00-0800', '2024-03-08T09:00:00Z'],
      ['2024-03-08T09:00:00.000Z', '2024-03-08T09:00:00Z'],
      ['2024-03-08T09:00:00+00:00', '2024-03-08T09:00:00Z'],
      ['2024-03-08t09:00:00z', '2024-03-08T09:00:00Z'],
      ['2024-03-08T14:30:00+05:30', '2024-03-08T09:00:00Z'],
      ['2024-03-08T23:00:00-01:00', '2024-03-09T00:00:00Z'],
      ['1970-01-01T00:00:00-0000', '1970-01-01T00:00:00Z'],
    ];
    const data = await upsert(hourly, client, cases.map(([time], i) => record(hourly, { hour_start_iso: time, campaign_id: `c${i}` })));
    assert.deepEqual(data.map((item) => item.hour_start_iso), cases.map(([, shown]) => shown));
  });

  test('the same hour written with two offsets in one request is a duplicate key', async () => {
    const client = await service.createClient();
    const response = await post(hourly, client, [
      record(hourly, { hour_start_iso: '2024-03-08T01:00:00-08:00' }),
      record(hourly, { hour_start_iso: '2024-03-08T09:00:00Z' }),
    ]);
    assertOnlyError(response, { loc: 'body/data/1', type: 'unique' });
    assert.deepEqual(await stored(hourly, client), []);
  });

  test('a time not at the start of an hour is a 422 that says so', async () => {
    const client = await service.createClient();
    for (const time of ['2024-03-08T09:30:00Z', '2024-03-08T09:00:01Z', '2024-03-08T09:00:00.5Z', '2024-03-08T09:00:00.001Z', '2024-03-08T09:00:00+05:30']) {
      assertOnlyError(await post(hourly, client, [record(hourly, { hour_start_iso: time })]), {
        loc: 'body/data/0/hour_start_iso',
        type: 'format',
        msg: /start of an hour/,
      });
      assertOnlyError(await del(hourly, client, { hour_start_iso: time, campaign_id: 'c1' }), { loc: 'body/data/hour_start_iso', type: 'format' });
    }
    assert.deepEqual(await stored(hourly, client), []);
  });

  test('date is the UTC day: an hour late on 8 March west of UTC is on 9 March', async () => {
    const client = await service.createClient();
    await upsert(hourly, client, [
      record(hourly, { hour_start_iso: '2024-03-08T23:00:00-01:00', campaign_id: 'west' }),
      record(hourly, { hour_start_iso: '2024-03-09T01:00:00+02:00', campaign_id: 'east' }),
    ]);
    const campaignsOn = async (date: string) => (await list(hourly, client, { platform_account_id: '', date })).data.map((item) => item.campaign_id);
    assert.deepEqual(await campaignsOn('2024-03-08'), ['east']);
    assert.deepEqual(await campaignsOn('2024-03-09'), ['west']);
  });

  test('range bounds are instants: any offset, any minute', async () => {
    const client = await service.createClient();
    await upsert(hourly, client, [0, 1, 2, 3].map((n) => record(hourly, { hour_start_iso: hourly.period(n) })));
    const hours = async (from: string, to: string) =>
      (await list(hourly, client, { platform_account_id: '', ...between(hourly, from, to) })).data.map((item) => item.hour_start_iso);
    // 02:00-08:00 is 10:00Z; up to 11:30Z takes 10:00Z and 11:00Z.
    assert.deepEqual(await hours('2024-03-08T02:00:00-08:00', '2024-03-08T11:30:00Z'), [hourly.period(1), hourly.period(2)]);
    // Later as text, earlier as an instant: 10:00+02:00 is 08:00Z, before 09:00Z.
    assert.deepEqual(await hours('2024-03-08T10:00:00+02:00', '2024-03-08T09:00:00Z'), [hourly.period(0)]);
    assert.deepEqual(await hours('2024-03-08T09:00:01Z', '2024-03-08T09:59:59Z'), []);
    assertOnlyError(await getList(hourly, client, { platform_account_id: '', ...between(hourly, '2024-03-08T09:00:00Z', '2024-03-08T08:00:00+0000') }), {
      loc: 'query/hour_start_iso_end',
      type: 'range',
    });
  });
});

describe('daily spend of every account', () => {
  const accounts = ['', 'acc-2', 'acc-1'];
  /** One record per account and platform on each of two days, sent in no particular order. */
  const spread = (campaign_id = 'c1') =>
    ['2026-11-22', '2026-11-21'].flatMap((date) =>
      ['meta', 'google'].flatMap((platform_name) => accounts.map((platform_account_id) => record(daily, { date, platform_name, platform_account_id, campaign_id }))),
    );
  const keyOf = (item: Json) => [item.date, item.platform_name, item.platform_account_id, item.campaign_id].join('/');

  test("a connection check's request, without platform_account_id, lists every account of the client that day", async () => {
    const client = await service.createClient();
    const other = await service.createClient();
    await upsert(daily, client, spread());
    await upsert(daily, other, spread('theirs'));
    await upsert(daily, client, [record(daily, { date: '2026-11-22', platform_account_id: 'acc-uat', campaign_id: 'uat' })], service.uat);
    // Hourly spend of an account with no daily spend: not a daily record.
    await upsert(hourly, client, [record(hourly, { hour_start_iso: '2026-11-22T10:00:00Z', platform_account_id: 'acc-hourly' })]);

    const response = await call(service.production, 'GET', '/v1/spend?page=1&page_size=1000&date=2026-11-22', client);
    const page = okJson<Page>(response, 200);
    assert.deepEqual(paging(page), { page: 1, page_size: 1000, total_pages: 1, total_count: 6 });
    assert.deepEqual(page.data.map(keyOf), [
      '2026-11-22/google//c1', '2026-11-22/google/acc-1/c1', '2026-11-22/google/acc-2/c1',
      '2026-11-22/meta//c1', '2026-11-22/meta/acc-1/c1', '2026-11-22/meta/acc-2/c1',
    ]);
    assert.deepEqual(Object.keys(page.data[0]!).sort(), ['date', ...FIELDS].sort());
  });

  test('a range pages through every account, by date, platform, account and ids, with the filters', async () => {
    const client = await service.createClient();
    await upsert(daily, client, [...spread('c1'), ...spread('c2')]);
    const all = (await list(daily, client, between(daily, '2026-11-21', '2026-11-22'))).data;
    assert.equal(all.length, 24);
    assert.deepEqual(all.map(keyOf), all.map(keyOf).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));

    const pages: Json[] = [];
    for (const page of [1, 2, 3, 4, 5]) {
      const body = await list(daily, client, { ...between(daily, '2026-11-21', '2026-11-22'), page, page_size: 5 });
      assert.deepEqual(paging(body), { page, page_size: 5, total_pages: 5, total_count: 24 });
      pages.push(...body.data);
    }
    assert.deepEqual(pages, all);

    const filtered = await list(daily, client, { date: '2026-11-21', campaign_id: 'c2' });
    assert.deepEqual(filtered.data.map(keyOf), all.filter((item) => item.date === '2026-11-21' && item.campaign_id === 'c2').map(keyOf));
    // Naming an account still lists that account alone.
    assert.deepEqual((await list(daily, client, { platform_account_id: 'acc-1', date: '2026-11-21' })).data.map(keyOf), [
      '2026-11-21/google/acc-1/c1', '2026-11-21/google/acc-1/c2', '2026-11-21/meta/acc-1/c1', '2026-11-21/meta/acc-1/c2',
    ]);
  });

  test('without platform_account_id a range is still required, and hourly still requires the account', async () => {
    const client = await service.createClient();
    assertOnlyError(await getList(daily, client, { page: 1 }), { loc: 'query', type: 'range' });
    assertOnlyError(await getList(hourly, client, { date: '2026-11-22' }), { loc: 'query/platform_account_id', type: 'required' });
  });

  test('the UAT test credentials get an empty page', async () => {
    assert.deepEqual(await list(daily, TEST_CREDENTIALS, { date: '2026-11-22' }, service.uat), {
      data: [], page: 1, page_size: 1000, total_pages: 0, total_count: 0,
    });
  });
});

describe('hourly and daily spend are separate collections', () => {
  test('neither lists nor deletes the records of the other', async () => {
    const client = await service.createClient();
    const [hour] = await upsert(hourly, client, [record(hourly, { hour_start_iso: '2024-03-08T00:00:00Z' })]);
    const [day] = await upsert(daily, client, [record(daily, { date: '2024-03-08' })]);
    const onDate = async (c: Collection) => (await list(c, client, { platform_account_id: '', date: '2024-03-08' })).data;
    assert.deepEqual(await onDate(hourly), [hour]);
    assert.deepEqual(await onDate(daily), [day]);

    assert.deepEqual(await deleted(hourly, client, { hour_start_iso: '2024-03-08T00:00:00Z', campaign_id: 'c1' }), [hour]);
    assert.deepEqual(await onDate(daily), [day]);
    await upsert(hourly, client, [record(hourly, { hour_start_iso: '2024-03-08T00:00:00Z' })]);
    assert.deepEqual(await deleted(daily, client, { date: '2024-03-08', campaign_id: 'c1' }), [day]);
    assert.equal((await onDate(hourly)).length, 1);
  });

  test('each takes only its own time field', async () => {
    const client = await service.createClient();
    for (const [c, other] of [[hourly, daily], [daily, hourly]] as const) {
      const errors = rejection(await post(c, client, [record(other)])).map(({ loc, type }) => ({ loc, type }));
      assert.deepEqual(errors.sort((a, b) => a.loc.localeCompare(b.loc)), [
        { loc: `body/data/0/${daily.time}`, type: c === hourly ? 'additional_property' : 'required' },
        { loc: `body/data/0/${hourly.time}`, type: c === hourly ? 'required' : 'additional_property' },
      ]);
    }
  });
});
