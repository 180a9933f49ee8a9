import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { createClientDeletion } from '../src/clients/deletion.js';
import { ClientGoneError, isClientGone } from '../src/db/errors.js';
import type { Database } from '../src/db/index.js';
import { keepMissingPaths } from '../src/attribution/daily-totals.js';
import { createOrderRepository } from '../src/orders/repository.js';
import { deriveTouchpoint, type DerivedTouchpoint } from '../src/touchpoints/derive.js';
import { createTouchpointRepository } from '../src/touchpoints/repository.js';
import { holdOnDistinctSlots, waitingForALock } from './held-transactions.js';
import {
  ADMIN_TOKEN,
  assertErrorEnvelope,
  citusUrl,
  finishedExport,
  hourlySpend,
  listOrders,
  makeOrder,
  startExportingService,
  type TestApp,
  type TestClient,
} from './helpers.js';

/*
 * DELETE /admin/v1/clients/{client_id}: every row of the client, in both environments, and its
 * export files are gone; other clients are untouched.
 */

const service = await startExportingService();
after(() => service.close());
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function send(client: TestClient, url: string, payload: object, app: TestApp) {
  const response = await app.inject({ method: 'POST', url, headers: client.headers, payload });
  assert.ok(response.statusCode < 300, `${url}: ${response.body}`);
  return response;
}

/** A client with rows in every table, in both environments, and a finished export whose files are on disk. */
async function populated(name: string): Promise<{ client: TestClient; exportId: string }> {
  const client = await service.createClient(name);
  for (const app of [service.production, service.uat]) {
    await send(client, '/v2/orders', [makeOrder(`${name}-1`, { alternate_order_ids: [{ type: 'shopify', id: `${name}-gid` }] }), makeOrder(`${name}-2`)], app);
    await send(client, '/v1/spend_hourly', { data: [hourlySpend('spring'), hourlySpend('winter')] }, app);
    await send(client, '/v1/spend', { data: [{ ...hourlySpend('spring'), hour_start_iso: undefined, date: '2024-03-08' }] }, app);
    await send(client, '/v1/touchpoints', { data: [{ touchpoint_id: `${name}-t`, occurred_at: '2024-03-08T08:00:00Z', visitor_id: 'v' }] }, app);
    await send(client, '/v1/identities', { data: [{ visitor_id: 'v', order_id: `${name}-1` }] }, app);
    await send(client, '/v1/exchange-rates', { data: [{ date: '2024-03-08', base: 'EUR', quote: 'USD', rate: 1.0933 }] }, app);
  }
  const created = await send(client, '/v1/exports/data-export', { period_type: 'FIXED', period_options: { period_starting_at: '2024-03-08T00:00:00Z', period_ending_at: '2024-03-09T00:00:00Z' }, metrics: [{ id: 'spend' }] }, service.production);
  const exportId = created.json().id as string;
  assert.equal((await finishedExport(service.production, client, exportId)).status, 'SUCCESS');
  // A report keeps daily totals of attribution.
  const report = await service.production.inject({
    method: 'GET',
    url: '/v1/reports/performance?start_date=2024-03-08&end_date=2024-03-08&level=campaign&metrics=rev,visits&model=linear&window=30&mode=cash',
    headers: client.headers,
  });
  assert.equal(report.statusCode, 200, report.body);
  // Asking what a data-driven model learnt keeps it.
  const learnt = await service.production.inject({ method: 'GET', url: '/v1/attribution/models/markov?period_from=2024-03-08', headers: client.headers });
  assert.equal(learnt.statusCode, 200, learnt.body);
  // The keeper keeps the paths of the days it keeps.
  const [{ time_zone: timeZone }] = (await service.db.query<{ time_zone: string }>('SELECT time_zone FROM clients WHERE client_id = $1', [client.client_id])) as [{ time_zone: string }];
  const tenant = { clientId: client.client_id, environment: 'production' as const, dryRun: false };
  await service.db.transaction((tx) => keepMissingPaths(tx, { tenant, timeZone, period: { kind: 'days', from: '2024-03-08', to: '2024-03-09' } }));
  return { client, exportId };
}

