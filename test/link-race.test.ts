import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createOrderRepository } from '../src/orders/repository.js';
import { createTouchpointRepository } from '../src/touchpoints/repository.js';
import { holdOnDistinctSlots } from './held-transactions.js';
import { minimalOrder, startService, type TestClient } from './helpers.js';

/*
 * A new order link notes the first order of the linked order's customer, read from its
 * statement's snapshot (src/touchpoints/repository.ts, LINKED_EARLIEST); the order's write notes
 * the first touchpoint of the visitors linked through it, read from its own snapshot. When the
 * link and the order are written concurrently (the thank-you page's pixel and the shop's order
 * webhook), neither sees the other: the customer's earlier orders that take in the visitor's
 * touchpoints are noted by no one. PostgreSQL only (PGlite has one connection).
 */

const service = await startService();
after(() => service.close());
const app = service.production;

async function call(client: TestClient, method: 'POST' | 'GET', url: string, payload?: unknown) {
  const response = await app.inject({ method, url, headers: client.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.body}`);
  return response;
}
const order = (order_id: string, customer_id: string, time_of_purchase: string, purchase_total: number) =>
  minimalOrder(order_id, { customer_id, time_of_purchase, currency: 'USD', purchase_total, products: [{ id: 'p', name: 'P', quantity: 1, price: purchase_total }] });
const QUERY = { start_date: '2024-03-01', end_date: '2024-03-10', granularity: 'DAILY', level: 'campaign', metrics: 'rev,txns', model: 'linear', window: '7', mode: 'cash' };
const report = async (client: TestClient) => (await call(client, 'GET', `/v1/reports/performance?${new URLSearchParams(QUERY)}`)).json();

test('an order link written while its order is being written: the customer\'s earlier order takes in the visitor\'s touchpoints', { skip: service.db.kind !== 'postgres' }, async () => {
  const [kept, fresh] = [await service.createClient('kept'), await service.createClient('fresh')];
  for (const client of [kept, fresh]) {
    await call(client, 'POST', '/v1/touchpoints', { data: [{ touchpoint_id: 'tv', occurred_at: '2024-03-03T12:00:00Z', visitor_id: 'v', platform_name: 'meta', campaign_id: 'spring' }] });
    await call(client, 'POST', '/v2/orders', [order('y', 'c', '2024-03-05T12:00:00Z', 50)]);
  }
  await report(kept); // keeps 1-10 March: y unattributed on 5 March

  const x = JSON.stringify([order('x', 'c', '2024-03-08T12:00:00Z', 20)]);
  const link = { data: [{ visitor_id: 'v', order_id: 'x' }] };
  // kept: the order's transaction is open (its change noted) when the link commits, on
  // connections whose change slots differ (on one slot's row, the link would wait for the order).
  const tenant = { clientId: kept.client_id, environment: 'production' as const, dryRun: false };
  const [ordering, linking] = await holdOnDistinctSlots(service.db, 2);
  await createOrderRepository(ordering!.db).upsert(tenant, x, [], {});
  await createTouchpointRepository(linking!.db).link(tenant, JSON.stringify(link), new Date());
  await linking!.commit();
  await ordering!.commit();
  // fresh: the same writes, one after the other.
  await call(fresh, 'POST', '/v2/orders', JSON.parse(x));
  await call(fresh, 'POST', '/v1/identities', link);

  const afresh = await report(fresh);
  assert.deepEqual(await report(kept), afresh, 'kept totals equal totals computed afresh');
});
