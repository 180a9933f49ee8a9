import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Tributary } from '../src/client/index.js';
import { dryRunUrl, importFile, type ImportCommandOptions } from '../src/importer/index.js';
import type { Checkpoint, Summary } from '../src/importer/run.js';
import { jsonArrayItems, ndjsonItems } from '../src/importer/read.js';
import { emailHash } from '../src/importer/shopify.js';
import { cliError, hourlySpend, minimalOrder, runCli, startService, tempDir, type TestClient } from './helpers.js';

const service = await startService();
const url = await service.production.listen({ port: 0, host: '127.0.0.1' });
const uatUrl = await service.uat.listen({ port: 0, host: '127.0.0.1' });
const work = tempDir();
after(async () => {
  await service.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const fixture = (name: string) => {
  // Copied, so that the reject and checkpoint files land beside the copy, not in the repository.
  const copy = path.join(fs.mkdtempSync(path.join(work, 'import-')), name);
  fs.copyFileSync(new URL(`fixtures/${name}`, import.meta.url), copy);
  return copy;
};
const rejectsOf = (file: string) =>
  fs
    .readFileSync(`${file}.rejects.ndjson`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { line: number; record: Record<string, unknown>; errors: { loc?: string; msg: string }[] });

let shop: TestClient;
let trb: Tributary;
let options: ImportCommandOptions;
before(async () => {
  shop = await service.createClient();
  trb = new Tributary({ url, apiKey: shop.api_key, clientId: shop.client_id });
  options = { url, apiKey: shop.api_key, clientId: shop.client_id, concurrency: 4, resume: false, dryRun: false };
});

/** The app behind a proxy that answers late each request whose body holds `marker`: a batch slow to be acknowledged. */
async function slowProxy(target: string, marker: string) {
  const proxy = { url: '', delayed: 0, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (body.includes(marker)) {
      proxy.delayed++;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const headers = Object.fromEntries(['authorization', 'data-client-id', 'content-type', 'x-request-id'].flatMap((name) => (request.headers[name] ? [[name, String(request.headers[name])]] : [])));
    const answer = await fetch(`${target}${request.url}`, { method: request.method, headers, body: body.length > 0 ? body : undefined });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

const pick = <T extends object>(object: T, ...keys: (keyof T)[]) => Object.fromEntries(keys.map((key) => [key, object[key]]));
const allOrders = async (start: string, end: string) => (await trb.orders.list({ start_date: start, end_date: end })).data;

describe('orders', () => {
  test("Shopify's orders export: one order of each group of rows, mapped as docs/importing.md says; a refused one in the reject file", async () => {
    const file = fixture('shopify-orders.csv');
    const summary = await importFile('orders', file, options);
    assert.deepEqual(
      { format: summary.format, sent: summary.sent, inserted: summary.inserted, updated: summary.updated, rejected: summary.rejected },
      { format: 'shopify', sent: 4, inserted: 4, updated: 0, rejected: 1 },
    );
    const orders = new Map((await allOrders('2024-03-01', '2024-03-31')).map((order) => [order.order_id, order]));
    assert.deepEqual([...orders.keys()].sort(), ['1001', '1002', '1003', '1004']);

    const jane = orders.get('1001')!;
    assert.equal(jane.customer_id, emailHash('jane.doe@example.com'));
    assert.match(jane.customer_id, /^[0-9a-f]{64}$/);
    assert.equal(jane.hashed_customer_email, jane.customer_id);
    assert.equal(jane.customer_email, undefined);
    assert.equal(jane.time_of_purchase, '2024-03-08T01:23:45-0800');
    assert.deepEqual([jane.currency, jane.purchase_total, jane.tax, jane.shipping_cost, jane.discount_amount], ['USD', 71.24, 5.05, 4.99, 4.8]);
    assert.deepEqual(jane.discount_codes, ['SPRING10']);
    assert.deepEqual(jane.order_tags, ['wholesale', 'vip']);
    assert.deepEqual(jane.products, [
      { id: 'TEE-BLU-M', name: 'Organic Cotton Tee - Blue / M', quantity: 2, price: 24 },
      { id: 'TOTE-NAT', name: 'Canvas Tote', quantity: 1, price: 18 },
    ]);
    assert.deepEqual(jane.customer_shipping_address, { address1: '1 Main St', city: 'Springfield', state: 'OR', zip: '97477', country_code: 'USA' });
    assert.deepEqual(jane.alternate_order_ids, [{ type: 'shopify', id: '5630275993902' }]);
    assert.equal(jane.customer_name, 'Jane Doe');

    const refunded = orders.get('1002')!;
    assert.deepEqual(
      refunded.refunds!.map(({ product_id, quantity, refund_amount, refund_made_at }) => [product_id, quantity, refund_amount, refund_made_at]),
      [
        ['BEANIE-GRY', 1, 38.75, '2024-03-12T09:30:00+0100'],
        ['SOCKS-3', 1, 22.15, '2024-03-12T09:30:00+0100'],
      ],
    );
    assert.equal(refunded.customer_shipping_address!.country_code, 'DEU');
    assert.deepEqual(orders.get('1003')!.refunds!.map(({ quantity, refund_amount }) => [quantity, refund_amount]), [[0, 12.5]]);
    const guest = orders.get('1004')!;
    assert.equal(guest.customer_id, 'guest-order-1004');
    assert.deepEqual(guest.products, [{ id: 'Gift Card', name: 'Gift Card', quantity: 1, price: 50 }]);

    const [kosovo, ...others] = rejectsOf(file);
    assert.equal(others.length, 0);
    assert.equal(kosovo!.record.order_id, '1005');
    assert.equal(kosovo!.line, 8);
    assert.deepEqual(kosovo!.errors.map((error) => error.loc), ['body/4/customer_shipping_address/country_code']);

    const again = await importFile('orders', file, options);
    assert.deepEqual([again.inserted, again.updated, again.rejected], [0, 4, 1]);
  });

  test('NDJSON and a JSON array: the valid records stored, the others rejected with the reasons, the batch going on', async () => {
    const ndjson = fixture('orders.ndjson');
    const lines = await importFile('orders', ndjson, options);
    assert.deepEqual([lines.format, lines.sent, lines.inserted, lines.rejected], ['ndjson', 3, 3, 1]);
    const [lowercase] = rejectsOf(ndjson);
    assert.deepEqual([lowercase!.line, lowercase!.record.order_id, lowercase!.errors[0]!.loc], [3, 'n-3', 'body/2/currency']);

    const array = fixture('orders.json');
    const items = await importFile('orders', array, options);
    assert.deepEqual([items.format, items.sent, items.rejected], ['json-array', 2, 1]);
    const [empty] = rejectsOf(array);
    assert.equal(empty!.record.order_id, 'a-3');
    assert.match(empty!.errors[0]!.loc!, /products/);
    const stored = (await allOrders('2024-03-08', '2024-03-08')).map((order) => order.order_id);
    for (const id of ['n-1', 'n-2', 'n-4', 'a-1', 'a-2']) assert.ok(stored.includes(id), id);
    assert.ok(!stored.includes('n-3') && !stored.includes('a-3'));
  });
});

test('a UTF-8 byte order mark (as Windows tools write) is no part of the first record: NDJSON, JSON arrays, CSV of API fields, Shopify', async () => {
  const withMark = (name: string) => {
    const file = fixture(name);
    fs.writeFileSync(file, `\uFEFF${fs.readFileSync(file, 'utf8')}`);
    return file;
  };
  // A client of its own: these fixtures' records are the other tests' too.
  const fresh = await service.createClient();
  const results = [];
  for (const [kind, name] of [['orders', 'orders.ndjson'], ['orders', 'orders.json'], ['orders', 'shopify-orders.csv'], ['spend', 'spend-hourly.csv'], ['touchpoints', 'touchpoints.csv']] as const) {
    const file = withMark(name);
    const summary = await importFile(kind, file, { ...options, apiKey: fresh.api_key, clientId: fresh.client_id });
    results.push([name, summary.format, summary.sent, summary.rejected, rejectsOf(file).map((reject) => reject.line)]);
  }
  assert.deepEqual(results, [
    ['orders.ndjson', 'ndjson', 3, 1, [3]],
    ['orders.json', 'json-array', 2, 1, [76]],
    ['shopify-orders.csv', 'shopify', 4, 1, [8]],
    ['spend-hourly.csv', 'csv', 3, 1, [5]],
    ['touchpoints.csv', 'csv', 3, 1, [5]],
  ]);
});

test('a JSON array is cut into its items whatever the chunks: brackets, quotes and escapes inside strings, multi-byte characters', async () => {
  const items = [{ a: 'x]}{["\\"', b: [1, { c: 'é😀' }] }, { d: '\n' }, {}];
  const file = path.join(work, 'tricky.json');
  fs.writeFileSync(file, ` \n[\n${items.map((item) => JSON.stringify(item)).join(' ,\n')}\n]\n`);
  for (const highWaterMark of [1, 3, 7, 64 * 1024]) {
    const read = [];
    for await (const item of jsonArrayItems(fs.createReadStream(file, { highWaterMark }))) read.push(item);
    assert.deepEqual(read.map((item) => JSON.parse(item.json!.toString())), items, `chunks of ${highWaterMark}`);
    assert.deepEqual(read.map((item) => item.line), [3, 4, 5]);
  }
});

test('NDJSON is cut into lines whatever the chunks, as readline cut it: \\r\\n, a lone \\r, a byte order mark, multi-byte characters', async () => {
  const file = path.join(work, 'tricky.ndjson');
  fs.writeFileSync(file, '\uFEFF{"a":1}\r\n\r\n{"b":"é😀"}\r{"c":2}\n  \n[1]\n{"d":3}');
  for (const highWaterMark of [1, 2, 3, 7, 64 * 1024]) {
    const read = [];
    for await (const item of ndjsonItems(fs.createReadStream(file, { highWaterMark }))) read.push([item.line, item.json!.toString(), item.problem]);
    assert.deepEqual(
      read,
      [
        [1, '{"a":1}', undefined],
        [3, '{"b":"é😀"}', undefined],
        [4, '{"c":2}', undefined],
        [6, '[1]', 'Not a JSON object'],
        [7, '{"d":3}', undefined],
      ],
      `chunks of ${highWaterMark}`,
    );
  }
});

describe('spend', () => {
  test('a Meta Ads Manager daily report, by its headers', async () => {
    const summary = await importFile('spend', fixture('meta-ads-daily.csv'), options);
    assert.deepEqual([summary.format, summary.target, summary.sent, summary.inserted, summary.rejected], ['meta', 'spend_daily', 4, 4, 0]);
    const { data } = await trb.spend.daily.list({ platform_account_id: '1029384756', date_start: '2024-03-01', date_end: '2024-03-02' });
    const first = data.find((record) => record.date === '2024-03-01' && record.campaign_id === '120208765432100001')!;
    assert.deepEqual(
      [first.platform_name, first.campaign_name, first.spend, first.spend_currency, first.impressions, first.clicks],
      ['meta', 'Spring Sale – Prospecting', 114.93, 'EUR', 12408, 233],
    );
    assert.equal(data.length, 4);
  });

  test('a Google Ads campaign report, as CSV and as Excel CSV: title rows and totals skipped', async () => {
    const summary = await importFile('spend', fixture('google-ads-campaigns.csv'), options);
    assert.deepEqual([summary.format, summary.sent, summary.rejected], ['google', 4, 0]);
    const { data } = await trb.spend.daily.list({ platform_account_id: '123-456-7890', date_start: '2024-03-01', date_end: '2024-03-02' });
    const pmax = data.find((record) => record.date === '2024-03-01' && record.campaign_id === '20471234568')!;
    assert.deepEqual(
      [pmax.platform_name, pmax.campaign_name, pmax.spend, pmax.spend_currency, pmax.impressions, pmax.clicks],
      ['google', 'Performance Max – Apparel', 1012.4, 'USD', 18530, 402],
    );
    assert.equal(data.length, 4);

    // The same report as Google Ads' "Excel .csv" download: UTF-16, tab-separated.
    const excel = await importFile('spend', fixture('google-ads-campaigns-excel.csv'), options);
    assert.deepEqual([excel.format, excel.sent, excel.inserted, excel.updated, excel.rejected], ['google', 4, 0, 4, 0]);
  });

  test('hourly CSV and daily NDJSON, told apart by their time field', async () => {
    const hourlyFile = fixture('spend-hourly.csv');
    const hourly = await importFile('spend', hourlyFile, options);
    assert.deepEqual([hourly.target, hourly.sent, hourly.rejected], ['spend_hourly', 3, 1]);
    assert.equal(rejectsOf(hourlyFile)[0]!.record.hour_start_iso, '2024-03-08T11:30:00Z');
    const { data } = await trb.spend.hourly.list({ platform_account_id: 'act_1', date: '2024-03-08' });
    assert.deepEqual(data.map((record) => [record.hour_start_iso, record.spend]), [
      ['2024-03-08T09:00:00Z', 12.5],
      ['2024-03-08T10:00:00Z', 14.25],
      ['2024-03-08T11:00:00Z', 0],
    ]);

    const dailyFile = fixture('spend-daily.ndjson');
    const daily = await importFile('spend', dailyFile, options);
    // 61.70000000000000284 is stored as 61.7, and counted as a warning.
    assert.deepEqual([daily.target, daily.sent, daily.rejected, daily.warnings], ['spend_daily', 2, 1, 1]);
    assert.equal(rejectsOf(dailyFile)[0]!.errors[0]!.loc, 'body/data/2/spend');
  });
});

describe('touchpoints', () => {
  test('CSV and NDJSON; lines that are not JSON are rejected without stopping the import', async () => {
    const csv = fixture('touchpoints.csv');
    const fromCsv = await importFile('touchpoints', csv, options);
    assert.deepEqual([fromCsv.sent, fromCsv.inserted, fromCsv.rejected], [3, 3, 1]);
    assert.deepEqual(Object.keys(fromCsv).sort(), ['format', 'inserted', 'reject_file', 'rejected', 'sent', 'skipped', 'target', 'updated', 'warnings'], 'the summary holds counts only');
    assert.equal(rejectsOf(csv)[0]!.record.touchpoint_id, 'tp-4');

    const ndjson = fixture('touchpoints.ndjson');
    const fromLines = await importFile('touchpoints', ndjson, options);
    assert.deepEqual([fromLines.sent, fromLines.rejected], [2, 2]);
    const [garbage, truncated] = rejectsOf(ndjson);
    assert.deepEqual([garbage!.line, garbage!.record], [2, 'this line is not json']);
    assert.equal(truncated!.line, 4);
    assert.match(truncated!.errors[0]!.msg, /^Not JSON/);
    const { data } = await trb.touchpoints.list({ visitor_id: 'v-1' });
    assert.deepEqual(data.map((touchpoint) => [touchpoint.touchpoint_id, touchpoint.platform_name]), [
      ['tp-1', 'facebook'],
      ['tp-2', 'google'],
    ]);
  });
});

describe('rates', () => {
  // A client of its own each test: the files share pairs and days.
  const ownClient = async () => {
    const fresh = await service.createClient();
    const client = new Tributary({ url, apiKey: fresh.api_key, clientId: fresh.client_id });
    const list = async (base: string, quote: string, start_date: string, end_date: string) => (await client.exchangeRates.list({ base, quote, start_date, end_date })).data;
    return { list, options: { ...options, apiKey: fresh.api_key, clientId: fresh.client_id }, env: { ...process.env, TRIBUTARY_API_KEY: fresh.api_key, TRIBUTARY_CLIENT_ID: fresh.client_id } };
  };
  const write = (name: string, text: string) => {
    const file = path.join(fs.mkdtempSync(path.join(work, 'import-')), name);
    fs.writeFileSync(file, text);
    return file;
  };
  /** The fixture's rates: 3 days of 30 currencies, and 2 days of 1999 with 19 known currencies between them. */
  const ECB_RATES = 129;

  test("the ECB's eurofxref-hist.csv: a rate of each cell, 1 EUR in the column's currency, as written; N/A and unknown currencies' columns left out", async () => {
    const { list, options: own } = await ownClient();
    const file = fixture('eurofxref-hist.csv');
    const summary = await importFile('rates', file, own);
    assert.deepEqual(pick(summary, 'format', 'target', 'sent', 'inserted', 'updated', 'rejected'), { format: 'ecb', target: 'rates', sent: ECB_RATES, inserted: ECB_RATES, updated: 0, rejected: 0 });
    assert.deepEqual(await list('EUR', 'USD', '2024-11-26', '2024-11-30'), [
      { date: '2024-11-27', base: 'EUR', quote: 'USD', rate: 1.0519, source: 'stored' },
      { date: '2024-11-28', base: 'EUR', quote: 'USD', rate: 1.0557, source: 'stored' },
      { date: '2024-11-29', base: 'EUR', quote: 'USD', rate: 1.0565, source: 'stored' },
    ]);
    // Every digit kept, none added: 1.1790 is 1.179.
    assert.deepEqual((await list('EUR', 'USD', '1999-01-04', '1999-01-05')).map((rate) => [rate.date, rate.rate, rate.source]), [
      ['1999-01-04', 1.1789, 'stored'],
      ['1999-01-05', 1.179, 'stored'],
    ]);
    const on = async (quote: string, day: string) => (await list('EUR', quote, day, day)).map((rate) => rate.rate);
    assert.deepEqual([await on('GBP', '2024-11-29'), await on('IDR', '2024-11-29'), await on('HUF', '1999-01-05'), await on('ZAR', '1999-01-04')], [[0.83153], [16766.66], [250.8], [6.9358]]);
    // N/A is no rate that day: the rouble in 1999, none in 2024.
    assert.deepEqual([await on('RUB', '1999-01-04'), await on('RUB', '2024-11-29'), await on('BRL', '1999-01-04')], [[25.2875], [], []]);
    // Inverse and cross rates are derived when read: not stored.
    const [inverse] = await list('USD', 'EUR', '2024-11-29', '2024-11-29');
    assert.equal(inverse!.source, 'inverse');
    assert.ok(Math.abs(inverse!.rate - 1 / 1.0565) < 1e-9);
    const [cross] = await list('GBP', 'USD', '2024-11-29', '2024-11-29');
    assert.deepEqual([cross!.source, cross!.via], ['cross', 'EUR']);
    assert.ok(Math.abs(cross!.rate - 1.0565 / 0.83153) < 1e-9);

    const again = await importFile('rates', file, own);
    assert.deepEqual(pick(again, 'sent', 'inserted', 'updated', 'rejected'), { sent: ECB_RATES, inserted: 0, updated: ECB_RATES, rejected: 0 });
    assert.equal((await list('EUR', 'USD', '2024-11-26', '2024-11-30')).length, 3);
  });

  test("the ECB's daily eurofxref.csv: the same columns, a space after each comma, the day written out", async () => {
    const { list, options: own } = await ownClient();
    const file = write(
      'eurofxref.csv',
      'Date, USD, JPY, BGN, CZK, DKK, GBP, HUF, PLN, RON, SEK, CHF, ISK, NOK, TRY, AUD, BRL, CAD, CNY, HKD, IDR, ILS, INR, KRW, MXN, MYR, NZD, PHP, SGD, THB, ZAR, \n' +
        '2 December 2024, 1.0498, 157.77, 1.9558, 25.298, 7.4582, 0.82900, 414.40, 4.2968, 4.9766, 11.5375, 0.9290, 145.7, 11.6650, 36.4131, 1.6212, 6.3863, 1.4756, 7.6378, 8.1697, 16732.48, 3.8250, 88.8345, 1473.45, 21.4958, 4.6703, 1.7924, 61.687, 1.4123, 36.152, 19.0700, \n',
    );
    const summary = await importFile('rates', file, own);
    assert.deepEqual(pick(summary, 'format', 'sent', 'inserted', 'rejected'), { format: 'ecb', sent: 30, inserted: 30, rejected: 0 });
    assert.deepEqual(await list('EUR', 'GBP', '2024-12-01', '2024-12-03'), [{ date: '2024-12-02', base: 'EUR', quote: 'GBP', rate: 0.829, source: 'stored' }]);
  });

  test('a CSV of date, base, quote and rate in any order: bad rows rejected with their line and why, the others stored', async () => {
    const { list, options: own } = await ownClient();
    const file = fixture('rates.csv');
    const summary = await importFile('rates', file, own);
    assert.deepEqual(pick(summary, 'format', 'target', 'sent', 'inserted', 'updated', 'rejected'), { format: 'csv', target: 'rates', sent: 3, inserted: 3, updated: 0, rejected: 5 });
    assert.deepEqual(await list('GBP', 'USD', '2024-03-01', '2024-03-31'), [
      { date: '2024-03-07', base: 'GBP', quote: 'USD', rate: 1.2741, source: 'stored' },
      { date: '2024-03-08', base: 'GBP', quote: 'USD', rate: 1.286, source: 'stored' },
    ]);
    assert.deepEqual(await list('USD', 'JPY', '2024-03-07', '2024-03-07'), [{ date: '2024-03-07', base: 'USD', quote: 'JPY', rate: 147.83, source: 'stored' }]);
    const rejects = rejectsOf(file).sort((a, b) => a.line - b.line);
    assert.deepEqual(
      rejects.map((reject) => [reject.line, reject.errors[0]!.msg]),
      [
        [5, 'The date "2024-02-30" is not a day: YYYY-MM-DD (or as the ECB\'s daily file writes it, 29 November 2024)'],
        [6, 'The rate "-1.2731" is not a positive number'],
        [7, 'The rate "" is not a positive number'],
        [8, 'Currency does not match any known currencies'],
        [9, 'Must not be the same as base'],
      ],
    );
    assert.deepEqual(rejects[0]!.record, { quote: 'USD', rate: '1.28', date: '2024-02-30', base: 'GBP' });
    assert.match(rejects[3]!.errors[0]!.loc!, /^body\/data\/\d+\/quote$/);

    const again = await importFile('rates', file, own);
    assert.deepEqual(pick(again, 'sent', 'inserted', 'updated', 'rejected'), { sent: 3, inserted: 0, updated: 3, rejected: 5 });
  });

  test("bad rows of the ECB's file are rejected with their line, the import going on; files that are no rates are refused", async () => {
    const { list, options: own } = await ownClient();
    const lines = fs.readFileSync(new URL('fixtures/eurofxref-hist.csv', import.meta.url), 'utf8').split('\n');
    lines[2] = lines[2]!.replace('2024-11-28', '2024-11-31');
    lines[3] = lines[3]!.replace('1.0519', 'abc').replace('0.83260', '1.0834000000000000001');
    const file = write('eurofxref-hist.csv', lines.join('\n'));
    const summary = await importFile('rates', file, own);
    assert.deepEqual(pick(summary, 'sent', 'rejected'), { sent: ECB_RATES - 30 - 2, rejected: 3 });
    assert.deepEqual(
      rejectsOf(file).map((reject) => [reject.line, reject.record.quote ?? reject.record.Date, reject.errors[0]!.msg]),
      [
        [3, '2024-11-31', 'The date "2024-11-31" is not a day: YYYY-MM-DD (or as the ECB\'s daily file writes it, 29 November 2024)'],
        [4, 'USD', 'The rate "abc" is not a positive number'],
        [4, 'GBP', 'The rate "1.0834000000000000001" has more significant digits than a JSON number keeps: it would be sent rounded (1.0834)'],
      ],
    );
    assert.deepEqual((await list('EUR', 'USD', '2024-11-26', '2024-11-30')).map((rate) => rate.date), ['2024-11-29']);
    assert.deepEqual((await list('EUR', 'JPY', '2024-11-27', '2024-11-27')).map((rate) => rate.rate), [159.66]);

    await assert.rejects(importFile('rates', write('extra.csv', 'date,base,quote,rate,source\n2024-03-07,GBP,USD,1.27,bank\n'), own), {
      message: 'A CSV of rates has the columns date, base, quote and rate, no others: this one has columns that are no field of a rate: "source"',
    });
    await assert.rejects(importFile('rates', write('missing.csv', 'date,quote,rate\n'), own), { message: /this one has no column base$/ });
    await assert.rejects(importFile('rates', fixture('spend-hourly.csv'), own), { message: /^Unrecognised CSV for rates: expected the ECB's reference rates/ });
    await assert.rejects(importFile('rates', fixture('orders.ndjson'), own), { message: /^Rates are read from CSV/ });
  });

  test('the CLI: the skipped columns said on stderr, the summary on stdout, exit 0; a dry run validated on the UAT API', async () => {
    const { list, env } = await ownClient();
    const file = fixture('eurofxref-hist.csv');
    const result = await runCli(env, ['import', 'rates', file, '--url', url, '--batch-size', '50']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.stderr.split('\n').slice(0, 2), [`Importing ${file} into ${url}`, 'Skipped the columns of currencies the API does not know: CYP, EEK, LTL, LVL, MTL, ROL, SIT, SKK, TRL']);
    assert.deepEqual(pick(JSON.parse(result.stdout) as Summary & { format: string }, 'format', 'sent', 'inserted', 'rejected'), { format: 'ecb', sent: ECB_RATES, inserted: ECB_RATES, rejected: 0 });
    assert.equal((await list('EUR', 'CHF', '2024-11-27', '2024-11-29')).length, 3);

    const dry = await importFile('rates', fixture('rates.csv'), { ...options, uatUrl, apiKey: undefined, clientId: undefined, dryRun: true });
    assert.deepEqual(pick(dry, 'sent', 'rejected'), { sent: 3, rejected: 5 });
  });
});

describe('records of one key (order_id, touchpoint_id, spend key) more than once: the later in the file is stored last', () => {
  const write = (name: string, lines: unknown[]) => {
    const file = path.join(fs.mkdtempSync(path.join(work, 'import-')), name);
    fs.writeFileSync(file, lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n'));
    return file;
  };
  const order = (id: string, total: number) => minimalOrder(id, { time_of_purchase: '2024-06-01T10:00:00Z', purchase_total: total, products: [{ id: 'p', name: 'P', quantity: 1, price: total }] });
  const totals = async (day: string) => Object.fromEntries((await allOrders(day, day)).map((stored) => [stored.order_id, stored.purchase_total]));

  test('within a batch: sent in rounds that hold each key once, one after the other', async () => {
    // The second d-1 written with an escape, as some encoders write ids: the same id.
    const orders = write('orders.ndjson', [order('d-1', 1), order('d-2', 2), JSON.stringify(order('d-1', 3)).replace('"d-1"', '"d\\u002d1"'), order('d-1', 4)]);
    const summary = await importFile('orders', orders, options);
    assert.deepEqual(pick(summary, 'sent', 'inserted', 'updated', 'rejected'), { sent: 4, inserted: 2, updated: 2, rejected: 0 });
    assert.deepEqual(await totals('2024-06-01'), { 'd-1': 4, 'd-2': 2 });

    const touchpoints = write('touchpoints.csv', [
      'touchpoint_id,occurred_at,visitor_id,landing_url',
      'tp-d,2024-06-01T08:00:00Z,v-d,https://shop.example/?utm_source=google',
      'tp-d,2024-06-01T08:00:00Z,v-d,https://shop.example/?utm_source=facebook',
    ]);
    assert.deepEqual(pick(await importFile('touchpoints', touchpoints, options), 'sent', 'rejected'), { sent: 2, rejected: 0 });
    assert.deepEqual((await trb.touchpoints.list({ visitor_id: 'v-d' })).data.map((touchpoint) => touchpoint.platform_name), ['facebook']);

    // One hour written in two offsets is one key; ids left out are "".
    const hour = (hourStart: string, spend: number, extra: object = {}) => ({ ...hourlySpend('dup'), platform_account_id: 'act_d', hour_start_iso: hourStart, spend, ...extra });
    const spend = write('spend.ndjson', [hour('2024-06-01T09:00:00Z', 1), hour('2024-06-01T11:00:00+02:00', 2, { adset_id: '' }), hour('2024-06-01T10:00:00Z', 3)]);
    assert.deepEqual(pick(await importFile('spend', spend, options), 'sent', 'inserted', 'updated', 'rejected'), { sent: 3, inserted: 2, updated: 1, rejected: 0 });
    const { data } = await trb.spend.hourly.list({ platform_account_id: 'act_d', date: '2024-06-01' });
    assert.deepEqual(data.map((record) => [record.hour_start_iso, record.spend]), [['2024-06-01T09:00:00Z', 2], ['2024-06-01T10:00:00Z', 3]]);
  });

  test('across batches in flight: the later waits for the answer to the earlier', async (t) => {
    // The batch of the first o-1 is answered late; without waiting, the later o-1 would be stored first.
    const proxy = await slowProxy(url, 'customer-answered-late');
    t.after(proxy.close);
    const first = { ...order('o-1', 1), customer_id: 'customer-answered-late' };
    const file = write('orders.ndjson', [first, order('o-2', 2), order('o-3', 3), order('o-1', 4), order('o-4', 5), order('o-1', 6)].map((line) => ({ ...line, time_of_purchase: '2024-06-02T10:00:00Z' })));
    const summary = await importFile('orders', file, { ...options, url: proxy.url, batchSize: 2, concurrency: 4 });
    assert.deepEqual(pick(summary, 'sent', 'inserted', 'updated', 'rejected'), { sent: 6, inserted: 4, updated: 2, rejected: 0 });
    assert.deepEqual(await totals('2024-06-02'), { 'o-1': 6, 'o-2': 2, 'o-3': 3, 'o-4': 5 });
    assert.ok(proxy.delayed > 0);
  });
});

describe('--dry-run', () => {
  test('validates on the UAT API given, with its test credentials: answers and rejects, nothing stored, no checkpoint', async () => {
    const other = await service.createClient();
    const file = fixture('shopify-orders.csv');
    const summary = await importFile('orders', file, { ...options, uatUrl, apiKey: undefined, clientId: undefined, dryRun: true });
    assert.deepEqual([summary.sent, summary.rejected], [4, 1]);
    assert.equal(rejectsOf(file).length, 1);
    assert.ok(!fs.existsSync(`${file}.checkpoint.json`));
    const otherClient = new Tributary({ url, apiKey: other.api_key, clientId: other.client_id });
    assert.equal((await otherClient.orders.list({ start_date: '2024-03-01', end_date: '2024-03-31' })).total_count, 0);
  });

  test('the CLI says where it sends first: --uat-url (or TRIBUTARY_UAT_URL) for a dry run, --url otherwise', async () => {
    const file = fixture('orders.ndjson');
    const env = { ...process.env, TRIBUTARY_API_KEY: shop.api_key, TRIBUTARY_CLIENT_ID: shop.client_id };
    const dry = await runCli(env, ['import', 'orders', file, '--url', url, '--uat-url', uatUrl, '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stderr.split('\n')[0], `Importing ${file} into ${uatUrl} as a dry run: validated with the UAT test credentials, nothing stored`);
    assert.deepEqual(pick(JSON.parse(dry.stdout) as Summary, 'sent', 'rejected'), { sent: 3, rejected: 1 });

    const fromEnv = await runCli({ ...env, TRIBUTARY_UAT_URL: uatUrl }, ['import', 'orders', file, '--url', url, '--dry-run']);
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    assert.match(fromEnv.stderr, new RegExp(`^Importing \\S+ into ${uatUrl} as a dry run`));

    const stored = await runCli(env, ['import', 'orders', file, '--url', url, '--uat-url', uatUrl]);
    assert.equal(stored.code, 0, stored.stderr);
    assert.equal(stored.stderr.split('\n')[0], `Importing ${file} into ${url}`);
  });

  test('refused, saying what to give, when the URL says nothing of where UAT is', async () => {
    const error = await cliError({ ...process.env, TRIBUTARY_UAT_URL: '' }, ['import', 'orders', fixture('orders.ndjson'), '--url', url, '--dry-run']);
    assert.match(error, /--dry-run sends to the UAT API .* on neither default port \(8080 production, 8081 UAT\): give the UAT API's URL with --uat-url \(or TRIBUTARY_UAT_URL\)/);
  });

  test('the UAT API found from --url: as it is on the default UAT port, on that port when on the default production port', () => {
    assert.equal(dryRunUrl('http://127.0.0.1:8081', undefined), 'http://127.0.0.1:8081');
    assert.equal(dryRunUrl('http://127.0.0.1:8080', undefined), 'http://127.0.0.1:8081');
    assert.equal(dryRunUrl('https://tributary.internal:8080/api', undefined), 'https://tributary.internal:8081/api');
    assert.equal(dryRunUrl('http://127.0.0.1:8080', 'https://uat.example'), 'https://uat.example');
    assert.throws(() => dryRunUrl('https://tributary.example', undefined), /give the UAT API's URL with --uat-url/);
  });
});

test('wrong credentials stop the import with the API\'s 401; an unknown kind is refused by the CLI', async () => {
  await assert.rejects(importFile('orders', fixture('orders.ndjson'), { ...options, apiKey: 'trb_wrong' }), { name: 'TributaryError', status: 401 });
  const cli = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'import', 'invoices', 'x.csv'], { cwd: new URL('..', import.meta.url), encoding: 'utf8' });
  assert.equal(cli.status, 1);
  assert.match(cli.stderr, /must be one of orders, spend, touchpoints/);
});

test('resume after a kill mid-import: every order stored once, every reject kept, no acknowledged batch sent again', async () => {
  const count = 20_000;
  const invalid = (i: number) => i % 997 === 0;
  const file = path.join(work, 'many.ndjson');
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify(minimalOrder(`k-${i}`, { time_of_purchase: '2024-05-01T10:00:00Z', ...(invalid(i) && { currency: 'XXX' }) })),
  );
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  const invalidIds = lines.map((_, i) => `k-${i}`).filter((_, i) => invalid(i));
  const checkpointFile = `${file}.checkpoint.json`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'import', 'orders', file, '--url', url, '--concurrency', '2', '--batch-size', '250'],
    { cwd: new URL('..', import.meta.url), env: { ...process.env, TRIBUTARY_API_KEY: shop.api_key, TRIBUTARY_CLIENT_ID: shop.client_id }, stdio: 'ignore' },
  );
  const exited = once(child, 'exit');
  const checkpoint = () => (fs.existsSync(checkpointFile) ? (JSON.parse(fs.readFileSync(checkpointFile, 'utf8')) as Checkpoint) : undefined);
  while ((checkpoint()?.acknowledged_below ?? 0) < 10) {
    assert.equal(child.exitCode, null, 'the importer finished before it could be killed: make the file larger');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill('SIGKILL');
  await exited;
  const atKill = checkpoint()!;
  const acknowledged = (atKill.acknowledged_below + atKill.acknowledged.length) * 250;
  assert.ok(acknowledged < count);

  const resumed = await importFile('orders', file, { ...options, concurrency: 2, batchSize: 250, resume: true });
  assert.equal(resumed.skipped, acknowledged);
  assert.equal(resumed.sent + resumed.rejected, count - acknowledged);
  // Batches in flight at the kill may have been stored unacknowledged: sent again, they are updates.
  assert.ok(resumed.updated <= 2 * 250, String(resumed.updated));
  const totals = (JSON.parse(fs.readFileSync(checkpointFile, 'utf8')) as Checkpoint).totals;
  assert.deepEqual([totals.sent, totals.rejected], [count - invalidIds.length, invalidIds.length]);
  const stored = await allOrders('2024-05-01', '2024-05-01');
  assert.equal(stored.length, count - invalidIds.length);
  assert.equal(new Set(stored.map((order) => order.order_id)).size, count - invalidIds.length);
  // Each refused order is in the reject file (once, or twice if its batch was in flight at the kill).
  assert.deepEqual([...new Set(rejectsOf(file).map((reject) => reject.record.order_id))].sort(), invalidIds.sort());
});