/** Rows of the client in every table that has a client_id column: found from the catalogue, so a table added later is counted too. */
async function rowsOf(clientId: string): Promise<Record<string, number>> {
  const tables = await service.db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns WHERE column_name = 'client_id' AND table_schema = current_schema() ORDER BY table_name`,
  );
  assert.ok(tables.length >= 10, `tables: ${tables.map((table) => table.table_name)}`);
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table_name} WHERE client_id = $1`, [clientId]);
    counts[table_name] = row!.n;
  }
  return counts;
}

const exportFiles = (exportId: string) => fs.readdirSync(path.join(service.exportsDir, exportId));

test('deleting a client removes every row of it in both environments and its export files; other clients are untouched', async () => {
  const gone = await populated('gone');
  const kept = await populated('kept');
  // What a crashed attempt of the deleted client's export left behind.
  const leftover = path.join(service.exportsDir, '.attempts', `${gone.exportId}-00000000-0000-0000-0000-000000000000`);
  fs.mkdirSync(leftover, { recursive: true });
  assert.equal(exportFiles(gone.exportId).length, 1);
  const keptBefore = { rows: await rowsOf(kept.client.client_id), orders: (await listOrders(service.uat, kept.client, { start_date: '2024-03-01', end_date: '2024-03-31' })).body };
  const pathRows = (await rowsOf(gone.client.client_id)).attribution_paths!;
  assert.ok(pathRows > 0);

  const response = await service.production.inject({ method: 'DELETE', url: `/admin/v1/clients/${gone.client.client_id}`, headers: admin });
  assert.equal(response.statusCode, 200, response.body);
  // UAT's writes since the report noted a change in the slot of each connection they used, and
  // the key of its visitor v (its late touchpoint and its link, one row).
  const answer = response.json() as { client_id: string; deleted: Record<string, number> };
  const { attribution_changes: changes, ...deleted } = answer.deleted;
  assert.ok(changes !== undefined && changes >= 1 && changes <= 8, `attribution_changes: ${changes}`);
  assert.deepEqual(
    { ...answer, deleted },
    {
      client_id: gone.client.client_id,
      deleted: {
        api_keys: 1, exports: 1, order_aliases: 2, orders: 4, identities: 2, touchpoints: 2, spend_hourly: 4, spend_daily: 2, ad_accounts: 2,
        // The report's day: credits of the path's touchpoint and of the unattributed order; visits.
        attribution_credit_days: 2, attribution_visit_days: 1, attribution_days: 3, attribution_totals_kept: 1, attribution_paths: pathRows, attribution_change_keys: 1,
        attribution_learnt_models: 1,
        exchange_rates: 2,
        clients: 1,
      },
    },
  );

  assert.ok(Object.values(await rowsOf(gone.client.client_id)).every((n) => n === 0), JSON.stringify(await rowsOf(gone.client.client_id)));
  assert.equal(fs.existsSync(path.join(service.exportsDir, gone.exportId)), false);
  assert.equal(fs.existsSync(leftover), false);
  assertErrorEnvelope(await service.production.inject({ method: 'GET', url: '/v2/orders?start_date=2024-03-01&end_date=2024-03-31', headers: gone.client.headers }), 401);
  assertErrorEnvelope(await service.production.inject({ method: 'DELETE', url: `/admin/v1/clients/${gone.client.client_id}`, headers: admin }), 404);

  assert.deepEqual(await rowsOf(kept.client.client_id), keptBefore.rows);
  assert.equal((await listOrders(service.uat, kept.client, { start_date: '2024-03-01', end_date: '2024-03-31' })).body, keptBefore.orders);
  assert.equal(exportFiles(kept.exportId).length, 1);
});

test('rows go in batches of the given size, each its own statement, until none is left', async () => {
  const { client } = await populated('batched');
  const statements: string[] = [];
  const counting = { ...service.db, query: ((text: string, params?: readonly unknown[]) => (statements.push(text), service.db.query(text, params))) as typeof service.db.query };
  const deleted = await createClientDeletion(counting, { exportsDir: service.exportsDir, batchRows: 3 }).delete(client.client_id);
  assert.equal(deleted!.orders, 4);
  // 4 orders at 3 a batch: two batches; 2 touchpoints: one.
  assert.equal(statements.filter((text) => text.includes('DELETE FROM orders')).length, 2);
  assert.equal(statements.filter((text) => text.includes('DELETE FROM touchpoints')).length, 1);
  assert.ok(Object.values(await rowsOf(client.client_id)).every((n) => n === 0));
});

