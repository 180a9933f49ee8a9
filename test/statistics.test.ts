/**
 * The service keeps its tables' statistics (src/db/statistics.ts): a table that grew past them,
 * as after a load, is ANALYZEd, and one written since its last VACUUM is VACUUMed, on both stores
 * (the embedded one has no autovacuum).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { generateOrder, generateVisit, random } from '../bench/generate.js';
import { DAY_MS } from '../src/calendar.js';
import { analyzeGrownTables, vacuumWrittenTables } from '../src/db/statistics.js';
import { citusUrl, makeOrder, postOrders, startService, type TestClient } from './helpers.js';

const service = await startService();
after(() => service.close());

const statisticsOf = async (table: string) =>
  (await service.db.query<{ pages: number; tuples: number }>('SELECT relpages AS pages, reltuples::int AS tuples FROM pg_class WHERE relname = $1', [table]))[0]!;

// On Citus the coordinator's tables hold no rows: the workers' autovacuum keeps the shards' statistics.
test('a table loaded past its statistics is analyzed once; a table that did not grow is left alone', { skip: citusUrl !== undefined }, async () => {
  // As right after a load, before PostgreSQL's autovacuum came by.
  if (service.db.kind === 'postgres') await service.db.exec('ALTER TABLE orders SET (autovacuum_enabled = false)');
  await analyzeGrownTables(service.db); // what migrations and client creation wrote
  const client = await service.createClient();
  for (let batch = 0; batch < 3; batch++) {
    const orders = Array.from({ length: 1000 }, (_, n) => makeOrder(`o-${batch}-${n}`, { time_of_purchase: '2024-03-05T12:00:00Z' }));
    assert.equal((await postOrders(service.production, client, orders)).statusCode, 200);
  }
  assert.ok((await statisticsOf('orders')).tuples <= 0, 'the load left orders without statistics');

  const analyzed = await analyzeGrownTables(service.db);
  assert.ok(analyzed.includes('orders'), analyzed.join());
  assert.ok(!analyzed.includes('spend_daily'), 'an empty table that did not grow');
  assert.equal((await statisticsOf('orders')).tuples, 3000);
  assert.deepEqual(await analyzeGrownTables(service.db), [], 'nothing grew since');
});

test('the keeper VACUUMs a table written since its last VACUUM, so that its pages are all-visible; then leaves it alone', { skip: citusUrl !== undefined }, async () => {
  if (service.db.kind === 'postgres') await service.db.exec('ALTER TABLE spend_daily SET (autovacuum_enabled = false)');
  const client = await service.createClient();
  const records = Array.from({ length: 3000 }, (_, n) => ({ date: '2024-03-05', platform_name: 'meta', campaign_id: `c-${n}`, campaign_name: `C ${n}`, spend: 1.5, spend_currency: 'USD' }));
  for (let n = 0; n < records.length; n += 1000) {
    const response = await service.production.inject({ method: 'POST', url: '/v1/spend', headers: client.headers, payload: { data: records.slice(n, n + 1000) } });
    assert.equal(response.statusCode, 201, response.body);
  }
  await analyzeGrownTables(service.db);
  const visibility = async () =>
    (await service.db.query<{ pages: number; visible: number }>("SELECT relpages AS pages, relallvisible AS visible FROM pg_class WHERE relname = 'spend_daily'"))[0]!;
  const before = await visibility();
  assert.ok(before.pages > 8 && before.visible < before.pages / 2, JSON.stringify(before));

  assert.deepEqual(await vacuumWrittenTables(service.db, AbortSignal.abort()), [], 'a stopping keeper starts no VACUUM');
  assert.deepEqual(await visibility(), before);

  assert.ok((await vacuumWrittenTables(service.db)).includes('spend_daily'));
  const after = await visibility();
  assert.ok(after.visible >= after.pages * 0.9, JSON.stringify(after));
  assert.ok(!(await vacuumWrittenTables(service.db)).includes('spend_daily'), 'nothing written since');
});

/**
 * A first load as a new user's (issue 37): 2,615 orders of 1,500 customers, 16,914 touchpoints of
 * 5,000 visitors (a third sent with their customer), 2,200 identity links, over 60 days.
 */
async function firstLoad(client: TestClient) {
  const rand = random(37);
  const end = Date.parse('2024-03-01T00:00:00Z');
  const at = () => new Date(end - Math.floor(rand() * 60 * DAY_MS)).toISOString();
  const send = async (url: string, items: unknown[], payload: (batch: unknown[]) => object) => {
    for (let n = 0; n < items.length; n += 1000) {
      const response = await service.production.inject({ method: 'POST', url, headers: client.headers, payload: payload(items.slice(n, n + 1000)) });
      assert.ok(response.statusCode < 300, response.body);
    }
  };
  const orders = Array.from({ length: 2615 }, (_, n) => ({ ...generateOrder(rand, `o-${n}`, new Date(at())), customer_id: `cust-${n % 1500}` }));
  await send('/v2/orders', orders, (batch) => batch);
  const touchpoints = Array.from({ length: 16_914 }, (_, n) => {
    const visitor = Math.floor(rand() * 5000);
    return { touchpoint_id: `t-${n}`, occurred_at: at(), visitor_id: `visitor-${visitor}`, ...(rand() < 1 / 3 ? { customer_id: `cust-${visitor % 1500}` } : {}), ...generateVisit(rand, `ck${n}`) };
  });
  await send('/v1/touchpoints', touchpoints, (data) => ({ data }));
  const links = Array.from({ length: 2200 }, (_, v) => ({ visitor_id: `visitor-${v * 2}`, customer_id: `cust-${v % 1500}` }));
  await send('/v1/identities', links, (data) => ({ data }));
}

test("a report asked right after a store's first load brings the statistics up to date first, and answers", { skip: citusUrl !== undefined, timeout: 300_000 }, async () => {
  if (service.db.kind === 'postgres') for (const table of ['orders', 'touchpoints', 'identities']) await service.db.exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  const client = await service.createClient();
  await firstLoad(client);
  assert.ok((await statisticsOf('touchpoints')).tuples < 16_914, 'the load left touchpoints without up-to-date statistics');
  const query = new URLSearchParams({ start_date: '2024-01-31', end_date: '2024-02-29', level: 'campaign', metrics: 'spend,rev,txns,roas,visits', model: 'linear', window: '30', mode: 'cash' });
  const started = performance.now();
  const report = await service.production.inject({ method: 'GET', url: `/v1/reports/performance?${query}`, headers: client.headers });
  const took = performance.now() - started;
  assert.equal(report.statusCode, 200, report.body);
  assert.ok((report.json() as { rows: unknown[] }).rows.length > 100);
  console.log(`the first report after the load: ${took.toFixed(0)} ms`);
  assert.ok((await statisticsOf('touchpoints')).tuples >= 16_914, 'the report analyzed the tables the load grew');
});
