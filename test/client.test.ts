import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Tributary, TributaryError, type ClientOfCredentials, type FeedHealth, type Order, type PerformanceReport } from '../src/client/index.js';
import { hourlySpend, minimalOrder, startExportingService, type TestClient } from './helpers.js';

const service = await startExportingService();
const address = await service.production.listen({ port: 0, host: '127.0.0.1' });
after(() => service.close());

const order = (id: string, overrides: Record<string, unknown> = {}) => minimalOrder(id, overrides) as unknown as Order;
const clientOf = (client: TestClient) => new Tributary({ url: address, apiKey: client.api_key, clientId: client.client_id, baseDelayMs: 5 });

describe('against the running app', () => {
  let shop: TestClient;
  let trb: Tributary;
  before(async () => {
    shop = await service.createClient();
    trb = clientOf(shop);
  });

  test('orders: 2,500 upserted in batches of 1,000, listed, patched, aliased and explained', async () => {
    const orders = Array.from({ length: 2500 }, (_, i) => order(`o-${i}`));
    const first = await trb.orders.upsert(orders);
    assert.deepEqual([first.inserted, first.updated, first.request_ids.length], [2500, 0, 3]);
    const again = await trb.orders.upsert(orders.slice(0, 10));
    assert.deepEqual([again.inserted, again.updated], [0, 10]);
    const page = await trb.orders.list({ start_date: '2024-03-08', end_date: '2024-03-08', page_size: 10 });
    assert.equal(page.total_count, 2500);
    assert.equal(page.data.length, 10);
    const patched = await trb.orders.patch([{ order_id: 'o-1', purchase_total: 12 }]);
    assert.equal(patched.updated, 1);
    const aliased = await trb.orders.addAliases([{ order_id: 'o-1', type: 'shopify', id: '450789469' }]);
    assert.deepEqual([aliased.added, aliased.ignored], [1, 0]);
    const explained = await trb.orders.explain('o-1');
    assert.equal(explained.purchase_total, 12);
    const byMarkov = await trb.orders.explain('o-1', { model: 'markov', period_from: '2024-03-01' });
    assert.equal(byMarkov.learnt?.training.before, '2024-03-01T00:00:00.000Z');
  });

  test('attribution: the models, and what a data-driven one learnt', async () => {
    const { models } = await trb.attribution.models();
    assert.ok(models.some((model) => model.id === 'shapley' && model.data_driven));
    const shapley = await trb.attribution.model('shapley', { window: '7', period_from: '2024-03-09' });
    assert.deepEqual(shapley.learnt?.training, { from: '2023-12-10T00:00:00.000Z', before: '2024-03-09T00:00:00.000Z' });
    assert.deepEqual(shapley.learnt?.paths, { converting: 0, not_converting: 0 });
    const error = await trb.attribution.model('markow').catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError && error.status === 422);
  });

  test('warnings and errors point into the whole input, not the batch', async () => {
    const orders = Array.from({ length: 1200 }, (_, i) => order(`w-${i}`));
    orders[1100]!.customer_id = 'jane@example.com';
    const result = await trb.orders.upsert(orders);
    assert.equal(result.warnings.length, 1);
    assert.equal(result.warnings[0]!.loc, 'body/1100/customer_id');

    const bad = Array.from({ length: 1500 }, (_, i) => order(`e-${i}`, i === 1234 ? { currency: 'XXX' } : {}));
    const error = await trb.orders.upsert(bad).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError);
    assert.equal(error.status, 400);
    assert.equal(error.errors![0]!.loc, 'body/1234/currency');
    assert.match(error.request_id!, /^[0-9a-f-]{36}$/);
    assert.match(error.message, /the 1000 before were stored/);
    const stored = await trb.orders.list({ start_date: '2024-03-08', end_date: '2024-03-08', page_size: 1 });
    assert.equal(stored.total_count, 2500 + 1200 + 1000);
  });

  test('spend hourly and daily, touchpoints and identities', async () => {
    const hours = Array.from({ length: 1500 }, (_, i) => ({ ...hourlySpend(`c-${i}`), ...(i === 1234 && { spend: 0.1 + 0.2 }) }) as never);
    const upserted = await trb.spend.hourly.upsert(hours);
    assert.equal(upserted.data.length, 1500);
    assert.equal(upserted.data[1234]!.spend, 0.3);
    // A measure stored rounded is said so, pointing into the whole input.
    assert.deepEqual(upserted.warnings, [{ loc: 'body/data/1234/spend', msg: 'Rounded to 12 decimal places: stored as 0.3' }]);
    assert.equal((await trb.spend.hourly.list({ platform_account_id: 'act_1', date: '2024-03-08', page_size: 1 })).total_count, 1500);
    const day = { date: '2024-03-08', platform_name: 'google', campaign_id: 'brand', campaign_name: 'Brand', spend: 3, spend_currency: 'USD' };
    assert.equal((await trb.spend.daily.upsert([day])).data[0]!.spend, 3);
    assert.equal((await trb.spend.daily.delete({ date: '2024-03-08', campaign_id: 'brand' })).data.length, 1);

    const touchpoints = await trb.touchpoints.upsert([
      { touchpoint_id: 't-1', occurred_at: '2024-03-08T08:00:00Z', visitor_id: 'v-1', landing_url: 'https://shop.example/?utm_source=google&utm_campaign=brand' },
    ]);
    assert.equal(touchpoints.inserted, 1);
    assert.equal((await trb.identities.link([{ visitor_id: 'v-1', customer_id: 'customer-of-o-1' }])).linked, 1);
    const listed = await trb.touchpoints.list({ customer_id: 'customer-of-o-1' });
    assert.equal(listed.data[0]!.touchpoint_id, 't-1');
  });

  test('exports: created, waited for, downloaded; the catalogs read', async () => {
    const { id } = await trb.exports.create({ period_type: 'FIXED', period_options: { period_starting_at: '2024-03-01', period_ending_at: '2024-03-31' }, metrics: [{ id: 'spend' }] });
    const links = await trb.waitForExport(id, { intervalMs: 20 });
    assert.ok(links.length >= 1);
    // The links name PUBLIC_URL's port; the test server listens on another one.
    const download = await trb.exports.download(links[0]!.replace(/^http:\/\/[^/]+/, address));
    assert.match(await download.text(), /spend/);
    assert.ok((await trb.exports.metrics()).metrics.some((metric) => metric.id === 'spend'));
    assert.ok(Array.isArray((await trb.exports.breakdowns()).breakdowns));
    assert.ok((await trb.exports.attributionModels()).attribution_models.length > 0);
  });

  test('reports, the client of the credentials, feed health and customer erasure', async () => {
    const made = await service.createClient('Reporting shop');
    const fresh = clientOf(made);
    const me: ClientOfCredentials = await fresh.client();
    assert.deepEqual(me, { client_id: made.client_id, name: 'Reporting shop', time_zone: 'UTC', environment: 'production' });
    await fresh.spend.hourly.upsert([hourlySpend('r-1'), hourlySpend('r-2')] as never);
    await fresh.orders.upsert([order('r-1', { customer_id: 'erased', customer_email: 'erased@example.com' })]);

    const report: PerformanceReport = await fresh.reports.performance({ start_date: '2024-03-08', end_date: '2024-03-08', metrics: 'spend', level: 'campaign' });
    assert.deepEqual(report.rows.map((row) => [row.campaign_id, row.spend]), [['r-1', 12.5], ['r-2', 12.5]]);
    assert.deepEqual([report.totals.spend, report.currency], [25, 'USD']);
    const refused = await fresh.reports.performance({ start_date: '2024-01-01', end_date: '2024-12-31', metrics: 'spend' }).catch((caught: unknown) => caught);
    assert.ok(refused instanceof TributaryError);
    assert.deepEqual([refused.status, refused.errors![0]!.loc], [422, 'query/end_date']);

    const health: FeedHealth = await fresh.health.feeds();
    assert.equal(health.days.length, 30);
    const received = (feed: 'orders' | 'spend' | 'touchpoints') => health.days.reduce((sum, day) => sum + day[feed], 0);
    assert.deepEqual([received('orders'), received('spend'), received('touchpoints')], [1, 2, 0]);
    assert.equal(health.last_received_at.touchpoints, null);

    const erased = await fresh.customers.erase({ customer_ids: ['erased'] });
    assert.deepEqual([erased.customers, erased.orders], [1, 1]);
    const [stored] = (await fresh.orders.list({ start_date: '2024-03-08', end_date: '2024-03-08' })).data;
    assert.match(stored!.customer_id, /^erased:[0-9a-f-]{36}$/);
    assert.equal(stored!.customer_email, undefined);
  });

  test('a wrong key is one TributaryError with the envelope', async () => {
    const wrong = new Tributary({ url: address, apiKey: 'trb_wrong', clientId: shop.client_id });
    const error = await wrong.orders.list({ start_date: '2024-03-08', end_date: '2024-03-08' }).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError);
    assert.equal(error.status, 401);
    assert.ok(error.request_id);
  });
});