test('an unknown or malformed client id, and a missing admin token, are refused', async () => {
  assertErrorEnvelope(await service.production.inject({ method: 'DELETE', url: '/admin/v1/clients/00000000-0000-4000-8000-000000000000', headers: admin }), 404);
  assertErrorEnvelope(await service.production.inject({ method: 'DELETE', url: '/admin/v1/clients/not-a-uuid', headers: admin }), 400);
  const { client } = await populated('guarded');
  assertErrorEnvelope(await service.production.inject({ method: 'DELETE', url: `/admin/v1/clients/${client.client_id}` }), 401);
  assert.equal((await rowsOf(client.client_id)).orders, 4);
});

/*
 * Touchpoints have no foreign key to clients (migration 0025): their upsert locks the client row
 * once, and the deletion removes what was written before the row went. PostgreSQL only (PGlite
 * has one connection); not on Citus, whose workers' lock waits the coordinator does not see.
 */
const racing = service.db.kind !== 'postgres' || citusUrl !== undefined;
const touchpoint = (touchpoint_id: string) => deriveTouchpoint({ touchpoint_id, occurred_at: '2024-03-08T08:00:00Z', visitor_id: 'v' }, {}) as DerivedTouchpoint;
const tenantOf = (client: TestClient) => ({ clientId: client.client_id, environment: 'production' as const, dryRun: false });
const touchpointsOf = async (clientId: string) => (await rowsOf(clientId)).touchpoints;

/**
 * The tables whose rows have no foreign key to clients (migrations 0025, 0028): a write of each,
 * on a connection of the test's, of one row named `id`, and how many rows of the client it holds.
 */
const UNKEYED_WRITES = {
  touchpoints: {
    write: (db: Database, client: TestClient, id: string) =>
      createTouchpointRepository(db).upsert(tenantOf(client), [touchpoint(id)], new Date()),
    rowsOf: touchpointsOf,
  },
  orders: {
    write: (db: Database, client: TestClient, id: string) =>
      createOrderRepository(db).upsert(tenantOf(client), JSON.stringify([makeOrder(id)]), [id], [{ order_id: id, type: 'shopify', id: `gid-${id}` }]),
    rowsOf: async (clientId: string) => {
      const { orders, order_aliases } = await rowsOf(clientId);
      return orders! + order_aliases!;
    },
  },
};

for (const [table, { write, rowsOf: rowsOfTable }] of Object.entries(UNKEYED_WRITES)) {
  test(`${table} written while their client is deleted go with it: the deletion waits for the write, then removes its rows`, { skip: racing }, async () => {
    const { client } = await populated(`deleted-while-written-${table}`);
    const [writer] = await holdOnDistinctSlots(service.db, 1);
    const written = await write(writer!.db, client, 'meanwhile');
    assert.deepEqual(written, { inserted: 1, updated: 0 });

    const deletion = createClientDeletion(service.db, { exportsDir: service.exportsDir }).delete(client.client_id);
    await waitingForALock(service.db, writer!.pid);
    await writer!.commit();
    assert.equal((await deletion)!.clients, 1);
    assert.equal(await rowsOfTable(client.client_id), 0);
  });

  test(`${table} sent while their client is being deleted are not stored`, { skip: racing }, async () => {
    const { client } = await populated(`written-while-deleted-${table}`);
    const [deleting] = await holdOnDistinctSlots(service.db, 1);
    await deleting!.db.query(`DELETE FROM ${table} WHERE client_id = $1`, [client.client_id]);
    await deleting!.db.query('DELETE FROM clients WHERE client_id = $1', [client.client_id]);

    // Its refusal is expected at once: the write may fail before the commit's answer is read.
    const refused = assert.rejects(write(service.db, client, 'too-late'), ClientGoneError);
    await waitingForALock(service.db, deleting!.pid);
    await deleting!.commit();
    await refused;
    assert.equal(await rowsOfTable(client.client_id), 0);
  });
}

/*
 * A request authenticated just before its client was deleted, written just after: the answer its
 * next request gets (401), not a 500, and nothing stored. The client row is deleted in a
 * transaction held open while the request is authenticated (it still sees the row) and writes
 * (it waits for the row's lock), then committed.
 */
