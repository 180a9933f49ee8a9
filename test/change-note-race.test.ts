import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createOrderRepository } from '../src/orders/repository.js';
import { deriveTouchpoint, type DerivedTouchpoint, type TouchpointInput } from '../src/touchpoints/derive.js';
import { createTouchpointRepository } from '../src/touchpoints/repository.js';
import { holdOnDistinctSlots, waitingForALock, waitsForALock } from './held-transactions.js';
import { citusUrl, minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * Change notes (src/attribution/changes.ts) under concurrent writes and reports: a report that
 * keeps days between two writes must not keep days that the later write then changes without
 * its note reaching them. The writes are held open in transactions of their own, on connections
 * whose change slots differ (a shared slot's row lock would order them). Each test compares the
 * reports of a client written so with those of one written the same, one write after the other.
 * PostgreSQL only: PGlite has one connection; on Citus the writes wait for each other on a
 * worker, where the coordinator's pg_blocking_pids does not see it (the tests that wait so).
 */

const service = await startService();
after(() => service.close());
const app = service.production;
const concurrent = service.db.kind !== 'postgres';
/** The tests that watch a lock wait. */
const skip = concurrent || citusUrl !== undefined;

async function call(client: TestClient, method: 'POST' | 'GET', url: string, payload?: unknown) {
  const response = await app.inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
  return response;
}
const QUERY = { start_date: '2024-03-01', end_date: '2024-03-10', granularity: 'DAILY', level: 'campaign', metrics: 'rev,txns,visits', model: 'linear', window: '7', mode: 'cash' };
const report = async (client: TestClient) => (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(QUERY)}`)).json();
const visit = (occurred_at: string): TouchpointInput => ({ touchpoint_id: 'x', occurred_at, visitor_id: 'v', customer_id: 'c', platform_name: 'meta', campaign_id: 'spring' });
const derived = (input: TouchpointInput) => deriveTouchpoint(input, {}) as DerivedTouchpoint;
const tenantOf = (client: TestClient) => ({ clientId: client.client_id, environment: 'production' as const, dryRun: false });

const order = (order_id: string, time_of_purchase: string, purchase_total: number) =>
  minimalOrder(order_id, { customer_id: 'c', time_of_purchase, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });

test('a touchpoint moved by a concurrent request after this write\'s snapshot, a report keeping days in between: the days of the time it had meanwhile', { skip }, async () => {
  const [kept, fresh] = [await service.createClient('kept'), await service.createClient('fresh')];
  for (const client of [kept, fresh]) {
    await call(client, 'POST', '/v1/touchpoints', { data: [visit('2024-03-05T12:00:00Z')] });
    await call(client, 'POST', '/v2/orders', [order('y', '2024-03-09T12:00:00Z', 50)]);
  }
  await report(kept); // keeps 1-10 March, the visit on the 5th

  // kept: one request moves x to the 2nd and holds its transaction; another, to move it to the
  // 7th, takes its snapshot (x on the 5th) and waits for x's lock. The first commits; the second
  // writes and holds its transaction while a report keeps the days, x on the 2nd.
  const [moving, resending] = await holdOnDistinctSlots(service.db, 2);
  await createTouchpointRepository(moving!.db).upsert(tenantOf(kept), [derived(visit('2024-03-02T12:00:00Z'))], new Date());
  const resent = createTouchpointRepository(resending!.db).upsert(tenantOf(kept), [derived(visit('2024-03-07T12:00:00Z'))], new Date());
  await waitingForALock(service.db, moving!.pid); // the resent write
  await moving!.commit();
  await resent;
  await report(kept);
  await resending!.commit();
  // fresh: the same writes, one after the other.
  await call(fresh, 'POST', '/v1/touchpoints', { data: [visit('2024-03-02T12:00:00Z')] });
  await call(fresh, 'POST', '/v1/touchpoints', { data: [visit('2024-03-07T12:00:00Z')] });

  assert.deepEqual(await report(kept), await report(fresh), 'kept totals equal totals computed afresh');
});

test('a write committed while a report drops the days changed before it: its note stays for the next report', { skip }, async () => {
  const [kept, fresh] = [await service.createClient('kept 2'), await service.createClient('fresh 2')];
  for (const client of [kept, fresh]) {
    await call(client, 'POST', '/v1/touchpoints', { data: [visit('2024-03-05T12:00:00Z')] });
    await call(client, 'POST', '/v2/orders', [order('y', '2024-03-09T12:00:00Z', 50)]);
  }
  await report(kept); // keeps 1-10 March
  const late = [order('z', '2024-03-09T18:00:00Z', 20)];
  await call(kept, 'POST', '/v2/orders', late);
  const slots = (await service.db.query<{ slot: number }>('SELECT slot FROM attribution_changes WHERE client_id = $1', [kept.client_id])).map((row) => row.slot);

  // kept: a report reads the change (the 9th) and waits to mark the 10th, whose kept row a
  // transaction holds; meanwhile the touchpoint of the 5th is moved to the 3rd, its note in a slot
  // of its own, and committed.
  const [holder] = await holdOnDistinctSlots(service.db, 1);
  await holder!.db.query(`SELECT FROM attribution_days WHERE client_id = $1 AND day = '2024-03-10' FOR UPDATE`, [kept.client_id]);
  const reading = report(kept);
  await waitingForALock(service.db, holder!.pid); // the report
  const [writing] = await holdOnDistinctSlots(service.db, 1, slots);
  const moved = visit('2024-03-03T12:00:00Z');
  await createTouchpointRepository(writing!.db).upsert(tenantOf(kept), [derived(moved)], new Date());
  await writing!.commit();
  await holder!.commit();
  await reading;
  // fresh: the same writes.
  await call(fresh, 'POST', '/v2/orders', late);
  await call(fresh, 'POST', '/v1/touchpoints', { data: [moved] });

  assert.deepEqual(await report(kept), await report(fresh), 'kept totals equal totals computed afresh');
});

// A new order link notes the first order of the linked order's customer, read from its
// statement's snapshot (src/touchpoints/repository.ts, LINKED_EARLIEST); the order's write notes
// the first touchpoint of the visitors linked through it, read from its own snapshot. Written
// concurrently (the thank-you page's pixel and the shop's order webhook), neither sees the other.
test("an order link written while its order is being written: the customer's earlier order takes in the visitor's touchpoints", { skip: concurrent }, async () => {
  const [kept, fresh] = [await service.createClient('kept 3'), await service.createClient('fresh 3')];
  for (const client of [kept, fresh]) {
    await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'tv', occurred_at: '2024-03-03T12:00:00Z', visitor_id: 'v', platform_name: 'meta', campaign_id: 'spring' }] });
    await call(client, 'POST', '/v2/orders', [order('y', '2024-03-05T12:00:00Z', 50)]);
  }
  await report(kept); // keeps 1-10 March: y unattributed on 5 March

  const x = JSON.stringify([order('x', '2024-03-08T12:00:00Z', 20)]);
  const link = { data: [{ visitor_id: 'v', order_id: 'x' }] };
  // kept: the order's transaction is open (its change noted) when the link commits.
  const [ordering, linking] = await holdOnDistinctSlots(service.db, 2);
  await createOrderRepository(ordering!.db).upsert(tenantOf(kept), x, ['x'], [], {});
  await createTouchpointRepository(linking!.db).link(tenantOf(kept), JSON.stringify(link), new Date());
  await linking!.commit();
  await ordering!.commit();
  // fresh: the same writes, one after the other.
  await call(fresh, 'POST', '/v2/orders', JSON.parse(x));
  await call(fresh, 'POST', '/v1/identities', link);

  assert.deepEqual(await report(kept), await report(fresh), 'kept totals equal totals computed afresh');
});

// A late touchpoint of an anonymous visitor is noted by its visitor's key, which a report resolves
// (src/attribution/changes.ts): with no link, it changes visits only. The visitor's link notes the
// same key, so that a link written while a report resolves the key waits for that report, and
// its own note reaches the orders of its customer, the touchpoint among their paths.
test("an anonymous visitor's late touchpoint resolved by a report while the visitor's link waits for it: the link's note takes the touchpoint into its customer's orders", { skip }, async () => {
  const [kept, fresh] = [await service.createClient('kept 4'), await service.createClient('fresh 4')];
  for (const client of [kept, fresh]) await call(client, 'POST', '/v2/orders', [order('y', '2024-03-08T12:00:00Z', 50)]);
  await report(kept); // keeps 1-10 March: y unattributed
  const anonymous = { touchpoint_id: 'a', occurred_at: '2024-03-04T12:00:00Z', visitor_id: 'anon', platform_name: 'meta', campaign_id: 'spring' };
  const link = { data: [{ visitor_id: 'anon', customer_id: 'c' }] };
  await call(kept, 'POST', '/v1/touchpoints', { data: [anonymous] });

  // kept: a report takes the visitor's key and waits to mark the visits of the 4th, whose kept row
  // a transaction holds; meanwhile the link's statement writes the link, then waits for the
  // report's lock on the key. The report resolves the key with the visitor linked to nobody.
  const [holder] = await holdOnDistinctSlots(service.db, 1);
  await holder!.db.query(`SELECT FROM attribution_days WHERE client_id = $1 AND day = '2024-03-04' AND totals = 'visits' FOR UPDATE`, [kept.client_id]);
  const reading = report(kept);
  await waitingForALock(service.db, holder!.pid); // the report
  const [linking] = await holdOnDistinctSlots(service.db, 1);
  const linked = createTouchpointRepository(linking!.db).link(tenantOf(kept), JSON.stringify(link), new Date());
  await waitsForALock(service.db, linking!.pid);
  await holder!.commit();
  await reading;
  await linked;
  await linking!.commit();
  // fresh: the same writes, one after the other.
  await call(fresh, 'POST', '/v1/touchpoints', { data: [anonymous] });
  await call(fresh, 'POST', '/v1/identities', link);

  const [fromKept, afresh] = [await report(kept), await report(fresh)];
  assert.deepEqual(fromKept, afresh, 'kept totals equal totals computed afresh');
  assert.equal(afresh.totals.rev, 50);
  const spring = afresh.rows.filter((row: { campaign_id: string }) => row.campaign_id === 'spring');
  assert.equal(spring.reduce((sum: number, row: { rev: number }) => sum + row.rev, 0), 50, 'y credited to the touchpoint');
});