/** A server answering each request with the next of `answers`; it records the requests. */
async function fakeServer(answers: ((request: http.IncomingMessage, response: http.ServerResponse) => void)[]) {
  const seen: { method: string; url: string; requestId: string; at: number }[] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push({ method: request.method!, url: request.url!, requestId: String(request.headers['x-request-id']), at: Date.now() });
      (answers[seen.length - 1] ?? answers.at(-1)!)(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())), server };
}

const json = (status: number, body: object, headers: Record<string, string> = {}) => (_request: http.IncomingMessage, response: http.ServerResponse) =>
  response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const upserted = json(200, { message: 'Upserted 1 order', inserted: 1, updated: 0, warnings: [], request_id: '00000000-0000-4000-8000-000000000000' });
const drop = (request: http.IncomingMessage) => request.socket.destroy();
const fakeClient = (url: string) => new Tributary({ url, apiKey: 'k', clientId: 'c', baseDelayMs: 5 });

describe('retries', () => {
  for (const status of [429, 503]) {
    test(`${status} then 200: sent again after Retry-After, with the same request id`, async (t) => {
      const fake = await fakeServer([json(status, { message: 'later', errors: null, request_id: 'r' }, { 'retry-after': '1' }), upserted]);
      t.after(fake.close);
      const result = await fakeClient(fake.url).orders.upsert([order('1')]);
      assert.equal(result.inserted, 1);
      assert.equal(fake.seen.length, 2);
      assert.equal(fake.seen[0]!.requestId, fake.seen[1]!.requestId);
      assert.ok(fake.seen[1]!.at - fake.seen[0]!.at >= 990, 'Retry-After honoured');
    });
  }

  test('a dropped connection: an upsert is sent again, an export creation is not', async (t) => {
    const fake = await fakeServer([drop, upserted]);
    t.after(fake.close);
    assert.equal((await fakeClient(fake.url).orders.upsert([order('1')])).inserted, 1);
    assert.equal(fake.seen.length, 2);

    const once = await fakeServer([drop, json(201, { id: 'x' })]);
    t.after(once.close);
    const error = await fakeClient(once.url).exports.create({ metrics: [{ id: 'spend' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError);
    assert.equal(error.status, 0);
    assert.equal(once.seen.length, 1);
  });

  test('a connection dropped while the body arrives: an upsert is sent again, an export creation is not', async (t) => {
    const cut = (_request: http.IncomingMessage, response: http.ServerResponse) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      response.write('{"message":"Upserted', () => response.socket!.destroy());
    };
    const fake = await fakeServer([cut, upserted]);
    t.after(fake.close);
    assert.equal((await fakeClient(fake.url).orders.upsert([order('1')])).inserted, 1);
    assert.equal(fake.seen.length, 2);
    assert.equal(fake.seen[0]!.requestId, fake.seen[1]!.requestId);

    const once = await fakeServer([cut, json(201, { id: 'x' })]);
    t.after(once.close);
    const error = await fakeClient(once.url).exports.create({ metrics: [{ id: 'spend' }] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError);
    assert.equal(error.status, 0);
    assert.match(error.message, /^POST \/v1\/exports\/data-export failed/);
    assert.equal(once.seen.length, 1);
  });

  test('gives up after its retries with the last answer', async (t) => {
    const fake = await fakeServer([json(503, { message: 'down', errors: null, request_id: 'r-503' })]);
    t.after(fake.close);
    const client = new Tributary({ url: fake.url, apiKey: 'k', clientId: 'c', baseDelayMs: 1, retries: 2 });
    const error = await client.orders.upsert([order('1')]).catch((caught: unknown) => caught);
    assert.ok(error instanceof TributaryError);
    assert.deepEqual([error.status, error.message, error.request_id, fake.seen.length], [503, 'down', 'r-503', 3]);
  });

  test('an abort stops a call waiting on Retry-After at once', async (t) => {
    const fake = await fakeServer([json(429, { message: 'later', errors: null, request_id: 'r' }, { 'retry-after': '60' })]);
    t.after(fake.close);
    const started = Date.now();
    const error = await fakeClient(fake.url).orders.upsert([order('1')], { signal: AbortSignal.timeout(100) }).catch((caught: unknown) => caught);
    assert.equal((error as Error).name, 'TimeoutError');
    assert.ok(Date.now() - started < 5000);
  });

  test('an abort stops a request the server does not answer', async (t) => {
    const fake = await fakeServer([() => {}]);
    t.after(() => {
      fake.server.closeAllConnections();
      return fake.close();
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(fakeClient(fake.url).orders.list({ start_date: '2024-01-01', end_date: '2024-01-01' }, { signal: controller.signal }), { name: 'AbortError' });
  });

  test('waitForExport throws on ERROR, with the reason', async (t) => {
    const result = { data_export_id: 'x', result: [], created_at: '2024-01-01T00:00:00Z', finished_at: null, warn: {} };
    const fake = await fakeServer([json(200, { ...result, status: 'PENDING' }), json(200, { ...result, status: 'ERROR', warn: { error: 'The export failed 3 times' } })]);
    t.after(fake.close);
    await assert.rejects(fakeClient(fake.url).waitForExport('x', { intervalMs: 5 }), { name: 'TributaryError', status: 0, message: 'Export x failed: The export failed 3 times' });
  });
});

test('the client imports no Node module (it runs in browsers), nor the schemas (TypeBox: 20 MB of an importer)', async () => {
  const src = path.join(import.meta.dirname, '../src');
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = fs.readFileSync(file, 'utf8');
    for (const [statement] of source.matchAll(/^import (?!type )[^;]+;$/gms)) {
      const from = /from '([^']+)'/.exec(statement)![1]!;
      assert.ok(from.startsWith('.'), `${file}: ${statement}`);
      visit(path.resolve(path.dirname(file), from.replace(/\.js$/, '.ts')));
    }
  };
  visit(path.join(src, 'client/index.ts'));
  assert.deepEqual([...seen].map((file) => path.relative(src, file)).sort(), ['client/http.ts', 'client/index.ts', 'request-limits.ts']);
});
