import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Tributary, TributaryError, type ExchangeRate } from '../src/client/index.js';
import { ADMIN_TOKEN, assertErrorEnvelope, startService, UUID, type TestApp, type TestClient } from './helpers.js';

const service = await startService();
after(() => service.close());

const UAT_TEST_CREDENTIALS = { authorization: 'None', 'data-client-id': 'test' };
const PATH = '/v1/exchange-rates';

type Headers = Record<string, string>;
type Query = Record<string, string>;

interface Listed {
  date: string;
  base: string;
  quote: string;
  rate: number;
  source: 'stored' | 'inverse' | 'cross';
  via?: string;
}

const rate = (date: string, base: string, quote: string, value: number): ExchangeRate => ({ date, base, quote, rate: value });

/** What a list holds for a day: `via` only with a cross rate. */
const entry = (date: string, base: string, quote: string, value: number, source: Listed['source'], via?: string): Listed => ({
  date,
  base,
  quote,
  rate: value,
  source,
  ...(via !== undefined && { via }),
});

/** The day `n` days after `from` (YYYY-MM-DD). */
const dayAfter = (from: string, n: number) => new Date(Date.parse(`${from}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

const postRates = (headers: Headers, data: unknown, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: PATH, headers, payload: { data } });
const postText = (headers: Headers, body: string, app: TestApp = service.production) =>
  app.inject({ method: 'POST', url: PATH, headers: { ...headers, 'content-type': 'application/json' }, payload: body });
const getRates = (headers: Headers, query: Query, app: TestApp = service.production) => app.inject({ method: 'GET', url: PATH, headers, query });

/** Sends `rates`, which must be stored: 201 with the counts, and the answer's other fields checked. */
async function store(headers: Headers, rates: ExchangeRate[], app: TestApp = service.production): Promise<{ inserted: number; updated: number }> {
  const response = await postRates(headers, rates, app);
  assert.equal(response.statusCode, 201, response.body);
  const body = response.json() as { message: string; inserted: number; updated: number; request_id: string };
  assert.deepEqual(Object.keys(body).sort(), ['inserted', 'message', 'request_id', 'updated']);
  assert.equal(body.message, `Stored ${rates.length} rate${rates.length === 1 ? '' : 's'}`);
  assert.match(body.request_id, UUID);
  assert.equal(body.request_id, response.headers['x-request-id']);
  return { inserted: body.inserted, updated: body.updated };
}

/** The list of a pair for a period, which must be answered 200. */
async function list(headers: Headers, base: string, quote: string, start_date: string, end_date: string, app: TestApp = service.production): Promise<Listed[]> {
  const response = await getRates(headers, { base, quote, start_date, end_date }, app);
  assert.equal(response.statusCode, 200, response.body);
  const body = response.json() as { data: Listed[] };
  assert.deepEqual(Object.keys(body), ['data']);
  return body.data;
}

/** A client's rows of exchange_rates as the database holds them (rates as text: every digit). */
async function storedRows(clientId: string) {
  return service.db.query<{ environment: string; date: string; base: string; quote: string; rate: string }>(
    `SELECT environment::text AS environment, to_char(day, 'YYYY-MM-DD') AS date, base, quote, rate::text AS rate
       FROM exchange_rates WHERE client_id = $1 ORDER BY environment, base, quote, day`,
    [clientId],
  );
}

async function countAllRows(): Promise<number> {
  const [row] = await service.db.query<{ count: number }>('SELECT count(*)::int AS count FROM exchange_rates');
  return row!.count;
}

/** A key of scope read for `client`'s data, issued through the admin API. */
async function readKeyOf(client: TestClient): Promise<Headers> {
  const issued = await service.production.inject({
    method: 'POST',
    url: `/admin/v1/clients/${client.client_id}/api-keys`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { scope: 'read' },
  });
  assert.equal(issued.statusCode, 201, issued.body);
  return { authorization: (issued.json() as { api_key: string }).api_key, 'data-client-id': client.client_id };
}

describe('POST /v1/exchange-rates', () => {
  test('rates are upserted by pair and day: sent again they count as updated, and a new rate replaces the stored one', async () => {
    const shop = await service.createClient();
    const first = [rate('2024-05-02', 'EUR', 'USD', 1.0734), rate('2024-05-02', 'EUR', 'GBP', 0.8571), rate('2024-05-03', 'EUR', 'USD', 1.6)];
    assert.deepEqual(await store(shop.headers, first), { inserted: 3, updated: 0 });
    assert.deepEqual(await storedRows(shop.client_id), [
      { environment: 'production', date: '2024-05-02', base: 'EUR', quote: 'GBP', rate: '0.8571' },
      { environment: 'production', date: '2024-05-02', base: 'EUR', quote: 'USD', rate: '1.0734' },
      { environment: 'production', date: '2024-05-03', base: 'EUR', quote: 'USD', rate: '1.6' },
    ]);
    // 1 ÷ 1.6 = 0.625 exactly.
    assert.deepEqual(await list(shop.headers, 'USD', 'EUR', '2024-05-03', '2024-05-03'), [entry('2024-05-03', 'USD', 'EUR', 0.625, 'inverse')]);

    // The same rates again: all updated, nothing changed.
    assert.deepEqual(await store(shop.headers, first), { inserted: 0, updated: 3 });
    assert.equal((await storedRows(shop.client_id)).length, 3);

    // A new rate for a stored pair and day, and a new pair.
    assert.deepEqual(await store(shop.headers, [rate('2024-05-03', 'EUR', 'USD', 1.25), rate('2024-05-03', 'EUR', 'JPY', 165.05)]), { inserted: 1, updated: 1 });
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-05-01', '2024-05-31'), [
      entry('2024-05-02', 'EUR', 'USD', 1.0734, 'stored'),
      entry('2024-05-03', 'EUR', 'USD', 1.25, 'stored'),
    ]);
    // The inverse follows the rate now stored: 1 ÷ 1.25 = 0.8 exactly.
    assert.deepEqual(await list(shop.headers, 'USD', 'EUR', '2024-05-03', '2024-05-03'), [entry('2024-05-03', 'USD', 'EUR', 0.8, 'inverse')]);
    assert.equal((await storedRows(shop.client_id)).length, 4);
  });

  test('a rate of up to 18 decimal places is kept exactly as sent: its digits and trailing zeros, in the table and in the list', async () => {
    const shop = await service.createClient();
    // A float's shortest text (1.0834000000000001, 0.1 + 0.2), trailing zeros, 18 places, and the
    // bounds; 999999999.999999999999999999 reads as the double 1e9, but is kept with its 18 nines.
    const sent: [string, string][] = [
      ['USD', '1.0834000000000001'],
      ['CHF', '0.30000000000000004'],
      ['GBP', '0.8550'],
      ['SEK', '0.123456789012345678'],
      ['NOK', '1.500000000000000000'],
      ['HUF', '999999999.999999999999999999'],
      ['JPY', '1000000000'],
      ['DKK', '0.000000001'],
    ];
    const body = `{"data":[${sent.map(([quote, text]) => `{"date":"2024-05-01","base":"EUR","quote":"${quote}","rate":${text}}`).join(',')}]}`;
    const response = await postText(shop.headers, body);
    assert.equal(response.statusCode, 201, response.body);
    assert.deepEqual(Object.keys(response.json() as object).sort(), ['inserted', 'message', 'request_id', 'updated'], 'no warnings');
    assert.deepEqual(
      (await storedRows(shop.client_id)).map(({ quote, rate }) => [quote, rate]),
      [...sent].sort(([a], [b]) => a.localeCompare(b)),
    );
    for (const [quote, text] of sent) {
      const read = await getRates(shop.headers, { base: 'EUR', quote, start_date: '2024-05-01', end_date: '2024-05-01' });
      assert.equal(read.statusCode, 200, read.body);
      assert.ok(read.body.includes(`"rate":${text},`), `EUR/${quote} as sent, ${text}: ${read.body}`);
      assert.equal((read.json() as { data: Listed[] }).data[0]!.rate, Number(text));
    }
    assert.notEqual(1.0834000000000001, 1.0834, 'a double of its own');
  });

  test('a rate of more than 18 decimal places is stored rounded to 18, half away from zero, with a warning', async () => {
    const shop = await service.createClient();
    const sent: [string, string][] = [
      // The 19th place is 0: 1.0834.
      ['USD', '1.08340000000000000001'],
      ['GBP', '0.8550'],
      // The 19th and 20th places are 50, half way: away from zero, 0.123456789012345679.
      ['SEK', '0.12345678901234567850'],
      // Below half way by 10^-24: 0.123456789012345678.
      ['NOK', '0.123456789012345678499999'],
      // Below the maximum, which it rounds to.
      ['HUF', '999999999.99999999999999999999'],
      // Below the minimum by less than a double can tell (it reads as 1e-9): rounded to it.
      ['DKK', '0.00000000099999999999999999999'],
      // More places, all 0: the same number, not warned about.
      ['CHF', '1.50000000000000000000'],
    ];
    const body = `{"data":[${sent.map(([quote, text]) => `{"date":"2024-05-01","base":"EUR","quote":"${quote}","rate":${text}}`).join(',')}]}`;
    const response = await postText(shop.headers, body);
    assert.equal(response.statusCode, 201, response.body);
    const rounded = (n: number, stored: string) => ({ loc: `body/data/${n}/rate`, msg: `Rounded to 18 decimal places: stored as ${stored}` });
    assert.deepEqual(response.json(), {
      message: 'Stored 7 rates',
      inserted: 7,
      updated: 0,
      warnings: [rounded(0, '1.0834'), rounded(2, '0.123456789012345679'), rounded(3, '0.123456789012345678'), rounded(4, '1000000000'), rounded(5, '0.000000001')],
      request_id: response.headers['x-request-id'],
    });
    assert.deepEqual(
      (await storedRows(shop.client_id)).map(({ quote, rate }) => [quote, rate]),
      [['CHF', '1.5'], ['DKK', '0.000000001'], ['GBP', '0.8550'], ['HUF', '1000000000'], ['NOK', '0.123456789012345678'], ['SEK', '0.123456789012345679'], ['USD', '1.0834']],
    );
    const read = await getRates(shop.headers, { base: 'EUR', quote: 'SEK', start_date: '2024-05-01', end_date: '2024-05-01' });
    assert.equal(read.statusCode, 200, read.body);
    assert.ok(read.body.includes('"rate":0.123456789012345679,'), `the rate as stored: ${read.body}`);
  });

  test('a rate above 1,000,000,000 by less than a double can tell is refused, read from the JSON text; nothing of the batch is stored', async () => {
    const shop = await service.createClient();
    // Each reads as the double 1e9, the maximum; the second and the fifth are above it.
    const texts = ['1000000000', '1000000000.0000000001', '999999999.999999999999999999', '1.0e9', '1000000000.000000000000000000001'];
    const body = `{"data":[${texts.map((text, n) => `{"date":"2024-05-0${n + 1}","base":"EUR","quote":"USD","rate":${text}}`).join(',')}]}`;
    for (const text of texts) assert.equal(Number(text), 1e9, text);
    const error = assertErrorEnvelope(await postText(shop.headers, body), 422);
    assert.deepEqual(error.errors, [
      { loc: 'body/data/1/rate', msg: 'Must be at most 1000000000', type: 'maximum' },
      { loc: 'body/data/4/rate', msg: 'Must be at most 1000000000', type: 'maximum' },
    ]);
    assert.equal(error.message, 'Invalid request: 2 problems found');
    assert.deepEqual(await storedRows(shop.client_id), []);
  });

  test('every problem of a bad batch is listed at once with its loc, and nothing of it is stored', async () => {
    const shop = await service.createClient();
    const batch = [
      rate('2024-05-01', 'EUR', 'USD', 1.0834),
      rate('2024-5-2', 'EUR', 'USD', 1.08),
      rate('2024-02-30', 'EUR', 'USD', 1.08),
      rate('2024-05-03', 'EUX', 'usd', 1.08),
      rate('2024-05-04', 'EUR', 'USD', 0),
      rate('2024-05-05', 'EUR', 'USD', -1.5),
      rate('2024-05-06', 'EUR', 'USD', 1e9 + 0.5),
      { date: '2024-05-07', base: 'EUR', quote: 'USD', rate: '1.08' },
      { date: '2024-05-08', base: 'EUR', quote: 'USD' },
      { ...rate('2024-05-09', 'EUR', 'USD', 1.08), source: 'ecb' },
      rate('2024-05-01', 'EUR', 'USD', 1.0835),
      // The reverse pair on the same day is another pair; 1e9 is the largest rate taken, 1e-9 the smallest.
      rate('2024-05-01', 'USD', 'EUR', 0.923),
      rate('2024-05-10', 'EUR', 'USD', 1e9),
      { date: '2024-05-11', base: 'EUR', quote: 'USD', rate: null },
      'EUR/USD',
      rate('2024-05-12', 'EUR', 'USD', 1e-9),
      rate('2024-05-13', 'EUR', 'USD', 1e-10),
      rate('2024-05-14', 'CHF', 'CHF', 1),
    ];
    const error = assertErrorEnvelope(await postRates(shop.headers, batch), 422);
    const byLoc = (a: { loc: string }, b: { loc: string }) => a.loc.localeCompare(b.loc, 'en', { numeric: true });
    const atLeast = 'Must be at least 0.000000001';
    assert.deepEqual([...error.errors!].sort(byLoc), [
      { loc: 'body/data/1/date', msg: 'Must be a date written YYYY-MM-DD', type: 'format' },
      { loc: 'body/data/2/date', msg: 'Must be a date written YYYY-MM-DD', type: 'format' },
      { loc: 'body/data/3/base', msg: 'Currency does not match any known currencies', type: 'enum' },
      { loc: 'body/data/3/quote', msg: 'Currency does not match any known currencies', type: 'enum' },
      { loc: 'body/data/4/rate', msg: atLeast, type: 'minimum' },
      { loc: 'body/data/5/rate', msg: atLeast, type: 'minimum' },
      { loc: 'body/data/6/rate', msg: 'Must be at most 1000000000', type: 'maximum' },
      { loc: 'body/data/7/rate', msg: 'Must be a number', type: 'type' },
      { loc: 'body/data/8/rate', msg: 'Field required', type: 'required' },
      { loc: 'body/data/9/source', msg: 'Property is not allowed here', type: 'additional_property' },
      { loc: 'body/data/10/date', msg: 'Duplicate rate in this request: a pair has one rate a day', type: 'unique' },
      { loc: 'body/data/13/rate', msg: 'Must be a number', type: 'type' },
      { loc: 'body/data/14', msg: 'Must be an object', type: 'type' },
      { loc: 'body/data/16/rate', msg: atLeast, type: 'minimum' },
      { loc: 'body/data/17/quote', msg: 'Must not be the same as base', type: 'distinct' },
    ]);
    assert.equal(error.message, 'Invalid request: 15 problems found');
    assert.deepEqual(await storedRows(shop.client_id), []);

    for (const [body, loc, type] of [
      [{ data: [] }, 'body/data', 'min_items'],
      [{}, 'body/data', 'required'],
      [{ data: 'EUR/USD' }, 'body/data', 'type'],
      [{ data: [rate('2024-05-01', 'EUR', 'USD', 1.08)], source: 'ecb' }, 'body/source', 'additional_property'],
    ] as const) {
      const refused = await service.production.inject({ method: 'POST', url: PATH, headers: shop.headers, payload: body });
      assert.deepEqual(assertErrorEnvelope(refused, 422).errors!.map((item) => [item.loc, item.type]), [[loc, type]], JSON.stringify(body));
    }
    assert.deepEqual(await storedRows(shop.client_id), []);
  });

  test('a rate of a currency in itself is refused, each one named, and nothing of the batch stored', async () => {
    const shop = await service.createClient();
    const batch = [rate('2024-05-01', 'EUR', 'USD', 1.08), rate('2024-05-01', 'EUR', 'EUR', 1), rate('2024-05-02', 'EUR', 'USD', 1.09), rate('2024-05-01', 'GBP', 'GBP', 1)];
    const error = assertErrorEnvelope(await postRates(shop.headers, batch), 422);
    assert.deepEqual(error.errors, [
      { loc: 'body/data/1/quote', msg: 'Must not be the same as base', type: 'distinct' },
      { loc: 'body/data/3/quote', msg: 'Must not be the same as base', type: 'distinct' },
    ]);
    assert.deepEqual(await storedRows(shop.client_id), []);
  });

  test('a rate of a currency in itself is listed with the other problems of its batch', async () => {
    const shop = await service.createClient();
    const batch = [rate('2024-05-01', 'EUR', 'EUR', 1), rate('2024-05-01', 'EUX', 'USD', 1.08), rate('2024-05-02', 'USD', 'USD', 0)];
    const error = assertErrorEnvelope(await postRates(shop.headers, batch), 422);
    const byLoc = (a: { loc: string }, b: { loc: string }) => a.loc.localeCompare(b.loc, 'en', { numeric: true });
    assert.deepEqual([...error.errors!].sort(byLoc), [
      { loc: 'body/data/0/quote', msg: 'Must not be the same as base', type: 'distinct' },
      { loc: 'body/data/1/base', msg: 'Currency does not match any known currencies', type: 'enum' },
      { loc: 'body/data/2/quote', msg: 'Must not be the same as base', type: 'distinct' },
      { loc: 'body/data/2/rate', msg: 'Must be at least 0.000000001', type: 'minimum' },
    ]);
    assert.equal(error.message, 'Invalid request: 4 problems found');
    assert.deepEqual(await storedRows(shop.client_id), []);
  });

  test('1,001 rates are refused for their number alone; 1,000 are stored', async () => {
    const shop = await service.createClient();
    const rates = Array.from({ length: 1001 }, (_, n) => rate(dayAfter('2020-01-01', n), 'EUR', 'USD', 1 + n / 10_000));
    const error = assertErrorEnvelope(await postRates(shop.headers, rates), 422);
    assert.deepEqual(error.errors, [{ loc: 'body/data', msg: 'Must have at most 1000 items', type: 'max_items' }]);
    assert.deepEqual(await storedRows(shop.client_id), []);

    assert.deepEqual(await store(shop.headers, rates.slice(0, 1000)), { inserted: 1000, updated: 0 });
    const rows = await storedRows(shop.client_id);
    assert.equal(rows.length, 1000);
    assert.deepEqual(rows[999], { environment: 'production', date: dayAfter('2020-01-01', 999), base: 'EUR', quote: 'USD', rate: '1.0999' });
  });

  test('a body of a million rates is refused at once, without credentials, with the UAT test credentials and with a key', async () => {
    const shop = await service.createClient();
    const item = '{"date":"2024-05-01","base":"EUR","quote":"USD","rate":1.0834}';
    const body = `{"data":[${`${item},`.repeat(999_999)}${item}]}`;
    const before = await countAllRows();
    const attempts = [
      { who: 'no credentials', app: service.production, headers: {}, status: 401, message: /^Missing Authorization and Data-Client-ID headers$/ },
      { who: 'no credentials on UAT', app: service.uat, headers: {}, status: 401, message: /^Missing Authorization and Data-Client-ID headers$/ },
      { who: 'the UAT test credentials', app: service.uat, headers: UAT_TEST_CREDENTIALS, status: 413, message: /^Request body is larger than the limit of 4194304 bytes for the UAT test credentials$/ },
      { who: "a client's key", app: service.production, headers: shop.headers, status: 413, message: /larger than/ },
    ];
    for (const { who, app, headers, status, message } of attempts) {
      const started = performance.now();
      const response = await postText(headers, body, app);
      const elapsed = performance.now() - started;
      const error = assertErrorEnvelope(response, status);
      assert.match(error.message, message, who);
      assert.ok(response.body.length < 1000, `${who}: an answer of ${response.body.length} bytes`);
      // Far under what reading and checking 63 MB takes; a generous bound for a loaded machine.
      assert.ok(elapsed < 2_000, `${who}: ${Math.round(elapsed)} ms`);
    }
    assert.equal(await countAllRows(), before);
  });

  test('credentials: none or wrong is 401, a key of scope read is 403 and stores nothing, though it reads', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [rate('2024-05-01', 'EUR', 'USD', 1.0834)]);
    const period = { base: 'EUR', quote: 'USD', start_date: '2024-05-01', end_date: '2024-05-01' };

    assertErrorEnvelope(await postRates({}, [rate('2024-05-02', 'EUR', 'USD', 1.08)]), 401);
    assertErrorEnvelope(await getRates({}, period), 401);
    const wrong = { authorization: 'trb_wrong', 'data-client-id': shop.client_id };
    assertErrorEnvelope(await postRates(wrong, [rate('2024-05-02', 'EUR', 'USD', 1.08)]), 401);
    assertErrorEnvelope(await getRates(wrong, period), 401);

    const reader = await readKeyOf(shop);
    const refused = assertErrorEnvelope(await postRates(reader, [rate('2024-05-02', 'EUR', 'USD', 1.08)]), 403);
    assert.match(refused.message, /can only read/);
    assert.deepEqual(await list(reader, 'EUR', 'USD', '2024-05-01', '2024-05-31'), [entry('2024-05-01', 'EUR', 'USD', 1.0834, 'stored')]);
    assert.equal((await storedRows(shop.client_id)).length, 1);
  });
});

describe('GET /v1/exchange-rates', () => {
  let ecb: TestClient;

  before(async () => {
    ecb = await service.createClient('Rates of the ECB');
    // The euro's rates of a Thursday, a Friday and the Monday after, sent newest first; none on
    // the weekend between. A day before and a day after the periods listed below.
    await store(ecb.headers, [
      rate('2024-03-12', 'EUR', 'USD', 1.0927),
      rate('2024-03-11', 'EUR', 'USD', 1.0925),
      rate('2024-03-11', 'EUR', 'GBP', 0.8535),
      rate('2024-03-08', 'EUR', 'USD', 1.0933),
      rate('2024-03-08', 'EUR', 'GBP', 0.85283),
      rate('2024-03-07', 'EUR', 'USD', 1.0895),
      rate('2024-03-07', 'EUR', 'GBP', 0.85505),
      rate('2024-03-06', 'EUR', 'USD', 1.0898),
    ]);
  });

  test('the stored rates of the pair as sent, oldest first; the weekend without rates and the days outside the period absent', async () => {
    assert.deepEqual(await list(ecb.headers, 'EUR', 'USD', '2024-03-07', '2024-03-11'), [
      entry('2024-03-07', 'EUR', 'USD', 1.0895, 'stored'),
      entry('2024-03-08', 'EUR', 'USD', 1.0933, 'stored'),
      entry('2024-03-11', 'EUR', 'USD', 1.0925, 'stored'),
    ]);
    assert.deepEqual(await list(ecb.headers, 'EUR', 'USD', '2024-03-09', '2024-03-10'), []);
    assert.deepEqual(await list(ecb.headers, 'EUR', 'USD', '2024-03-12', '2024-03-12'), [entry('2024-03-12', 'EUR', 'USD', 1.0927, 'stored')]);
  });

  test('the reverse pair: 1 ÷ the stored rate, rounded to 12 significant digits', async () => {
    assert.deepEqual(await list(ecb.headers, 'USD', 'EUR', '2024-03-07', '2024-03-08'), [
      // 1 ÷ 1.0895 = 2000 ÷ 2179 = 0.9178522257916…: 2179 × 0.9178522257916 = 1999.9999999998964 ≤ 2000
      // < 2179 × 0.9178522257917 = 2000.0000000001143. The 13th digit is 6: 0.917852225792.
      entry('2024-03-07', 'USD', 'EUR', 0.917852225792, 'inverse'),
      // 1 ÷ 1.0933 = 10000 ÷ 10933 = 0.9146620323790…: 10933 × 0.9146620323790 = 9999.999999999607 ≤ 10000
      // < 10933 × 0.9146620323791 = 10000.0000000007003. The 13th digit is 0: 0.914662032379.
      entry('2024-03-08', 'USD', 'EUR', 0.914662032379, 'inverse'),
    ]);
  });

  test('a cross rate through the currency both legs name, one leg stored and the other inverse', async () => {
    assert.deepEqual(await list(ecb.headers, 'GBP', 'USD', '2024-03-07', '2024-03-10'), [
      // GBP→EUR is 1 ÷ 0.85505, EUR→USD 1.0895: 1.0895 ÷ 0.85505 = 21790 ÷ 17101 = 1.274194491550…:
      // 17101 × 1.274194491550 = 21789.99999999655 ≤ 21790 < 17101 × 1.274194491551 = 21790.000000013651.
      // The 13th digit is 0: 1.27419449155.
      entry('2024-03-07', 'GBP', 'USD', 1.27419449155, 'cross', 'EUR'),
      // 1.0933 ÷ 0.85283 = 109330 ÷ 85283 = 1.281967097780…: 85283 × 1.281967097780 = 109329.99999997174
      // ≤ 109330 < 85283 × 1.281967097781 = 109330.000000057023. The 13th digit is 0: 1.28196709778.
      entry('2024-03-08', 'GBP', 'USD', 1.28196709778, 'cross', 'EUR'),
    ]);
    assert.deepEqual(await list(ecb.headers, 'USD', 'GBP', '2024-03-07', '2024-03-07'), [
      // USD→EUR is 1 ÷ 1.0895, EUR→GBP 0.85505: 0.85505 ÷ 1.0895 = 17101 ÷ 21790 = 0.7848095456631…:
      // 21790 × 0.7848095456631 = 17100.999999998949 ≤ 17101 < 21790 × 0.7848095456632 = 17101.000000001128.
      // The 13th digit is 1: 0.784809545663.
      entry('2024-03-07', 'USD', 'GBP', 0.784809545663, 'cross', 'EUR'),
    ]);
  });

  test('a cross rate with its legs either way: stored × stored, stored × inverse, inverse × stored, inverse × inverse', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [
      rate('2024-06-03', 'AUD', 'CHF', 0.6),
      rate('2024-06-03', 'CHF', 'NZD', 1.8),
      rate('2024-06-04', 'AUD', 'CHF', 0.6),
      rate('2024-06-04', 'NZD', 'CHF', 0.5),
      rate('2024-06-05', 'CHF', 'AUD', 1.6),
      rate('2024-06-05', 'CHF', 'NZD', 1.8),
    ]);
    assert.deepEqual(await list(shop.headers, 'AUD', 'NZD', '2024-06-03', '2024-06-05'), [
      // 0.6 × 1.8 = 1.08.
      entry('2024-06-03', 'AUD', 'NZD', 1.08, 'cross', 'CHF'),
      // 0.6 × (1 ÷ 0.5) = 0.6 × 2 = 1.2.
      entry('2024-06-04', 'AUD', 'NZD', 1.2, 'cross', 'CHF'),
      // (1 ÷ 1.6) × 1.8 = 0.625 × 1.8 = 1.125.
      entry('2024-06-05', 'AUD', 'NZD', 1.125, 'cross', 'CHF'),
    ]);
    assert.deepEqual(await list(shop.headers, 'NZD', 'AUD', '2024-06-03', '2024-06-05'), [
      // (1 ÷ 1.8) × (1 ÷ 0.6) = 1 ÷ 1.08 = 25 ÷ 27 = 0.925925925925|925…: the 13th digit is 9, 0.925925925926.
      entry('2024-06-03', 'NZD', 'AUD', 0.925925925926, 'cross', 'CHF'),
      // 0.5 × (1 ÷ 0.6) = 5 ÷ 6 = 0.833333333333|333…: the 13th digit is 3, 0.833333333333.
      entry('2024-06-04', 'NZD', 'AUD', 0.833333333333, 'cross', 'CHF'),
      // (1 ÷ 1.8) × 1.6 = 16 ÷ 18 = 8 ÷ 9 = 0.888888888888|888…: the 13th digit is 8, 0.888888888889.
      entry('2024-06-05', 'NZD', 'AUD', 0.888888888889, 'cross', 'CHF'),
    ]);
  });

  test('the stored rate beats the inverse, which beats a cross rate', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [
      rate('2024-04-01', 'GBP', 'USD', 1.2625),
      rate('2024-04-01', 'USD', 'GBP', 0.79),
      rate('2024-04-02', 'USD', 'GBP', 0.8),
      ...['2024-04-01', '2024-04-02', '2024-04-03'].flatMap((day) => [rate(day, 'EUR', 'USD', 1.08), rate(day, 'EUR', 'GBP', 0.86)]),
    ]);
    assert.deepEqual(await list(shop.headers, 'GBP', 'USD', '2024-04-01', '2024-04-03'), [
      // Stored, though 1 ÷ 0.79 = 100 ÷ 79 = 1.26582278481 and 1.08 ÷ 0.86 = 1.25581395349 could be derived.
      entry('2024-04-01', 'GBP', 'USD', 1.2625, 'stored'),
      // 1 ÷ 0.8 = 1.25, though a cross rate could be derived.
      entry('2024-04-02', 'GBP', 'USD', 1.25, 'inverse'),
      // 1.08 ÷ 0.86 = 54 ÷ 43 = 1.255813953488…: 43 × 1.255813953488 = 53.999999999984 ≤ 54
      // < 43 × 1.255813953489 = 54.000000000027. The 13th digit is 8: 1.25581395349.
      entry('2024-04-03', 'GBP', 'USD', 1.25581395349, 'cross', 'EUR'),
    ]);
    assert.deepEqual(await list(shop.headers, 'USD', 'GBP', '2024-04-01', '2024-04-03'), [
      // Stored, though 1 ÷ 1.2625 could be derived.
      entry('2024-04-01', 'USD', 'GBP', 0.79, 'stored'),
      entry('2024-04-02', 'USD', 'GBP', 0.8, 'stored'),
      // 0.86 ÷ 1.08 = 43 ÷ 54 = 0.7962962962962…: 54 × 0.7962962962962 = 42.9999999999948 ≤ 43
      // < 54 × 0.7962962962963 = 43.0000000000002. The 13th digit is 2: 0.796296296296.
      entry('2024-04-03', 'USD', 'GBP', 0.796296296296, 'cross', 'EUR'),
    ]);
  });

  test('a cross rate goes through the first currency by its code of those that have both legs that day', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [
      // Sent last first: through USD 0.66 × 1.65 = 1.089.
      ...['2024-06-10', '2024-06-11', '2024-06-12'].flatMap((day) => [rate(day, 'AUD', 'USD', 0.66), rate(day, 'USD', 'NZD', 1.65)]),
      // Through EUR: 0.61 × 1.8 = 1.098.
      ...['2024-06-10', '2024-06-11'].flatMap((day) => [rate(day, 'AUD', 'EUR', 0.61), rate(day, 'EUR', 'NZD', 1.8)]),
      // Through CHF, with an inverse leg, though EUR and USD have stored legs: (1 ÷ 1.6) × 1.8 = 0.625 × 1.8 = 1.125.
      rate('2024-06-10', 'CHF', 'AUD', 1.6),
      rate('2024-06-10', 'CHF', 'NZD', 1.8),
      // CAD has one leg only; BRL has its two on different days: neither is a way.
      rate('2024-06-10', 'AUD', 'CAD', 0.9),
      rate('2024-06-10', 'AUD', 'BRL', 3.3),
      rate('2024-06-11', 'BRL', 'NZD', 0.33),
    ]);
    assert.deepEqual(await list(shop.headers, 'AUD', 'NZD', '2024-06-10', '2024-06-12'), [
      entry('2024-06-10', 'AUD', 'NZD', 1.125, 'cross', 'CHF'),
      entry('2024-06-11', 'AUD', 'NZD', 1.098, 'cross', 'EUR'),
      entry('2024-06-12', 'AUD', 'NZD', 1.089, 'cross', 'USD'),
    ]);
  });

  test('through the same currency, a leg stored both ways is taken as stored, not inverse: the legs with fewer inverses', async () => {
    const shop = await service.createClient();
    // Both ways of a leg stored, and not each other's inverse (1 ÷ 0.6 ≠ 1.6; 1 ÷ 1.8 ≠ 0.5), so
    // that each choice of legs gives its own rate. The inverse ways are sent first.
    await store(shop.headers, [
      ...['2024-06-17', '2024-06-18', '2024-06-19'].map((day) => rate(day, 'CHF', 'AUD', 1.6)),
      rate('2024-06-19', 'NZD', 'CHF', 0.5),
      rate('2024-06-18', 'NZD', 'CHF', 0.5),
      ...['2024-06-17', '2024-06-18', '2024-06-19'].map((day) => rate(day, 'AUD', 'CHF', 0.6)),
      rate('2024-06-17', 'CHF', 'NZD', 1.8),
      rate('2024-06-19', 'CHF', 'NZD', 1.8),
    ]);
    assert.deepEqual(await list(shop.headers, 'AUD', 'NZD', '2024-06-17', '2024-06-19'), [
      // AUD→CHF stored (0.6), not 1 ÷ 1.6 = 0.625; CHF→NZD stored: 0.6 × 1.8 = 1.08, not 0.625 × 1.8 = 1.125.
      entry('2024-06-17', 'AUD', 'NZD', 1.08, 'cross', 'CHF'),
      // CHF→NZD only as 1 ÷ 0.5 = 2: 0.6 × 2 = 1.2 (one inverse), not 0.625 × 2 = 1.25 (two).
      entry('2024-06-18', 'AUD', 'NZD', 1.2, 'cross', 'CHF'),
      // Both legs stored both ways: 0.6 × 1.8 = 1.08, not 1.2, 1.125 or 1.25.
      entry('2024-06-19', 'AUD', 'NZD', 1.08, 'cross', 'CHF'),
    ]);
    assert.deepEqual(await list(shop.headers, 'NZD', 'AUD', '2024-06-17', '2024-06-19'), [
      // NZD→CHF only as 1 ÷ 1.8; CHF→AUD stored (1.6), not 1 ÷ 0.6: 1.6 ÷ 1.8 = 8 ÷ 9 = 0.888888888888|8…,
      // 0.888888888889 (one inverse), not (1 ÷ 1.8) × (1 ÷ 0.6) = 25 ÷ 27 (two).
      entry('2024-06-17', 'NZD', 'AUD', 0.888888888889, 'cross', 'CHF'),
      // 0.5 × 1.6 = 0.8, both stored.
      entry('2024-06-18', 'NZD', 'AUD', 0.8, 'cross', 'CHF'),
      entry('2024-06-19', 'NZD', 'AUD', 0.8, 'cross', 'CHF'),
    ]);
  });

  test('a derived rate is the exact quotient of stored rates rounded once, even a hair from half way', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [rate('2024-06-03', 'CHF', 'SEK', 3), rate('2024-06-03', 'CHF', 'NOK', 1.50000000045), rate('2024-06-03', 'USD', 'CHF', 0.132261)]);
    // SEK→CHF is 1 ÷ 3, CHF→NOK 1.50000000045: 1.50000000045 ÷ 3 = 0.50000000015 exactly, 11
    // significant digits, kept. (Rounding 1 ÷ 3 first, to 0.333333333333, gives 0.50000000014949999999985,
    // then 0.500000000149.)
    assert.deepEqual(await list(shop.headers, 'SEK', 'NOK', '2024-06-03', '2024-06-03'), [entry('2024-06-03', 'SEK', 'NOK', 0.50000000015, 'cross', 'CHF')]);
    // 1 ÷ 0.132261 = 1000000 ÷ 132261 = 7.560807796704|99996…: 132261 × 7.560807796704 = 999999.999999867744 ≤ 1000000
    // < 132261 × 7.560807796705 = 1000000.000000000005, just below half way between 7.56080779670 and
    // 7.56080779671: 7.5608077967. (The quotient to 16 places, 7.5608077967050000, would round up.)
    assert.deepEqual(await list(shop.headers, 'CHF', 'USD', '2024-06-03', '2024-06-03'), [entry('2024-06-03', 'CHF', 'USD', 7.5608077967, 'inverse')]);
  });

  test('rates at the ends of what is taken derive rates that are numbers, to 12 significant digits however small', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [
      rate('2024-07-01', 'AUD', 'CHF', 1e9),
      rate('2024-07-01', 'CHF', 'NZD', 1e9),
      rate('2024-07-02', 'AUD', 'CHF', 1e-9),
      rate('2024-07-02', 'CHF', 'NZD', 1e-9),
      rate('2024-07-03', 'AUD', 'CHF', 1e-9),
      rate('2024-07-03', 'NZD', 'CHF', 3e8),
    ]);
    assert.deepEqual(
      (await storedRows(shop.client_id)).map(({ date, base, rate }) => [date, base, rate]),
      [['2024-07-01', 'AUD', '1000000000'], ['2024-07-02', 'AUD', '0.000000001'], ['2024-07-03', 'AUD', '0.000000001'], ['2024-07-01', 'CHF', '1000000000'], ['2024-07-02', 'CHF', '0.000000001'], ['2024-07-03', 'NZD', '300000000']],
    );
    assert.deepEqual(await list(shop.headers, 'AUD', 'NZD', '2024-07-01', '2024-07-03'), [
      // 10^9 × 10^9.
      entry('2024-07-01', 'AUD', 'NZD', 1e18, 'cross', 'CHF'),
      // 10^-9 × 10^-9, not rounded to 0.
      entry('2024-07-02', 'AUD', 'NZD', 1e-18, 'cross', 'CHF'),
      // 10^-9 ÷ (3 × 10^8) = (1 ÷ 3) × 10^-17 = 3.33333333333|33… × 10^-18.
      entry('2024-07-03', 'AUD', 'NZD', 3.33333333333e-18, 'cross', 'CHF'),
    ]);
    assert.deepEqual(await list(shop.headers, 'NZD', 'AUD', '2024-07-01', '2024-07-03'), [
      entry('2024-07-01', 'NZD', 'AUD', 1e-18, 'cross', 'CHF'),
      entry('2024-07-02', 'NZD', 'AUD', 1e18, 'cross', 'CHF'),
      // 3 × 10^8 ÷ 10^-9.
      entry('2024-07-03', 'NZD', 'AUD', 3e17, 'cross', 'CHF'),
    ]);
    assert.deepEqual(await list(shop.headers, 'CHF', 'AUD', '2024-07-01', '2024-07-03'), [
      entry('2024-07-01', 'CHF', 'AUD', 1e-9, 'inverse'),
      entry('2024-07-02', 'CHF', 'AUD', 1e9, 'inverse'),
      entry('2024-07-03', 'CHF', 'AUD', 1e9, 'inverse'),
    ]);
    // Numbers in the JSON text, written out.
    const read = await getRates(shop.headers, { base: 'AUD', quote: 'NZD', start_date: '2024-07-01', end_date: '2024-07-03' });
    assert.deepEqual(
      [...read.body.matchAll(/"rate":([^,}]*)/g)].map((match) => match[1]),
      ['1000000000000000000', '0.000000000000000001', '0.00000000000000000333333333333'],
    );
    // Below the smallest rate taken.
    const refused = assertErrorEnvelope(await postRates(shop.headers, [rate('2024-07-04', 'AUD', 'CHF', 1e-10)]), 422);
    assert.deepEqual(refused.errors, [{ loc: 'body/data/0/rate', msg: 'Must be at least 0.000000001', type: 'minimum' }]);
  });

  test('a period of 366 days counting both ends is listed; 367 days, an end before the start, base = quote and an unknown parameter are 422', async () => {
    const shop = await service.createClient();
    await store(shop.headers, [rate('2024-01-01', 'EUR', 'USD', 1.1), rate('2024-12-31', 'EUR', 'USD', 1.04), rate('2025-01-01', 'EUR', 'USD', 1.03)]);
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-01-01', '2024-12-31'), [
      entry('2024-01-01', 'EUR', 'USD', 1.1, 'stored'),
      entry('2024-12-31', 'EUR', 'USD', 1.04, 'stored'),
    ]);
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-12-31', '2024-12-31'), [entry('2024-12-31', 'EUR', 'USD', 1.04, 'stored')]);
    assert.deepEqual(await list(shop.headers, 'EUR', 'CHF', '2024-01-01', '2024-12-31'), [], 'a pair without any rate');

    const period = { base: 'EUR', quote: 'USD', start_date: '2024-01-01', end_date: '2024-12-31' };
    const refusals: [Query, string[]][] = [
      [{ ...period, end_date: '2025-01-01' }, ['query/end_date']],
      [{ ...period, start_date: '2024-03-08', end_date: '2024-03-07' }, ['query/end_date']],
      [{ ...period, quote: 'EUR' }, ['query/quote']],
      [{ ...period, quote: 'EUR', start_date: '2024-03-08', end_date: '2024-03-07' }, ['query/quote', 'query/end_date']],
      [{ ...period, currency: 'USD' }, ['query/currency']],
      [{ ...period, base: 'EUX' }, ['query/base']],
      [{ ...period, quote: 'usd' }, ['query/quote']],
      [{ ...period, start_date: '2024-02-30' }, ['query/start_date']],
      [{ ...period, end_date: '2024-12-31T00:00:00Z' }, ['query/end_date']],
      ...(['base', 'quote', 'start_date', 'end_date'] as const).map((name): [Query, string[]] => {
        const { [name]: _left, ...others } = period;
        return [others, [`query/${name}`]];
      }),
    ];
    for (const [query, locs] of refusals) {
      const error = assertErrorEnvelope(await getRates(shop.headers, query), 422);
      assert.deepEqual(error.errors!.map(({ loc }) => loc).sort(), [...locs].sort(), JSON.stringify(query));
    }
  });
});

describe('rates are per client and per environment', () => {
  test("a client never sees another's rates, nor derives through them", async () => {
    const [a, b] = [await service.createClient(), await service.createClient()];
    assert.deepEqual(await store(a.headers, [rate('2024-05-01', 'EUR', 'USD', 1.08), rate('2024-05-01', 'EUR', 'GBP', 0.86)]), { inserted: 2, updated: 0 });
    assert.deepEqual(await list(b.headers, 'EUR', 'USD', '2024-05-01', '2024-05-01'), []);
    assert.deepEqual(await list(b.headers, 'USD', 'EUR', '2024-05-01', '2024-05-01'), []);

    // The same pair and day: new for b, and a's rate unchanged.
    assert.deepEqual(await store(b.headers, [rate('2024-05-01', 'EUR', 'USD', 1.25), rate('2024-05-01', 'CHF', 'GBP', 1.1)]), { inserted: 2, updated: 0 });
    assert.deepEqual(await list(a.headers, 'EUR', 'USD', '2024-05-01', '2024-05-01'), [entry('2024-05-01', 'EUR', 'USD', 1.08, 'stored')]);
    assert.deepEqual(await list(b.headers, 'USD', 'EUR', '2024-05-01', '2024-05-01'), [entry('2024-05-01', 'USD', 'EUR', 0.8, 'inverse')]);
    // b has no EUR→GBP leg: none of a's is taken.
    assert.deepEqual(await list(b.headers, 'USD', 'GBP', '2024-05-01', '2024-05-01'), []);
    // a has no CHF leg.
    assert.deepEqual(await list(a.headers, 'CHF', 'USD', '2024-05-01', '2024-05-01'), []);
    assert.deepEqual((await storedRows(a.client_id)).map(({ quote, rate }) => [quote, rate]), [['GBP', '0.86'], ['USD', '1.08']]);
    assert.deepEqual((await storedRows(b.client_id)).map(({ base, rate }) => [base, rate]), [['CHF', '1.1'], ['EUR', '1.25']]);
  });

  test('the UAT port keeps its rates apart from production, under the same key', async () => {
    const shop = await service.createClient();
    assert.deepEqual(await store(shop.headers, [rate('2024-05-01', 'EUR', 'USD', 1.08)], service.production), { inserted: 1, updated: 0 });
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-05-01', '2024-05-01', service.uat), []);
    assert.deepEqual(await store(shop.headers, [rate('2024-05-01', 'EUR', 'USD', 1.25), rate('2024-05-01', 'EUR', 'GBP', 0.8)], service.uat), { inserted: 2, updated: 0 });
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-05-01', '2024-05-01', service.production), [entry('2024-05-01', 'EUR', 'USD', 1.08, 'stored')]);
    assert.deepEqual(await list(shop.headers, 'EUR', 'USD', '2024-05-01', '2024-05-01', service.uat), [entry('2024-05-01', 'EUR', 'USD', 1.25, 'stored')]);
    // UAT's EUR→GBP leg is no leg on production: 1.25 ÷ 0.8 = 1.5625 on UAT only.
    assert.deepEqual(await list(shop.headers, 'GBP', 'USD', '2024-05-01', '2024-05-01', service.uat), [entry('2024-05-01', 'GBP', 'USD', 1.5625, 'cross', 'EUR')]);
    assert.deepEqual(await list(shop.headers, 'GBP', 'USD', '2024-05-01', '2024-05-01', service.production), []);
    assert.deepEqual(
      (await storedRows(shop.client_id)).map(({ environment, quote, rate }) => [environment, quote, rate]),
      [['production', 'USD', '1.08'], ['uat', 'GBP', '0.8'], ['uat', 'USD', '1.25']],
    );
  });

  test('the UAT test credentials are answered as if stored, list nothing, and are validated alike; on production they are refused', async () => {
    const before = await countAllRows();
    const rates = [rate('2024-05-01', 'EUR', 'USD', 1.08), rate('2024-05-01', 'EUR', 'GBP', 0.86), rate('2024-05-02', 'EUR', 'USD', 1.09)];
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(await store(UAT_TEST_CREDENTIALS, rates, service.uat), { inserted: 3, updated: 0 });
    }
    assert.deepEqual(await list(UAT_TEST_CREDENTIALS, 'EUR', 'USD', '2024-05-01', '2024-05-31', service.uat), []);
    assert.deepEqual(await list(UAT_TEST_CREDENTIALS, 'GBP', 'USD', '2024-05-01', '2024-05-31', service.uat), []);
    const invalid = assertErrorEnvelope(await postRates(UAT_TEST_CREDENTIALS, [rate('2024-05-01', 'EUR', 'EUX', 0)], service.uat), 422);
    assert.deepEqual(invalid.errors!.map(({ loc }) => loc).sort(), ['body/data/0/quote', 'body/data/0/rate']);
    assertErrorEnvelope(await getRates(UAT_TEST_CREDENTIALS, { base: 'EUR', quote: 'USD', start_date: '2024-05-02', end_date: '2024-05-01' }, service.uat), 422);

    assertErrorEnvelope(await postRates(UAT_TEST_CREDENTIALS, rates, service.production), 401);
    assertErrorEnvelope(await getRates(UAT_TEST_CREDENTIALS, { base: 'EUR', quote: 'USD', start_date: '2024-05-01', end_date: '2024-05-01' }, service.production), 401);
    assert.equal(await countAllRows(), before);
  });
});

describe('the typed client', () => {
  let address: string;
  /** The bodies the client POSTed, parsed. */
  const posted: { data: ExchangeRate[] }[] = [];
  const counting: typeof fetch = async (input, init) => {
    if (init?.method === 'POST') {
      const body = init.body;
      posted.push(JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body as Uint8Array)) as { data: ExchangeRate[] });
    }
    return fetch(input, init);
  };
  const clientOf = (client: TestClient) => new Tributary({ url: address, apiKey: client.api_key, clientId: client.client_id, baseDelayMs: 5, fetch: counting });

  before(async () => {
    address = await service.production.listen({ port: 0, host: '127.0.0.1' });
  });

  test('upsert sends 2,500 rates in 3 requests of at most 1,000 and adds up what they stored; list reads them', async () => {
    const shop = await service.createClient();
    const trb = clientOf(shop);
    const pairs = [['EUR', 'USD'], ['EUR', 'GBP'], ['EUR', 'JPY'], ['EUR', 'CHF'], ['EUR', 'SEK']] as const;
    // 500 days from 2023-01-01 of 5 pairs: the n-th day's rates are 1.nnnn, 2.nnnn, … 5.nnnn.
    const rates = Array.from({ length: 500 }, (_, n) => pairs.map(([base, quote], p) => rate(dayAfter('2023-01-01', n), base, quote, ((p + 1) * 10_000 + n) / 10_000))).flat();
    assert.equal(rates.length, 2500);

    posted.length = 0;
    const stored = await trb.exchangeRates.upsert(rates);
    assert.deepEqual([stored.inserted, stored.updated], [2500, 0]);
    assert.equal(stored.request_ids.length, 3);
    assert.equal(new Set(stored.request_ids).size, 3);
    for (const id of stored.request_ids) assert.match(id, UUID);
    assert.deepEqual(posted.map((body) => body.data.length), [1000, 1000, 500]);
    assert.deepEqual(posted.flatMap((body) => body.data), rates, 'every rate sent once, in order');
    assert.equal((await storedRows(shop.client_id)).length, 2500);

    // The first 1,001 again, changed: 2 requests, all updated.
    posted.length = 0;
    const again = await trb.exchangeRates.upsert(rates.slice(0, 1001).map((sent) => ({ ...sent, rate: sent.rate + 1 })));
    assert.deepEqual([again.inserted, again.updated, again.request_ids.length], [0, 1001, 2]);
    assert.deepEqual(posted.map((body) => body.data.length), [1000, 1]);
    assert.deepEqual(again.warnings, []);

    // A double written with more than 18 decimal places (0.000012345678901234567) is stored rounded, said at its place in the whole input.
    const kroner = Array.from({ length: 1000 }, (_, n) => rate(dayAfter('2020-01-01', n), 'EUR', 'DKK', 7.45));
    const fine = await trb.exchangeRates.upsert([...kroner, rate('2023-01-01', 'EUR', 'NOK', Number('1.2345678901234567e-5'))]);
    assert.deepEqual(fine.warnings.map((warning) => warning.loc), ['body/data/1000/rate']);

    const year = await trb.exchangeRates.list({ base: 'EUR', quote: 'USD', start_date: '2023-01-01', end_date: '2023-12-31' });
    assert.equal(year.data.length, 365);
    assert.ok(year.data.every((listed) => listed.source === 'stored'));
    // Day 0 was changed (2.0000), day 201 is the first of EUR/USD left as sent: 1 + 201 ÷ 10,000.
    assert.deepEqual(year.data[0], entry('2023-01-01', 'EUR', 'USD', 2, 'stored'));
    assert.deepEqual(year.data[201], entry('2023-07-21', 'EUR', 'USD', 1.0201, 'stored'));
    // Day 300 of EUR/GBP: 2.03; GBP→USD through EUR is 1.03 ÷ 2.03 = 103 ÷ 203 = 0.5073891625615…:
    // 203 × 0.5073891625615 = 102.9999999999845 ≤ 103 < 203 × 0.5073891625616 = 103.0000000000048. The 13th digit is 5: 0.507389162562.
    const crossed = await trb.exchangeRates.list({ base: 'GBP', quote: 'USD', start_date: '2023-10-28', end_date: '2023-10-28' });
    assert.deepEqual(crossed.data, [entry('2023-10-28', 'GBP', 'USD', 0.507389162562, 'cross', 'EUR')]);
  });

  test("a refused batch is a TributaryError pointing into the whole input; the batches before it are stored", async () => {
    const shop = await service.createClient();
    const trb = clientOf(shop);
    const rates = Array.from({ length: 1500 }, (_, n) => rate(dayAfter('2020-01-01', n), 'EUR', 'USD', 1.1));
    rates[1300] = { ...rates[1300]!, quote: 'EUX' };
    const error = await trb.exchangeRates.upsert(rates).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError, String(error));
    assert.equal(error.status, 422);
    assert.match(error.request_id!, UUID);
    assert.match(error.message, /the 1000 before were stored/);
    assert.ok(error.errors!.some(({ loc }) => loc === 'body/data/1300/quote'), JSON.stringify(error.errors));
    assert.equal((await storedRows(shop.client_id)).length, 1000);

    const refused = await trb.exchangeRates.list({ base: 'EUR', quote: 'EUR', start_date: '2020-01-01', end_date: '2020-01-31' }).catch((caught: unknown) => caught);
    assert.ok(refused instanceof TributaryError);
    assert.deepEqual([refused.status, refused.errors!.map(({ loc }) => loc)], [422, ['query/quote']]);
  });
});