async function deletedInFlight<T>(name: string, request: (client: TestClient) => Promise<T>): Promise<{ client: TestClient; answer: T }> {
  const client = await service.createClient(name);
  const [deleting] = await holdOnDistinctSlots(service.db, 1);
  await deleting!.db.query('DELETE FROM clients WHERE client_id = $1', [client.client_id]);
  const answer = request(client);
  await waitingForALock(service.db, deleting!.pid);
  await deleting!.commit();
  return { client, answer: await answer };
}

const WRITES: [string, object][] = [
  ['/v2/orders', [makeOrder('in-flight')]],
  ['/v1/spend_hourly', { data: [hourlySpend('in-flight')] }],
  ['/v1/touchpoints', { data: [{ touchpoint_id: 'in-flight', occurred_at: '2024-03-08T08:00:00Z', visitor_id: 'v' }] }],
  ['/v1/identities', { data: [{ visitor_id: 'v', customer_id: 'c' }] }],
  ['/v1/exchange-rates', { data: [{ date: '2024-03-08', base: 'EUR', quote: 'USD', rate: 1.0933 }] }],
];
for (const [url, payload] of WRITES) {
  test(`POST ${url} of a client deleted while it is handled: 401 as its next request, nothing stored`, { skip: racing }, async () => {
    const { client, answer } = await deletedInFlight(`in-flight${url.replaceAll('/', '-')}`, (client) =>
      service.production.inject({ method: 'POST', url, headers: client.headers, payload }),
    );
    const envelope = assertErrorEnvelope(answer, 401);
    const next = assertErrorEnvelope(await service.production.inject({ method: 'POST', url, headers: client.headers, payload }), 401);
    assert.equal(envelope.message, next.message);
    assert.deepEqual(envelope.errors, next.errors);
    assert.ok(Object.values(await rowsOf(client.client_id)).every((n) => n === 0));
  });
}

test("the collector's beacon of a client deleted while it is written: 204 as an unknown client's, nothing stored", { skip: racing }, async () => {
  const at = new Date().toISOString();
  const events = [
    { event_id: 'in-flight', type: 'page', occurred_at: at, visitor_id: 'v', url: 'https://shop.example/' },
    { event_id: 'in-flight-identify', type: 'identify', occurred_at: at, visitor_id: 'v', customer_id: 'c' },
  ];
  const { client, answer } = await deletedInFlight('collected-in-flight', (client) =>
    service.production.inject({ method: 'POST', url: '/v1/collect', headers: { 'content-type': 'text/plain' }, payload: JSON.stringify({ client_id: client.client_id, events }) }),
  );
  assert.equal(answer.statusCode, 204, answer.body);
  assert.ok(Object.values(await rowsOf(client.client_id)).every((n) => n === 0));
});

test('a write of a client that does not exist is known as such: by the touchpoint and order upserts, and by a foreign key to clients', async () => {
  const gone = { clientId: '00000000-0000-4000-8000-000000000000', environment: 'production' as const, dryRun: false };
  await assert.rejects(createTouchpointRepository(service.db).upsert(gone, [touchpoint('nobody')], new Date()), ClientGoneError);
  await assert.rejects(createOrderRepository(service.db).upsert(gone, JSON.stringify([makeOrder('nobody')]), ['nobody'], []), ClientGoneError);
  const refused = await service.db
    .query(`INSERT INTO identities (client_id, environment, visitor_id, customer_id, linked_at) VALUES ($1, 'production', 'v', 'c', now())`, [gone.clientId])
    .then(() => undefined, (error: unknown) => error);
  assert.ok(isClientGone(refused), String(refused));
  // As Citus passes a worker's error on: its message alone, the shard's names numbered.
  const fromWorker = (table: string, key: string) => ({ code: '23503', message: `insert or update on table "${table}" violates foreign key constraint "${key}"` });
  assert.ok(isClientGone(fromWorker('spend_hourly_102008', 'spend_hourly_client_id_fkey_102008')));
  assert.equal(isClientGone(fromWorker('orders_102008', 'orders_environment_client_id_fkey_102008')), false);
  assert.equal(isClientGone(null), false);
});
